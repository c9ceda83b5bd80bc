// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Tracker automation rules as pure functions of an injected `now` (spec, Limits: tracker polling),
 * so tests check them without clocks: the search window of a poll, the `poll-now` skip rule, and the
 * mapping of provider statuses to work states.
 */

export const TRACKER_POLLERS = ['issue_tracker', 'service_desk'] as const;
export type TrackerPoller = (typeof TRACKER_POLLERS)[number];

/** The steady-state window starts this long before the last successful poll (spec, Limits). */
export const STEADY_STATE_OVERLAP_SECONDS = 600;
/** `poll-now` without `lookback_minutes` runs when elapsed ≥ interval − this (spec, Limits). */
export const POLL_NOW_SLACK_SECONDS = 2;

/**
 * Where a poll's search window starts: an explicit lookback (poll-now's `lookback_minutes`) wins;
 * the first poll (no successful one yet) looks back `poll_lookback_minutes`; afterwards the window
 * starts 600 s before the last successful poll, so nothing updated while a poll ran is missed.
 */
export function searchWindowStart(input: {
  now: Date;
  lastSuccessfulPollAt: Date | null;
  lookbackMinutes: number;
  overrideLookbackMinutes?: number | undefined;
}): Date {
  if (input.overrideLookbackMinutes !== undefined)
    return new Date(input.now.getTime() - input.overrideLookbackMinutes * 60_000);
  if (!input.lastSuccessfulPollAt) return new Date(input.now.getTime() - input.lookbackMinutes * 60_000);
  return new Date(input.lastSuccessfulPollAt.getTime() - STEADY_STATE_OVERLAP_SECONDS * 1000);
}

export type PollNowDecision = { run: true } | { run: false; next_poll_seconds: number };

/**
 * `poll-now` without `lookback_minutes`: allowed when no poll started yet or the time since the last
 * poll started is at least the interval minus 2 s; otherwise skipped, with the seconds until the
 * next scheduled poll (at least 1).
 */
export function pollNowDecision(input: {
  now: Date;
  lastPollStartedAt: Date | null;
  intervalSeconds: number;
}): PollNowDecision {
  if (!input.lastPollStartedAt) return { run: true };
  const elapsed = (input.now.getTime() - input.lastPollStartedAt.getTime()) / 1000;
  if (elapsed >= input.intervalSeconds - POLL_NOW_SLACK_SECONDS) return { run: true };
  return { run: false, next_poll_seconds: Math.max(1, Math.ceil(input.intervalSeconds - elapsed)) };
}

/** A request's work state in the ledger; `done` closes it. */
export type WorkState = 'new' | 'dispatched' | 'working' | 'needs_info' | 'done';
export type MappedState = 'done' | 'needs_info' | 'working';

export interface StatusMap {
  done: readonly string[];
  needs_info: readonly string[];
  working: readonly string[];
}

/** The work state a provider status maps to (case-insensitive), or null for an unmapped status. */
export function mapProviderStatus(status: string | null, map: StatusMap): MappedState | null {
  if (!status) return null;
  const s = status.trim().toLowerCase();
  for (const state of ['done', 'needs_info', 'working'] as const)
    if (map[state].some((m) => m.trim().toLowerCase() === s)) return state;
  return null;
}

/** JQL's date literal (`yyyy-MM-dd HH:mm`, minutes; the window is rounded down so it only widens), in UTC. */
export function jqlDate(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}`;
}
