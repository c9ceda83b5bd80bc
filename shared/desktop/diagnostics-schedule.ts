import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import type { Logger } from '../log.js';
import {
  ensureIntervalSchedule,
  ensureIntervalScheduleAtStart,
  type IntervalSchedule,
} from '../temporal/interval-schedule.js';
import {
  DESKTOP_DIAGNOSTICS_INTERVAL_SECONDS,
  DESKTOP_DIAGNOSTICS_SCHEDULE_ID,
} from '../../workflows/desktop-diagnostics-definitions.js';

function diagnosticsSchedule(scheduleId: string): IntervalSchedule<'desktopDiagnosticsWorkflow'> {
  return {
    scheduleId,
    workflow: 'desktopDiagnosticsWorkflow',
    args: [],
    everySeconds: DESKTOP_DIAGNOSTICS_INTERVAL_SECONDS,
    purpose: 'Desktop mode: the automatic diagnostics attempt (at most one an hour)',
  };
}

/** Creates the schedule, or brings an existing one in line. Idempotent. */
export function ensureDesktopDiagnosticsSchedule(
  client: Client,
  config: AppConfig,
  scheduleId = DESKTOP_DIAGNOSTICS_SCHEDULE_ID,
): Promise<'created' | 'updated'> {
  return ensureIntervalSchedule(client, config, diagnosticsSchedule(scheduleId));
}

/** For the worker's start (only in desktop mode); a failure is logged, not fatal. */
export function ensureDesktopDiagnosticsScheduleAtStart(config: AppConfig, log: Logger): Promise<void> {
  return ensureIntervalScheduleAtStart(config, log, diagnosticsSchedule(DESKTOP_DIAGNOSTICS_SCHEDULE_ID));
}
