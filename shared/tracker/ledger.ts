import type { EntityManager } from '@mikro-orm/postgresql';
import type { TrackerTicket } from './client.js';
import { mapProviderStatus, type StatusMap, type TrackerPoller, type WorkState } from './policy.js';
import { sql } from '../db/sql.js';

/**
 * The ledger of tracker requests (tables `tracker_requests`, `tracker_ledger_events`) and the
 * pollers' state (`tracker_poll_state`). One row per (tenant, source, issue key); events are unique
 * by (source, issue key, kind, provider stamp), so a repeated poll or a replayed webhook records
 * each event once. A ticket older than the row's stamp (a late replay) changes nothing.
 */

export type LedgerEventKind =
  'recorded' | 'metadata_changed' | 'provider_status_observed' | 'dispatched' | 'dispatch_refused';

export interface LedgerRules {
  statusMap: StatusMap;
  eligibleLabels: readonly string[];
  eligibleIssueTypes: readonly string[];
  /** `enhancements.tracker_automation.enabled` and `enhancements.code_agent.enabled`: eligible tickets start runs. */
  dispatchEnabled: boolean;
}

export type DispatchOutcome = { runId: string } | { refused: { code: string; message: string } };
/** Starts (idempotently, by the ticket's source and key) a code-agent run for a ticket. */
export type Dispatcher = (ticket: TrackerTicket, source: TrackerPoller) => Promise<DispatchOutcome>;

export interface ObserveOutcome {
  events: LedgerEventKind[];
  dispatched: boolean;
}

interface RequestRow {
  summary: string;
  provider_status: string | null;
  work_state: WorkState;
  provider_updated_at: string | null;
  dispatched_run_id: string | null;
}

const ci = (list: readonly string[]) => new Set(list.map((s) => s.trim().toLowerCase()));

/** Eligible for a code-agent run: one of the configured labels, or one of the configured issue types. */
export function isEligible(ticket: TrackerTicket, rules: LedgerRules): boolean {
  const labels = ci(rules.eligibleLabels);
  const types = ci(rules.eligibleIssueTypes);
  return (
    ticket.labels.some((l) => labels.has(l.trim().toLowerCase())) ||
    (ticket.issueType !== null && types.has(ticket.issueType.trim().toLowerCase()))
  );
}

/** Whether stamp `a` is older than `b` (instants when both parse, else text order). */
function older(a: string, b: string | null): boolean {
  if (b === null) return false;
  const x = Date.parse(a);
  const y = Date.parse(b);
  return Number.isNaN(x) || Number.isNaN(y) ? a < b : x < y;
}

async function recordEvent(
  tx: EntityManager,
  key: { tenant: string; source: string; issueKey: string },
  kind: LedgerEventKind,
  stamp: string,
  detail: Record<string, unknown>,
): Promise<boolean> {
  const rows = await sql<{ id: string }>(
    tx,
    `insert into tracker_ledger_events (tenant, source, issue_key, kind, provider_updated_at, detail, created_at)
     values (?, ?, ?, ?, ?, ?::jsonb, now())
     on conflict (tenant, source, issue_key, kind, provider_updated_at) do nothing returning id`,
    [key.tenant, key.source, key.issueKey, kind, stamp, JSON.stringify(detail)],
  );
  return rows.length > 0;
}

/**
 * Feeds one ticket into the ledger: a new request is recorded (its work state from the status map,
 * else `new`); an open request whose summary changed gets the new title and `metadata_changed` (the
 * bot is not dispatched again); a mapped provider status that differs from the work state replaces
 * it with `provider_status_observed`. An eligible open request without a run starts one when
 * dispatch is enabled (`dispatched`, or `dispatch_refused` with the launcher's code).
 */
export async function observeTicket(
  em: EntityManager,
  tenant: string,
  source: TrackerPoller,
  ticket: TrackerTicket,
  rules: LedgerRules,
  dispatch?: Dispatcher,
): Promise<ObserveOutcome> {
  const stamp = ticket.updated || 'unknown';
  const key = { tenant, source, issueKey: ticket.key };
  const mapped = mapProviderStatus(ticket.status, rules.statusMap);
  const events: LedgerEventKind[] = [];
  const wantDispatch = await em.transactional(async (tx) => {
    const inserted = await sql<{ issue_key: string }>(
      tx,
      `insert into tracker_requests (tenant, source, issue_key, summary, provider_status, work_state, provider_updated_at,
         dispatched_run_id, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, null, now(), now())
       on conflict (tenant, source, issue_key) do nothing returning issue_key`,
      [tenant, source, ticket.key, ticket.summary, ticket.status, mapped ?? 'new', stamp],
    );
    const [row] = await sql<RequestRow>(
      tx,
      `select summary, provider_status, work_state, provider_updated_at, dispatched_run_id
         from tracker_requests where tenant = ? and source = ? and issue_key = ? for update`,
      [tenant, source, ticket.key],
    );
    if (!row) return false;
    if (inserted.length) {
      if (await recordEvent(tx, key, 'recorded', stamp, { summary: ticket.summary, provider_status: ticket.status }))
        events.push('recorded');
    } else {
      if (older(stamp, row.provider_updated_at)) return false;
      let summary = row.summary;
      let workState = row.work_state;
      if (row.work_state !== 'done' && ticket.summary && ticket.summary !== row.summary) {
        summary = ticket.summary;
        if (await recordEvent(tx, key, 'metadata_changed', stamp, { from: row.summary, to: ticket.summary }))
          events.push('metadata_changed');
      }
      if (mapped && mapped !== row.work_state) {
        workState = mapped;
        const detail = { provider_status: ticket.status, from: row.work_state, to: mapped };
        if (await recordEvent(tx, key, 'provider_status_observed', stamp, detail))
          events.push('provider_status_observed');
      }
      await sql(
        tx,
        `update tracker_requests set summary = ?, provider_status = ?, work_state = ?, provider_updated_at = ?,
           updated_at = now() where tenant = ? and source = ? and issue_key = ?`,
        [summary, ticket.status, workState, stamp, tenant, source, ticket.key],
      );
      row.work_state = workState;
    }
    const open = (inserted.length ? (mapped ?? 'new') : row.work_state) !== 'done';
    return rules.dispatchEnabled && !!dispatch && open && !row.dispatched_run_id && isEligible(ticket, rules);
  });
  if (!wantDispatch || !dispatch) return { events, dispatched: false };
  const outcome = await dispatch(ticket, source);
  let dispatched = false;
  await em.transactional(async (tx) => {
    if ('refused' in outcome) {
      if (await recordEvent(tx, key, 'dispatch_refused', stamp, outcome.refused)) events.push('dispatch_refused');
      return;
    }
    const set = await sql<{ issue_key: string }>(
      tx,
      `update tracker_requests set dispatched_run_id = ?,
         work_state = case when work_state = 'new' then 'dispatched' else work_state end, updated_at = now()
       where tenant = ? and source = ? and issue_key = ? and dispatched_run_id is null returning issue_key`,
      [outcome.runId, tenant, source, ticket.key],
    );
    dispatched = set.length > 0;
    if (dispatched && (await recordEvent(tx, key, 'dispatched', stamp, { run_id: outcome.runId })))
      events.push('dispatched');
  });
  return { events, dispatched };
}

export interface PollState {
  poller: TrackerPoller;
  last_poll_started_at: string | null;
  last_successful_poll_at: string | null;
  poller_last_run_at: string | null;
  last_window_start: string | null;
  last_error: string | null;
  last_summary: unknown;
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

export async function readPollState(em: EntityManager, tenant: string, poller: TrackerPoller): Promise<PollState> {
  const [r] = await sql<Record<string, unknown>>(
    em,
    'select * from tracker_poll_state where tenant = ? and poller = ?',
    [tenant, poller],
  );
  return {
    poller,
    last_poll_started_at: iso(r?.last_poll_started_at),
    last_successful_poll_at: iso(r?.last_successful_poll_at),
    poller_last_run_at: iso(r?.poller_last_run_at),
    last_window_start: iso(r?.last_window_start),
    last_error: (r?.last_error as string | null | undefined) ?? null,
    last_summary: r?.last_summary ?? null,
  };
}

/** A poll starts: `last_poll_started_at` and the window it searches. */
export async function markPollStarted(
  em: EntityManager,
  tenant: string,
  poller: TrackerPoller,
  at: Date,
  windowStart: Date,
): Promise<void> {
  await sql(
    em,
    `insert into tracker_poll_state (tenant, poller, last_poll_started_at, last_window_start) values (?, ?, ?, ?)
     on conflict (tenant, poller) do update set last_poll_started_at = excluded.last_poll_started_at,
       last_window_start = excluded.last_window_start`,
    [tenant, poller, at, windowStart],
  );
}

/**
 * A poll ends: `poller_last_run_at` always; on success `last_successful_poll_at` becomes the poll's
 * start (what the window reached) and the error clears; on failure the error is kept.
 */
export async function markPollFinished(
  em: EntityManager,
  tenant: string,
  poller: TrackerPoller,
  input: { startedAt: Date; finishedAt: Date; error: string | null; summary: unknown },
): Promise<void> {
  await sql(
    em,
    `update tracker_poll_state set poller_last_run_at = ?, last_error = ?, last_summary = ?::jsonb,
       last_successful_poll_at = case when ? then ? else last_successful_poll_at end
     where tenant = ? and poller = ?`,
    [
      input.finishedAt,
      input.error,
      JSON.stringify(input.summary),
      input.error === null,
      input.startedAt,
      tenant,
      poller,
    ],
  );
}

export interface LedgerEventView {
  source: string;
  issue_key: string;
  kind: string;
  provider_updated_at: string;
  detail: Record<string, unknown>;
  created_at: string;
}

export async function recentLedgerEvents(em: EntityManager, tenant: string, limit = 50): Promise<LedgerEventView[]> {
  const rows = await sql<Record<string, unknown>>(
    em,
    `select source, issue_key, kind, provider_updated_at, detail, created_at from tracker_ledger_events
      where tenant = ? order by created_at desc, id desc limit ?`,
    [tenant, limit],
  );
  return rows.map((r) => ({
    source: r.source as string,
    issue_key: r.issue_key as string,
    kind: r.kind as string,
    provider_updated_at: r.provider_updated_at as string,
    detail: (r.detail ?? {}) as Record<string, unknown>,
    created_at: iso(r.created_at)!,
  }));
}
