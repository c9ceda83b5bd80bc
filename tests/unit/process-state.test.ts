/**
 * Module state that outlives one app must be forgettable: the `stack` project runs many test files,
 * each with its own database, one after another in one process, and `tests/setup/fresh-process.ts`
 * calls `resetProcessState()` before each. A module-level `let`, or an empty Map/Set/array filled at
 * run time, in the code the API and the worker load, registers with `onProcessReset` under
 * `<file>#<binding>`, or is named below with the reason it cannot carry one app's state into another.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { processStateNames, resetProcessState } from '../../shared/process-state.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const FOLDERS = ['api', 'shared', 'activities', 'worker', 'etl-runner'];

const NOT_APP_STATE: Record<string, string> = {
  'shared/process-state.ts#resets': 'the registry itself: how to forget, not what',
  'api/console/layout.ts#assets': 'the files shipped with the code, the same for every app',
  'api/mcp/dispatch.ts#strict': 'a WeakMap keyed by a schema object: derived, the same for every app',
  'api/mcp/server.ts#descriptions': 'a WeakMap keyed by one app’s action catalog: gone with the app',
  'api/mcp/schema.ts#inputSchemas': 'a WeakMap keyed by one app’s action catalog: gone with the app',
  'shared/llm/active-provider.ts#resolvers': 'a WeakMap keyed by one app’s config: gone with the app',
  'shared/llm/iam-status.ts#readings': 'a WeakMap keyed by one app’s config: gone with the app',
  'shared/demo/hosted-ai.ts#windows': 'a WeakMap keyed by one app’s dependencies: gone with the app',
  'shared/document-index/local-embedding.ts#words':
    'a bounded cache of a pure function of the word (stop word, stem, hash): the same for every app',
  'shared/document-index/local-embedding.ts#stems':
    'stem ids naming features within one embedding call: any numbering gives the same vectors',
  'shared/document-index/vector-sets.ts#nonZeroAt':
    'a scratch array filled and read within one encodeVector call: nothing carries from one call to the next',
  'shared/document-index/headline.ts#EXCEPTIONAL_STARTS':
    'filled once at load from the stemmer’s fixed exceptions, never written after: the same for every app',
  'shared/document-index/scan-kernel.ts#kernel':
    'the compiled scan kernel, the same for every app; its memory is zero between scans (a scan zeroes what it wrote)',
};

const STATE = [
  /^(?:export )?let (\w+)/,
  /^(?:export )?const (\w+)(?::[^=]+)? = new (?:Map|Set|WeakMap|WeakSet)(?:<.*>)?\(\);/,
  /^(?:export )?const (\w+)(?::[^=]+)? = (?:\[\]|\{\});/,
];

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sources(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every module-level binding that holds state, as `<file>#<binding>`, with whether the file registers it. */
function moduleState(): { name: string; registered: boolean }[] {
  const found: { name: string; registered: boolean }[] = [];
  for (const file of FOLDERS.flatMap(sources)) {
    const text = readFileSync(path.join(root, file), 'utf8');
    for (const line of text.split('\n')) {
      const binding = STATE.map((re) => re.exec(line)?.[1]).find(Boolean);
      if (!binding) continue;
      const name = `${file}#${binding}`;
      found.push({ name, registered: text.includes(`onProcessReset('${name}'`) });
    }
  }
  return found;
}

describe('module state that outlives an app', () => {
  it('is registered with onProcessReset, or named with the reason it holds no app’s state', () => {
    const state = moduleState();
    expect(state.length).toBeGreaterThan(10);
    const unaccounted = state.filter((s) => !s.registered && !(s.name in NOT_APP_STATE)).map((s) => s.name);
    expect(unaccounted).toEqual([]);
    // The named exceptions still exist (a stale entry would hide a new binding of the same name).
    const names = new Set(state.map((s) => s.name));
    expect(Object.keys(NOT_APP_STATE).filter((n) => !names.has(n))).toEqual([]);
  });

  it('registers under the name the check reads, and every reset runs', async () => {
    const registered = moduleState()
      .filter((s) => s.registered)
      .map((s) => s.name);
    for (const name of registered) await import(/* @vite-ignore */ path.join(root, name.split('#')[0]!));
    expect(processStateNames().sort()).toEqual(registered.sort());
    expect(() => resetProcessState()).not.toThrow();
  });
});
