import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { ISOLATED_FOLDERS, testProjects } from './tests/setup/projects.js';

const root = fileURLToPath(new URL('./', import.meta.url));
const files = testProjects(root);

/** Every project runs on the same two workers, with the same limits. */
const common = {
  pool: 'forks',
  maxWorkers: 2,
  testTimeout: 60_000,
  hookTimeout: 180_000,
  teardownTimeout: 60_000,
} as const;

/** Project order: the long isolated files, then the stack files (kept together so workers are reused), then unit. */
const PROJECT_ORDER = ['isolated', 'stack', 'unit'];
/** Within a project, these start first, longest known first (a clean clone has no duration cache). */
const LONG_POLES = ['tests/fuzz/', 'tests/chaos/', 'tests/code-agent/cloud-worker-crash', 'tests/gate/', 'tests/e2e/'];

/**
 * Long poles first: the fuzzer, chaos, the gate, `npm start` end to end, then the files that SIGKILL
 * workers, then by the duration vitest recorded (when there is a cache) or by size, as vitest does.
 */
class LongPolesFirst extends BaseSequencer {
  override async sort(specs: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(specs);
    const rel = (s: TestSpecification) => path.relative(root, s.moduleId).split(path.sep).join('/');
    const pole = (s: TestSpecification) => {
      const file = rel(s);
      const i = LONG_POLES.findIndex((prefix) => file.startsWith(prefix));
      if (i !== -1) return i;
      return files.kills.includes(file) ? LONG_POLES.length : LONG_POLES.length + 1;
    };
    const project = (s: TestSpecification) => PROJECT_ORDER.indexOf(s.project.name);
    const position = new Map(base.map((s, i) => [s, i]));
    return [...base].sort(
      (a, b) => project(a) - project(b) || pole(a) - pole(b) || position.get(a)! - position.get(b)!,
    );
  }
}

export default defineConfig({
  test: {
    ...common,
    globalSetup: ['tests/setup/global-setup.ts'],
    reporters: ['default', './tests/setup/summary-reporter.ts'],
    sequence: { sequencer: LongPolesFirst },
    projects: [
      { test: { ...common, name: 'isolated', include: ISOLATED_FOLDERS.map((f) => `${f}**/*.test.ts`) } },
      {
        test: {
          ...common,
          name: 'stack',
          include: files.stack,
          // One process per worker for all these files: the app's modules load once per worker.
          isolate: false,
          setupFiles: ['tests/setup/fresh-process.ts'],
        },
      },
      {
        test: {
          ...common,
          name: 'unit',
          include: ['tests/**/*.test.ts'],
          exclude: [...files.isolated, ...files.stack, 'node_modules/**'],
        },
      },
    ],
  },
});
