/**
 * Workflows are started by their type (`workflowRef`), so `args` are checked against the workflow's
 * signature, and the API loads no workflow code at run time (only the `*-definitions.ts` modules
 * that declare Updates and queries).
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { workflowRef, type Workflows } from '../../shared/temporal/workflow-refs.js';
import type * as entryPoint from '../../workflows/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const runtimeImportRe = /^\s*(import|export)\s+(?!type\b)(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sources(full);
    return full.endsWith('.ts') ? [full] : [];
  });
}

/** Project modules reached from `entry` through imports that survive compilation (not `import type`). */
function runtimeGraph(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(runtimeImportRe)) {
      if (!m[2].startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), m[2].replace(/\.js$/, '.ts'));
      if (existsSync(target)) visit(target);
    }
  };
  visit(entry);
  return [...seen].map((f) => path.relative(root, f));
}

describe('starting workflows by type', () => {
  it('is the type name at run time', () => {
    expect(workflowRef('echoWorkflow')).toBe('echoWorkflow');
    expect(workflowRef('actionReviewProposalWorkflow')).toBe('actionReviewProposalWorkflow');
  });

  it('types each workflow as the entry point exports it (the same names, the same signatures)', () => {
    // Checked by the compiler (npm run typecheck): the table is built from the *-definitions.ts
    // modules, so a workflow whose signature or name changes without it fails here.
    expectTypeOf<Workflows>().toEqualTypeOf<typeof entryPoint>();
    expectTypeOf(workflowRef('missionWorkflow')).toEqualTypeOf<(typeof entryPoint)['missionWorkflow']>();
  });

  it('no caller outside tests names a workflow type by an unchecked string', () => {
    const starts =
      /(workflow\.(start|execute|signalWithStart)|WithStartWorkflowOperation)\(\s*['"`]|workflowType:\s*['"`]/;
    const offenders = ['api', 'activities', 'shared', 'worker', 'scripts', 'bench']
      .flatMap((dir) => sources(path.join(root, dir)))
      .filter((file) => starts.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(root, file));
    expect(offenders).toEqual([]);
  });

  it('the API and the worker process load no workflow code at run time beyond message definitions', () => {
    for (const entry of ['api/server.ts', 'worker/index.ts']) {
      const workflowModules = runtimeGraph(path.join(root, entry)).filter((f) => f.startsWith('workflows/'));
      expect(
        workflowModules.filter((f) => !f.endsWith('-definitions.ts')),
        entry,
      ).toEqual([]);
    }
  });
});
