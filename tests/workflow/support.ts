/**
 * Shared set-up of the stub-activity workflow tests: the real workflow bundle on a worker of its own
 * task queue, activities replaced by plain functions that record their calls, and what the history
 * says about durable timers.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { uniqueTaskQueue } from '../helpers/temporal.js';

type Stub = (...args: any[]) => Promise<unknown>;

/** A worker running the prebuilt bundle with the given stub activities, on a fresh task queue. */
export async function stubWorker(
  env: TestWorkflowEnvironment,
  activities: Record<string, (...args: never[]) => Promise<unknown>>,
) {
  const taskQueue = uniqueTaskQueue();
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities,
  });
  return { worker, taskQueue };
}

/** Wraps stubs so each call's input is recorded under the activity's name. */
export function recorded<T extends Record<string, Stub>>(stubs: T) {
  const calls: Record<string, unknown[]> = {};
  const activities = Object.fromEntries(
    Object.entries(stubs).map(([name, fn]) => [
      name,
      (input: unknown, ...rest: unknown[]) => {
        (calls[name] ??= []).push(input);
        return fn(input, ...rest);
      },
    ]),
  ) as T;
  /** How often the named activity ran (attempts included). */
  const count = (name: string) => calls[name]?.length ?? 0;
  return { activities, calls, count };
}

/** The durations (seconds, rounded) of every timer the workflow started, in order. */
export async function timerSeconds(handle: WorkflowHandle): Promise<number[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.flatMap((e) => {
    const t = e.timerStartedEventAttributes?.startToFireTimeout;
    return t ? [Math.round(Number(t.seconds ?? 0) + (t.nanos ?? 0) / 1e9)] : [];
  });
}

/** How many timers fired (a timer a signal pre-empted started but never fired). */
export async function timersFired(handle: WorkflowHandle): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.filter((e) => e.timerFiredEventAttributes).length;
}

/** A gate a stub activity waits on, opened by the test. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
