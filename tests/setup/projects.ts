/**
 * Which vitest project each test file belongs to (read by `vitest.config.ts`), from what the files import:
 * - `isolated`: the fuzzer, the exit-status gate, `npm start` end to end and the chaos suite (folders
 *   below), each in a process of its own as before: they nest vitest, spawn the app or kill processes.
 * - `stack`: files that start a stack or a Temporal worker with the app's activities (import
 *   `tests/helpers/stack.ts` or `tests/helpers/temporal.ts`, directly or through a local helper such
 *   as `tests/<folder>/support.ts`). They share one process per worker, so the app's module
 *   graph is loaded once per worker; each file still gets its own database and task queue, and
 *   `tests/setup/fresh-process.ts` gives it the process state a new process would have.
 * - `unit`: the rest, isolated as before.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const ISOLATED_FOLDERS = ['tests/fuzz/', 'tests/chaos/', 'tests/gate/', 'tests/e2e/'];

/** What loads the app's module graph: a stack, or a Temporal worker with the real activities. */
const APP_HELPERS = ['tests/helpers/stack.ts', 'tests/helpers/temporal.ts'];
/** Files that SIGKILL worker processes they start: long, so they start first in their project. */
const KILL_HELPER = 'tests/helpers/worker-process.ts';

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.name.endsWith('.ts')) out.push(full);
  }
  return out;
}

/** Relative imports of one file, as paths from the root (`.js` specifiers name `.ts` sources). */
function localImports(root: string, file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    const target = path.posix.join(path.posix.dirname(file), m[1]!).replace(/\.js$/, '.ts');
    found.push(target);
  }
  return found;
}

/** Whether `file` reaches `helper` through imports of files under tests/. */
function reaches(root: string, file: string, helper: string, seen = new Set<string>()): boolean {
  if (file === helper) return true;
  if (seen.has(file) || !file.startsWith('tests/')) return false;
  seen.add(file);
  let imports: string[];
  try {
    imports = localImports(root, file);
  } catch {
    return false;
  }
  return imports.some((next) => reaches(root, next, helper, seen));
}

export interface TestProjects {
  isolated: string[];
  stack: string[];
  /** The `stack` files that kill worker processes (start them first). */
  kills: string[];
}

export function testProjects(root: string): TestProjects {
  const files = walk(path.join(root, 'tests'))
    .map((f) => path.relative(root, f).split(path.sep).join('/'))
    .filter((f) => f.endsWith('.test.ts'))
    .sort();
  const isolated = files.filter((f) => ISOLATED_FOLDERS.some((folder) => f.startsWith(folder)));
  const stack = files.filter((f) => !isolated.includes(f) && APP_HELPERS.some((helper) => reaches(root, f, helper)));
  const kills = stack.filter((f) => reaches(root, f, KILL_HELPER));
  return { isolated, stack, kills };
}
