import type { HandbackSweepInput } from '../../workflows/handback-definitions.js';
import type { IntervalSchedule } from '../temporal/interval-schedule.js';

/** The schedule that sweeps undelivered hand-backs (`action_review.sweep_interval_seconds`). */
export const HANDBACK_SWEEP_SCHEDULE_ID = 'action-review-handback-sweep';

/**
 * The sweep's Schedule, ensured at every worker start (with the effective interval: saved setting, env,
 * default) and by a configuration apply that changes `action_review.sweep_interval_seconds`.
 */
export function handbackSweepSchedule(
  everySeconds: number,
  scheduleId = HANDBACK_SWEEP_SCHEDULE_ID,
): IntervalSchedule<'actionReviewHandbackSweepWorkflow'> {
  // Every run sweeps all pending hand-backs (no limits of its own).
  const input: HandbackSweepInput = {};
  return {
    scheduleId,
    workflow: 'actionReviewHandbackSweepWorkflow',
    args: [input],
    everySeconds,
    purpose: 'Retries Action Review decision hand-backs that were not delivered',
  };
}
