import { Client, Connection, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import { describeError, type Logger } from '../log.js';
import {
  ALL_TENANTS,
  LIFECYCLE_VISIBILITY,
  lifecycleSearchAttributes,
  type LifecycleStatus,
} from './lifecycle-visibility.js';
import type { WorkflowName, Workflows } from './workflow-refs.js';

/** The workflows a schedule may start: not started for a caller, and with a `running` status. */
export type ScheduledWorkflowName = {
  [K in WorkflowName]: (typeof LIFECYCLE_VISIBILITY)[K]['tenant'] extends 'caller'
    ? never
    : 'running' extends LifecycleStatus<K>
      ? K
      : never;
}[WorkflowName];

/** A Schedule that starts one workflow every N seconds, never two at once. */
export interface IntervalSchedule<N extends ScheduledWorkflowName = ScheduledWorkflowName> {
  scheduleId: string;
  workflow: N;
  /** The workflow's arguments. */
  args: Parameters<Workflows[N]>;
  everySeconds: number;
  /** Shown as the schedule's memo in the Temporal UI. */
  purpose: string;
}

export function intervalScheduleOptions<N extends ScheduledWorkflowName>(
  config: AppConfig,
  schedule: IntervalSchedule<N>,
) {
  return {
    scheduleId: schedule.scheduleId,
    spec: { intervals: [{ every: `${schedule.everySeconds} seconds` }] },
    action: {
      type: 'startWorkflow' as const,
      // The name as a string (what workflowRef stands for); `args` were checked against the workflow above.
      workflowType: schedule.workflow as string,
      workflowId: `${schedule.scheduleId}-run`,
      taskQueue: config.temporal.taskQueue,
      args: [...schedule.args] as unknown[],
      // Each run is found in the Temporal UI by the schedule id; a sweep over every tenant has tenant `*`.
      typedSearchAttributes: lifecycleSearchAttributes(schedule.workflow, {
        tenant: LIFECYCLE_VISIBILITY[schedule.workflow].tenant === 'all' ? ALL_TENANTS : config.auth.deploymentTenant,
        resourceId: schedule.scheduleId,
        // ScheduledWorkflowName admits only lifecycles with this status; the compiler cannot follow N through it.
        status: 'running' as LifecycleStatus<N>,
      }),
    },
    // A slow run is never doubled: the next tick is skipped while one runs.
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
    memo: { purpose: schedule.purpose },
  };
}

/** Creates the schedule, or brings an existing one in line (interval, workflow, task queue). Idempotent. */
export async function ensureIntervalSchedule<N extends ScheduledWorkflowName>(
  client: Client,
  config: AppConfig,
  schedule: IntervalSchedule<N>,
): Promise<'created' | 'updated'> {
  const options = intervalScheduleOptions(config, schedule);
  try {
    await client.schedule.create(options);
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(schedule.scheduleId).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action,
    policies: { ...previous.policies, overlap: options.policies.overlap },
  }));
  return 'updated';
}

/** For the worker's start: `use` gets a short-lived client; a failure is logged, not fatal (the next start retries). */
export async function withClientAtStart(
  config: AppConfig,
  log: Logger,
  failure: string,
  use: (client: Client) => Promise<void>,
): Promise<void> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: config.temporal.address });
    await use(new Client({ connection, namespace: config.temporal.namespace }));
  } catch (err) {
    log.warn(failure, describeError(err));
  } finally {
    await connection?.close();
  }
}

/** Ensures one interval Schedule at the worker's start (see withClientAtStart). */
export function ensureIntervalScheduleAtStart<N extends ScheduledWorkflowName>(
  config: AppConfig,
  log: Logger,
  schedule: IntervalSchedule<N>,
): Promise<void> {
  return withClientAtStart(config, log, `could not ensure the schedule ${schedule.scheduleId}`, async (client) => {
    const outcome = await ensureIntervalSchedule(client, config, schedule);
    log.info('schedule ensured', {
      schedule_id: schedule.scheduleId,
      outcome,
      every_seconds: schedule.everySeconds,
    });
  });
}
