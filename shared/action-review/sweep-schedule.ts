import { Client, Connection, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import { describeError, type Logger } from '../log.js';
import type { HandbackSweepInput } from '../../workflows/handback.js';
import { workflowRef } from '../temporal/workflow-refs.js';

/** The schedule that sweeps undelivered hand-backs (`action_review.sweep_interval_seconds`). */
export const HANDBACK_SWEEP_SCHEDULE_ID = 'action-review-handback-sweep';

/** Every run sweeps all pending hand-backs (no limits of its own). */
const sweepInput: HandbackSweepInput = {};

function scheduleOptions(config: AppConfig, scheduleId: string, everySeconds: number) {
  return {
    scheduleId,
    spec: { intervals: [{ every: `${everySeconds} seconds` }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: workflowRef('actionReviewHandbackSweepWorkflow'),
      workflowId: `${scheduleId}-run`,
      taskQueue: config.temporal.taskQueue,
      args: [sweepInput] as const,
    },
    // A slow sweep is never doubled: the next tick is skipped while one runs.
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
    memo: { purpose: 'Retries Action Review decision hand-backs that were not delivered' },
  };
}

/**
 * Creates the sweep schedule, or brings an existing one in line with the configuration (interval,
 * task queue). Idempotent: every worker start calls it, and so does a configuration apply that
 * changes `action_review.sweep_interval_seconds` (with the new value).
 */
export async function ensureHandbackSweepSchedule(
  client: Client,
  config: AppConfig,
  scheduleId = HANDBACK_SWEEP_SCHEDULE_ID,
  everySeconds = config.actionReview.sweepIntervalSeconds,
): Promise<'created' | 'updated'> {
  const options = scheduleOptions(config, scheduleId, everySeconds);
  try {
    await client.schedule.create(options);
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(scheduleId).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action,
    policies: { ...previous.policies, overlap: options.policies.overlap },
  }));
  return 'updated';
}

/**
 * For the worker's start, with the effective interval (saved setting, env, default): its own
 * short-lived client; a failure is logged, not fatal (the next start retries).
 */
export async function ensureHandbackSweepScheduleAtStart(
  config: AppConfig,
  log: Logger,
  everySeconds: number,
): Promise<void> {
  const connection = await Connection.connect({ address: config.temporal.address });
  try {
    const outcome = await ensureHandbackSweepSchedule(
      new Client({ connection, namespace: config.temporal.namespace }),
      config,
      HANDBACK_SWEEP_SCHEDULE_ID,
      everySeconds,
    );
    log.info('hand-back sweep schedule ensured', {
      schedule_id: HANDBACK_SWEEP_SCHEDULE_ID,
      outcome,
      every_seconds: everySeconds,
    });
  } catch (err) {
    log.warn('could not ensure the hand-back sweep schedule', describeError(err));
  } finally {
    await connection.close();
  }
}
