import type { IntervalSchedule } from '../temporal/interval-schedule.js';
import {
  DESKTOP_DIAGNOSTICS_INTERVAL_SECONDS,
  DESKTOP_DIAGNOSTICS_SCHEDULE_ID,
} from '../../workflows/desktop-diagnostics-definitions.js';

/** Desktop mode's hourly diagnostics Schedule, ensured at worker start (shared/temporal/interval-schedule.ts). */
export function desktopDiagnosticsSchedule(
  scheduleId = DESKTOP_DIAGNOSTICS_SCHEDULE_ID,
): IntervalSchedule<'desktopDiagnosticsWorkflow'> {
  return {
    scheduleId,
    workflow: 'desktopDiagnosticsWorkflow',
    args: [],
    everySeconds: DESKTOP_DIAGNOSTICS_INTERVAL_SECONDS,
    purpose: 'Desktop mode: the automatic diagnostics attempt (at most one an hour)',
  };
}
