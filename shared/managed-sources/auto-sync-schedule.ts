import { Client, Connection, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import { describeError, type Logger } from '../log.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  AUTO_SYNC_INTERVAL_SECONDS,
  AUTO_SYNC_SCHEDULE_ID,
  type AutoSyncInput,
} from '../../workflows/managed-source-lifecycle-definitions.js';

/** The Schedule that checks auto-sync sources every 300 s (the spec's managed sync limit). */
export function autoSyncScheduleOptions(config: AppConfig, scheduleId = AUTO_SYNC_SCHEDULE_ID) {
  const input: AutoSyncInput = {};
  return {
    scheduleId,
    spec: { intervals: [{ every: `${AUTO_SYNC_INTERVAL_SECONDS} seconds` }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: workflowRef('managedSourceAutoSyncWorkflow'),
      workflowId: `${scheduleId}-run`,
      taskQueue: config.temporal.taskQueue,
      args: [input] as const,
    },
    // A slow check is never doubled: the next tick is skipped while one runs.
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
    memo: { purpose: 'Syncs managed sources with auto_sync and records auto_sync_state' },
  };
}

/** Creates the schedule, or brings an existing one in line (interval, task queue). Idempotent. */
export async function ensureAutoSyncSchedule(
  client: Client,
  config: AppConfig,
  scheduleId = AUTO_SYNC_SCHEDULE_ID,
): Promise<'created' | 'updated'> {
  const options = autoSyncScheduleOptions(config, scheduleId);
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

/** For the worker's start: its own short-lived client; a failure is logged, not fatal (the next start retries). */
export async function ensureAutoSyncScheduleAtStart(config: AppConfig, log: Logger): Promise<void> {
  const connection = await Connection.connect({ address: config.temporal.address });
  try {
    const outcome = await ensureAutoSyncSchedule(
      new Client({ connection, namespace: config.temporal.namespace }),
      config,
    );
    log.info('managed-source auto-sync schedule ensured', { schedule_id: AUTO_SYNC_SCHEDULE_ID, outcome });
  } catch (err) {
    log.warn('could not ensure the managed-source auto-sync schedule', describeError(err));
  } finally {
    await connection.close();
  }
}
