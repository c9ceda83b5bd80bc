import type { IntervalSchedule } from '../temporal/interval-schedule.js';
import {
  AUTO_SYNC_INTERVAL_SECONDS,
  AUTO_SYNC_SCHEDULE_ID,
  type AutoSyncInput,
} from '../../workflows/managed-source-lifecycle-definitions.js';

/** The Schedule that checks auto-sync sources every 300 s (the spec's managed sync limit). */
export function autoSyncSchedule(
  scheduleId = AUTO_SYNC_SCHEDULE_ID,
): IntervalSchedule<'managedSourceAutoSyncWorkflow'> {
  const input: AutoSyncInput = {};
  return {
    scheduleId,
    workflow: 'managedSourceAutoSyncWorkflow',
    args: [input],
    everySeconds: AUTO_SYNC_INTERVAL_SECONDS,
    purpose: 'Syncs managed sources with auto_sync and records auto_sync_state',
  };
}
