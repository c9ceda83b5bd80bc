/**
 * Shared set-up of the stub-activity workflow tests: the real workflow bundle on a worker of its own
 * task queue, activities replaced by plain functions that record their calls, and what the history
 * says about durable timers.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';
import { startTimeSkipping, uniqueTaskQueue } from '../helpers/temporal.js';

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

/** The test file's time-skipping environment: started before its tests, torn down after them. */
export function useTimeSkipping(): { readonly env: TestWorkflowEnvironment } {
  const holder = {} as { env: TestWorkflowEnvironment };
  beforeAll(async () => {
    holder.env = await startTimeSkipping();
  });
  afterAll(async () => holder.env?.teardown());
  return holder;
}

/**
 * Starts `workflowType` on a stub worker of its own and runs the worker until the workflow closes:
 * its handle, and its result or the error it failed with.
 */
export async function runStubbed(
  env: TestWorkflowEnvironment,
  activities: Record<string, (...args: never[]) => Promise<unknown>>,
  workflowType: string,
  options: { workflowId: string; args: unknown[] },
): Promise<{ handle: WorkflowHandle; result: unknown }> {
  const { worker, taskQueue } = await stubWorker(env, activities);
  const handle = await env.client.workflow.start(workflowType, { taskQueue, ...options });
  const result = await worker.runUntil(handle.result().catch((err: unknown) => err));
  return { handle, result };
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

/** What the workflow shows operators: its `PlatformTenant`, `PlatformResourceId` and `PlatformStatus`, read by describe(). */
export async function lifecycleAttributes(handle: WorkflowHandle) {
  const attributes = (await handle.describe()).typedSearchAttributes;
  return {
    tenant: attributes.get(SearchAttributes.tenant),
    resourceId: attributes.get(SearchAttributes.resourceId),
    status: attributes.get(SearchAttributes.status),
  };
}

/** A gate a stub activity waits on, opened by the test. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** The kind of each event in the workflow's history, in order (`activityTaskCompleted`, `timerStarted`, …). */
export async function eventKinds(handle: WorkflowHandle): Promise<string[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.map((event) => {
    const key = Object.keys(event).find(
      (k) => k.endsWith('EventAttributes') && (event as Record<string, unknown>)[k] != null,
    );
    return key?.slice(0, -'EventAttributes'.length) ?? 'unknown';
  });
}
