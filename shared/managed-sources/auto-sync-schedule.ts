import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import type { Logger } from '../log.js';
import {
  ensureIntervalSchedule,
  ensureIntervalScheduleAtStart,
  intervalScheduleOptions,
  type IntervalSchedule,
} from '../temporal/interval-schedule.js';
import {
  AUTO_SYNC_INTERVAL_SECONDS,
  AUTO_SYNC_SCHEDULE_ID,
  type AutoSyncInput,
} from '../../workflows/managed-source-lifecycle-definitions.js';

/** The Schedule that checks auto-sync sources every 300 s (the spec's managed sync limit). */
function autoSyncSchedule(scheduleId: string): IntervalSchedule<'managedSourceAutoSyncWorkflow'> {
  const input: AutoSyncInput = {};
  return {
    scheduleId,
    workflow: 'managedSourceAutoSyncWorkflow',
    args: [input],
    everySeconds: AUTO_SYNC_INTERVAL_SECONDS,
    purpose: 'Syncs managed sources with auto_sync and records auto_sync_state',
  };
}

export function autoSyncScheduleOptions(config: AppConfig, scheduleId = AUTO_SYNC_SCHEDULE_ID) {
  return intervalScheduleOptions(config, autoSyncSchedule(scheduleId));
}

/** Creates the schedule, or brings an existing one in line (interval, task queue). Idempotent. */
export function ensureAutoSyncSchedule(
  client: Client,
  config: AppConfig,
  scheduleId = AUTO_SYNC_SCHEDULE_ID,
): Promise<'created' | 'updated'> {
  return ensureIntervalSchedule(client, config, autoSyncSchedule(scheduleId));
}

/** For the worker's start; a failure is logged, not fatal (the next start retries). */
export function ensureAutoSyncScheduleAtStart(config: AppConfig, log: Logger): Promise<void> {
  return ensureIntervalScheduleAtStart(config, log, autoSyncSchedule(AUTO_SYNC_SCHEDULE_ID));
}
