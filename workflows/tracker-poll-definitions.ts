// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { TrackerPoller } from '../shared/tracker/policy.js';

/** The Schedules starting a poll (one per poller) at `enhancements.tracker_automation.poll_interval_seconds`. */
export const TRACKER_POLL_SCHEDULE_IDS: Record<TrackerPoller, string> = {
  issue_tracker: 'tracker-poll-issue-tracker',
  service_desk: 'tracker-poll-service-desk',
};

/**
 * The Schedule id of a poller for a task queue: the plain id on the default queue (`platform`); another
 * queue (a second deployment in the same namespace, each test stack) gets its own Schedule.
 */
export const trackerPollScheduleId = (poller: TrackerPoller, taskQueue: string) =>
  taskQueue === 'platform' ? TRACKER_POLL_SCHEDULE_IDS[poller] : `${TRACKER_POLL_SCHEDULE_IDS[poller]}@${taskQueue}`;

/** A manual poll (`POST /api/config/tracker-automation/poll-now`). */
export const trackerPollNowWorkflowId = (poller: TrackerPoller, requestId: string) =>
  `tracker-poll-now/${poller}/${requestId}`;

export interface TrackerPollInput {
  poller: TrackerPoller;
  trigger: 'schedule' | 'poll_now';
  /** poll-now's `lookback_minutes`: the window starts this long before now. */
  lookbackMinutes?: number;
}

export interface TrackerPollResult {
  poller: TrackerPoller;
  ok: boolean;
  /** Why a poll failed (`TICKETING_SETUP_REQUIRED`, `tracker_unreachable`, `tracker_refused`, ...). */
  error: { code: string; message: string } | null;
  window_start: string;
  started_at: string;
  /** Tickets seen in the window. */
  seen: number;
  /** Ledger events recorded by this poll, by kind. */
  events: Record<string, number>;
  dispatched: number;
}
