/**
 * Setup file of the `stack` project, run before each of its test files. Those files share one process
 * per worker (`isolate: false`), so each starts as a process of its own would: the app's module state
 * forgotten (`resetProcessState`), and the environment variables a file sets put back when it ends.
 */
import { afterAll } from 'vitest';
import { resetProcessState } from '../../shared/process-state.js';

resetProcessState();

const env = { ...process.env };
afterAll(() => {
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  Object.assign(process.env, env);
});
