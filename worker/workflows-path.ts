import { fileURLToPath } from 'node:url';

/**
 * The workflows' entry file, for `bundleWorkflowCode` and `Worker.create`. A module of its own so that
 * whoever only bundles (the test run's global setup) does not load the worker and the activities.
 */
export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
