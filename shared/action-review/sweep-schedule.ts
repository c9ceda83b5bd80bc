import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import type { Logger } from '../log.js';
import type { HandbackSweepInput } from '../../workflows/handback.js';
import {
  ensureIntervalSchedule,
  ensureIntervalScheduleAtStart,
  type IntervalSchedule,
} from '../temporal/interval-schedule.js';

/** The schedule that sweeps undelivered hand-backs (`action_review.sweep_interval_seconds`). */
export const HANDBACK_SWEEP_SCHEDULE_ID = 'action-review-handback-sweep';

function sweepSchedule(
  scheduleId: string,
  everySeconds: number,
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

/**
 * Creates the sweep schedule, or brings an existing one in line with the configuration (interval,
 * task queue). Idempotent: every worker start calls it, and so does a configuration apply that
 * changes `action_review.sweep_interval_seconds` (with the new value).
 */
export function ensureHandbackSweepSchedule(
  client: Client,
  config: AppConfig,
  scheduleId = HANDBACK_SWEEP_SCHEDULE_ID,
  everySeconds = config.actionReview.sweepIntervalSeconds,
): Promise<'created' | 'updated'> {
  return ensureIntervalSchedule(client, config, sweepSchedule(scheduleId, everySeconds));
}

/** For the worker's start, with the effective interval (saved setting, env, default); a failure is logged, not fatal. */
export function ensureHandbackSweepScheduleAtStart(
  config: AppConfig,
  log: Logger,
  everySeconds: number,
): Promise<void> {
  return ensureIntervalScheduleAtStart(config, log, sweepSchedule(HANDBACK_SWEEP_SCHEDULE_ID, everySeconds));
}
