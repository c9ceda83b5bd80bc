import { inject } from 'vitest';
import type { Stack } from './stack.js';

/** What a spawned worker process needs to serve a stack: its database, Temporal namespace and task queue, the run's bundle. */
export function stackWorkerEnv(stack: Pick<Stack, 'db' | 'config'>): Record<string, string> {
  return {
    DATABASE_URL: stack.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  };
}

/** Asks `probe` every 250 ms until it answers something, at most `tries` times. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, tries = 480): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`gave up waiting for ${what}`);
}
