import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import type { Logger } from '../log.js';
import {
  ensureIntervalSchedule,
  ensureIntervalScheduleAtStart,
  type IntervalSchedule,
} from '../temporal/interval-schedule.js';
import {
  BLUEPRINT_HIDDEN_PURGE_INTERVAL_SECONDS,
  BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID,
} from '../../workflows/blueprint-hidden-purge-definitions.js';

function purgeSchedule(scheduleId: string): IntervalSchedule<'blueprintHiddenPurgeWorkflow'> {
  return {
    scheduleId,
    workflow: 'blueprintHiddenPurgeWorkflow',
    args: [],
    everySeconds: BLUEPRINT_HIDDEN_PURGE_INTERVAL_SECONDS,
    purpose: 'Blueprints: purge hidden (deleted) blueprints once none of their missions is running or paused',
  };
}

/** Creates the schedule, or brings an existing one in line. Idempotent. */
export function ensureBlueprintPurgeSchedule(
  client: Client,
  config: AppConfig,
  scheduleId = BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID,
): Promise<'created' | 'updated'> {
  return ensureIntervalSchedule(client, config, purgeSchedule(scheduleId));
}

/** For the worker's start; a failure is logged, not fatal. */
export function ensureBlueprintPurgeScheduleAtStart(config: AppConfig, log: Logger): Promise<void> {
  return ensureIntervalScheduleAtStart(config, log, purgeSchedule(BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID));
}
