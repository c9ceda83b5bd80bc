/**
 * Three projects on four workers (`TEST_WORKERS`) (the files of each: `tests/setup/projects.ts`): `isolated` (the fuzzer,
 * chaos, the gate, e2e: a process per file), `stack` (files that start a stack or a worker with the real
 * activities: one process per worker, `isolate: false`, so the app's modules load once per worker;
 * `tests/setup/fresh-process.ts` resets process state before each file) and `unit` (the rest, a
 * process per file). The sequencer
 * (`tests/setup/sequencer.ts`) starts the long poles first. The global setup runs once, in the root.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ISOLATED_FOLDERS, testProjects } from './tests/setup/projects.js';
import { longPolesSequencer } from './tests/setup/sequencer.js';

const root = fileURLToPath(new URL('./', import.meta.url));
const files = testProjects(root);

/**
 * Four workers on two cores: most of a stack file's time is spent waiting on Temporal, PostgreSQL, a
 * restarted worker or a fake, so two more workers fill the cores while others wait. Measured on a
 * fresh clone, 2 cores, quiet (vitest's Duration): 2 workers 536 s, 3 workers 450 s, 4 workers 408 s,
 * the same 1,324 tests passing. Every wait is on an event with a generous timeout, never a sleep.
 * `TEST_WORKERS=<n>` picks another count.
 */
const workers = Number(process.env.TEST_WORKERS) > 0 ? Number(process.env.TEST_WORKERS) : 4;

/** Every project runs on the same workers, with the same limits. */
const common = {
  pool: 'forks',
  maxWorkers: workers,
  testTimeout: 60_000,
  hookTimeout: 180_000,
  teardownTimeout: 60_000,
  // expect.poll waits on an event; its 1 s default is a timed assertion on a shared, loaded machine.
  expect: { poll: { timeout: 15_000 } },
} as const;

export default defineConfig({
  test: {
    ...common,
    globalSetup: ['tests/setup/global-setup.ts'],
    reporters: ['default', './tests/setup/summary-reporter.ts'],
    sequence: { sequencer: longPolesSequencer(root, files) },
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
