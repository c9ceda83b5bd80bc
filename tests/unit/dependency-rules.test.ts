/**
 * The folder direction `npm run lint` checks (`lint:deps`, .dependency-cruiser.mjs): a tree that breaks
 * a rule fails the same command, naming the rule and the offending edge; type-only imports count.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const depcruise = path.join(root, 'node_modules/.bin/depcruise');
const tree = mkdtempSync(path.join(os.tmpdir(), 'dep-rules-'));
const LAYERS = ['shared', 'activities', 'api', 'worker', 'workflows', 'tests'];

/** Writes `files` (path → source) under a fresh folder shaped like the project's. */
function fixture(name: string, files: Record<string, string>): string {
  const dir = path.join(tree, name);
  const tsconfig = { compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } };
  for (const layer of LAYERS) mkdirSync(path.join(dir, layer), { recursive: true });
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  for (const [file, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), source);
  }
  return dir;
}

/** Runs the project's `lint:deps` command line in `dir`: its exit code and report. */
async function lintDeps(dir: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await promisify(execFile)(
      depcruise,
      [...LAYERS, '--config', path.join(root, '.dependency-cruiser.mjs'), '--output-type', 'err'],
      { cwd: dir },
    );
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout };
  }
}

afterAll(() => rmSync(tree, { recursive: true, force: true }));

describe('npm run lint checks the folder direction', () => {
  it('passes a tree that keeps every rule', async () => {
    const dir = fixture('clean', {
      'shared/leaf.ts': 'export const one = 1;\n',
      'activities/echo.ts': "import { one } from '../shared/leaf.js';\nexport const two = one + 1;\n",
      'api/route.ts': "import { two } from '../activities/echo.js';\nexport const three = two + 1;\n",
    });
    const { code, out } = await lintDeps(dir);
    expect(out).toContain('no dependency violations found');
    expect(code).toBe(0);
  });

  it('fails a type-only cycle, naming its edges', async () => {
    const dir = fixture('cycle', {
      'shared/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'shared/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    });
    const { code, out } = await lintDeps(dir);
    expect(code).not.toBe(0);
    expect(out).toMatch(/error no-circular: shared\/a\.ts → \s*shared\/b\.ts →\s*shared\/a\.ts/);
  });

  it('fails a cycle among tests, while tests may import any layer', async () => {
    const dir = fixture('tests', {
      'api/route.ts': 'export const route = 1;\n',
      'activities/echo.ts': 'export const echo = 2;\n',
      'tests/helpers/a.ts':
        "import { route } from '../../api/route.js';\nimport { echo } from '../../activities/echo.js';\nimport type { B } from './b.js';\nexport type A = { b?: B; n: typeof route | typeof echo };\n",
      'tests/helpers/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    });
    const { code, out } = await lintDeps(dir);
    expect(code).not.toBe(0);
    expect(out).toMatch(
      /error no-circular: tests\/helpers\/a\.ts → \s*tests\/helpers\/b\.ts →\s*tests\/helpers\/a\.ts/,
    );
    expect(out).not.toContain('tests/helpers/a.ts → api/route.ts');
    expect(out).not.toContain('tests/helpers/a.ts → activities/echo.ts');
    expect(out).toContain('1 dependency violations');
  });

  it('fails shared/ importing activities/ and activities/ importing api/, naming the edge', async () => {
    const dir = fixture('direction', {
      'shared/util.ts': "import type { Deps } from '../activities/deps.js';\nexport type U = Deps;\n",
      'activities/deps.ts': "import { route } from '../api/route.js';\nexport type Deps = typeof route;\n",
      'api/route.ts': 'export const route = 1;\n',
    });
    const { code, out } = await lintDeps(dir);
    expect(code).not.toBe(0);
    expect(out).toContain('error shared-stays-below: shared/util.ts → activities/deps.ts');
    expect(out).toContain('error activities-not-to-api: activities/deps.ts → api/route.ts');
    expect(out).toContain('error api-only-from-entry-points: activities/deps.ts → api/route.ts');
  });

  it('fails workflow code that loads an activity, but not one that only types it', async () => {
    const dir = fixture('workflows', {
      'activities/echo.ts': 'export async function echo(s: string) {\n  return s;\n}\n',
      'workflows/typed.ts':
        "import type * as activities from '../activities/echo.js';\nexport type A = typeof activities;\n",
      'workflows/loads.ts': "import { echo } from '../activities/echo.js';\nexport const run = echo;\n",
    });
    const { code, out } = await lintDeps(dir);
    expect(code).not.toBe(0);
    expect(out).toContain('error workflows-not-to-io-layers: workflows/loads.ts → activities/echo.ts');
    expect(out).not.toContain('workflows/typed.ts →');
  });
});
