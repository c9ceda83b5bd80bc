import { inject } from 'vitest';
import type { AppConfig } from '../../shared/config.js';
import { spawnWorkerProcess, type WorkerProcess } from './worker-process.js';

/**
 * A worker process for a test stack whose API runs without a worker (`startStack({ worker: false })`):
 * the stack's database, namespace and task queue, the test run's Temporal and workflow bundle, and
 * `env` on top; `standby`: a spare that polls once activated (`spawnWorkerProcess`). `started` collects
 * it (for the test's teardown).
 */
export function spawnStackWorker(
  stack: { db: { url: string }; config: Pick<AppConfig, 'temporal'> },
  started: WorkerProcess[],
  env: Record<string, string> = {},
  options: { standby?: boolean } = {},
): WorkerProcess {
  const w = spawnWorkerProcess(
    {
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      ...env,
    },
    undefined,
    options,
  );
  started.push(w);
  return w;
}
