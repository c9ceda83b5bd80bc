/**
 * Long poles first. On two workers a long file that starts last runs alone while the other worker idles,
 * and a clean clone (CI) has no duration cache, where vitest would start the largest files first. So:
 * the `isolated` project first (the fuzzer, chaos, the gate, `npm start` end to end), then the `stack`
 * files, starting with those that SIGKILL workers, then `unit`; within that, vitest's own order (the
 * recorded durations when there is a cache, else file size). Each project's files stay together, so a
 * `stack` worker that finishes a file takes the next one in the same process.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import type { TestProjects } from './projects.js';

export const PROJECT_ORDER = ['isolated', 'stack', 'unit'];
/** Longest first, as measured (fuzzer about 145 s, chaos 77 s (its code-agent file 107 s loaded), gate 43 s, e2e 37 s). */
export const LONG_POLES = ['tests/fuzz/', 'tests/chaos/', 'tests/gate/', 'tests/e2e/'];

type Spec = Pick<TestSpecification, 'moduleId'> & { project: { name: string } };

/** `specs` (in vitest's order) in the order to start them. */
export function longPolesFirst<S extends Spec>(specs: S[], root: string, files: Pick<TestProjects, 'kills'>): S[] {
  const rel = (s: S) => path.relative(root, s.moduleId).split(path.sep).join('/');
  const pole = (s: S) => {
    const file = rel(s);
    const i = LONG_POLES.findIndex((prefix) => file.startsWith(prefix));
    if (i !== -1) return i;
    return files.kills.includes(file) ? LONG_POLES.length : LONG_POLES.length + 1;
  };
  const project = (s: S) => PROJECT_ORDER.indexOf(s.project.name);
  const position = new Map(specs.map((s, i) => [s, i]));
  return [...specs].sort((a, b) => project(a) - project(b) || pole(a) - pole(b) || position.get(a)! - position.get(b)!);
}

export function longPolesSequencer(root: string, files: TestProjects) {
  return class LongPolesFirst extends BaseSequencer {
    override async sort(specs: TestSpecification[]): Promise<TestSpecification[]> {
      return longPolesFirst(await super.sort(specs), root, files);
    }
  };
}
