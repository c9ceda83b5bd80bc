import type { IntervalSchedule } from '../temporal/interval-schedule.js';
import {
  BLUEPRINT_HIDDEN_PURGE_INTERVAL_SECONDS,
  BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID,
} from '../../workflows/blueprint-hidden-purge-definitions.js';

/** The hourly purge of hidden blueprints, ensured at worker start (shared/temporal/interval-schedule.ts). */
export function blueprintPurgeSchedule(
  scheduleId = BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID,
): IntervalSchedule<'blueprintHiddenPurgeWorkflow'> {
  return {
    scheduleId,
    workflow: 'blueprintHiddenPurgeWorkflow',
    args: [],
    everySeconds: BLUEPRINT_HIDDEN_PURGE_INTERVAL_SECONDS,
    purpose: 'Blueprints: purge hidden (deleted) blueprints once none of their missions is running or paused',
  };
}
