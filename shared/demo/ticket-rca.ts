import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { codeAgentRunIdFor, startCodeAgentRun } from '../code-agent/start.js';
import { CODE_AGENT_TERMINAL, type CodeAgentRunStatus } from '../code-agent/runs.js';
import type { AppConfig } from '../config.js';
import type { Settings } from '../settings/store.js';
import { trackerCredential } from '../tracker/automation.js';
import { TrackerReadError } from '../tracker/client.js';
import { addIssueComment, createIssue } from '../tracker/issues.js';
import {
  TICKETING_SETUP_REQUIRED,
  type TicketRcaInput,
  type TicketRcaState,
  type TicketRcaStep,
} from '../../workflows/ticket-rca-definitions.js';
import { sql as sharedSql } from '../db/sql.js';
import { TrackerCodes } from '../tracker/error-codes.js';
import { DemoCodes } from './error-codes.js';

/**
 * The ticket-RCA vignette's session rows (`ticket_rca_sessions`, the projection of workflow
 * `ticket-rca/<tenant>/<presenter_session_id>`) and the steps its workflow runs: file the ticket, start
 * the code-agent run for it (the way tracker automation dispatches), follow the run, record the outcome.
 * Every write names the session's attempt, so a step of an attempt that a reset ended changes nothing.
 */
export type TicketRcaRow = Record<string, unknown>;

/** Queries name the transaction when inside one (see shared/blueprints/store.ts). */
export function sql<T extends object = TicketRcaRow>(
  em: EntityManager,
  q: string,
  params: unknown[] = [],
): Promise<T[]> {
  return sharedSql<T>(em, q, params);
}

export const TICKET_RCA_PRINCIPAL = 'system:ticket-rca';

/** The code-agent run id of one attempt of a session: derived, so a retried start finds its run. */
export const ticketRcaRunId = (tenant: string, presenterSessionId: string, attempt: number) =>
  codeAgentRunIdFor(`ticket-rca:${tenant}:${presenterSessionId}:${attempt}`);

export async function readSession(em: EntityManager, tenant: string, presenterSessionId: string) {
  const [row] = await sql(em, `select * from ticket_rca_sessions where tenant = ? and presenter_session_id = ?`, [
    tenant,
    presenterSessionId,
  ]);
  return row ?? null;
}

const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());

/** What `status` (and prepare, reset) answer for a session; an unknown session is `idle`. */
export function sessionView(presenterSessionId: string, row: TicketRcaRow | null) {
  return {
    presenter_session_id: presenterSessionId,
    state: ((row?.state as TicketRcaState | undefined) ?? 'idle') as TicketRcaState,
    attempt: (row?.attempt as number | undefined) ?? 0,
    project_key: (row?.project_key as string | null | undefined) ?? null,
    issue_type: (row?.issue_type as string | null | undefined) ?? null,
    demo_version_id: (row?.demo_version_id as string | null | undefined) ?? null,
    ticket_key: (row?.ticket_key as string | null | undefined) ?? null,
    run_id: (row?.run_id as string | null | undefined) ?? null,
    run_status: (row?.run_status as CodeAgentRunStatus | null | undefined) ?? null,
    error: row?.error_code ? { code: row.error_code as string, message: (row.error as string | null) ?? '' } : null,
    prepared_at: iso(row?.prepared_at),
    finished_at: iso(row?.finished_at),
    updated_at: iso(row?.updated_at),
  };
}

export interface TicketRcaDeps {
  orm: MikroORM;
  settings: Settings;
  config: AppConfig;
  temporal?: Client | undefined;
}

const fail = (code: string, message: string) => ({ ok: false as const, code, message });

/** Files the session's ticket once per attempt (a retry after the key was recorded answers it). */
export async function fileTicket(
  deps: TicketRcaDeps,
  input: TicketRcaInput,
): Promise<TicketRcaStep<{ ticketKey: string }>> {
  const em = deps.orm.em.fork();
  const row = await readSession(em, input.tenant, input.presenterSessionId);
  if (!row || row.attempt !== input.attempt || row.state !== 'preparing')
    return fail(DemoCodes.TICKET_RCA_SUPERSEDED, 'The session was reset or prepared again.');
  if (row.ticket_key) return { ok: true, ticketKey: row.ticket_key as string };
  const cred = await trackerCredential(em, deps, input.tenant);
  if ('code' in cred) return fail(cred.code, cred.message);
  let key: string;
  try {
    key = await createIssue(deps.config, cred, {
      projectKey: row.project_key as string,
      issueType: row.issue_type as string,
      summary: row.summary as string,
      description: `Filed by the ticket-RCA demo (presenter session ${input.presenterSessionId}). The code agent analyses the root cause.`,
      labels: ['ai-agent', 'demo-ticket-rca'],
    });
  } catch (err) {
    if (!(err instanceof TrackerReadError)) throw err;
    return fail(TICKETING_SETUP_REQUIRED, `Filing the ticket failed: ${err.message}`);
  }
  await sql(
    em,
    `update ticket_rca_sessions set ticket_key = ?, updated_at = now()
      where tenant = ? and presenter_session_id = ? and attempt = ?`,
    [key, input.tenant, input.presenterSessionId, input.attempt],
  );
  return { ok: true, ticketKey: key };
}

/** Starts the code-agent run for the ticket (`startCodeAgentRun`, run id derived from the attempt); the session is `running`. */
export async function startRun(
  deps: TicketRcaDeps,
  input: TicketRcaInput & { ticketKey: string },
): Promise<TicketRcaStep<{ runId: string }>> {
  if (!deps.temporal) throw new Error('the ticket-RCA activities need a Temporal client');
  const em = deps.orm.em.fork();
  const row = await readSession(em, input.tenant, input.presenterSessionId);
  if (!row || row.attempt !== input.attempt || row.state !== 'preparing')
    return fail(DemoCodes.TICKET_RCA_SUPERSEDED, 'The session was reset or prepared again.');
  const started = await startCodeAgentRun(
    { em, settings: deps.settings, temporal: deps.temporal, config: deps.config },
    {
      runId: ticketRcaRunId(input.tenant, input.presenterSessionId, input.attempt),
      tenant: input.tenant,
      requestedBy: TICKET_RCA_PRINCIPAL,
    },
    {
      prompt: `Root-cause analysis of ${input.ticketKey}: ${String(row.summary)}. Find the cause in the code and propose a fix.`,
      ticket_key: input.ticketKey,
    },
  );
  if ('unsupported' in started) return fail(started.unsupported.code, started.unsupported.message);
  await sql(
    em,
    `update ticket_rca_sessions set state = 'running', run_id = ?, run_status = ?, updated_at = now()
      where tenant = ? and presenter_session_id = ? and attempt = ? and state = 'preparing'`,
    [started.row.runId, started.row.status, input.tenant, input.presenterSessionId, input.attempt],
  );
  return { ok: true, runId: started.row.runId };
}

/** The run's status as its row has it, copied onto the session; `terminal` when it ended. */
export async function followRun(
  deps: TicketRcaDeps,
  input: TicketRcaInput & { runId: string },
): Promise<{ status: string; terminal: boolean }> {
  const em = deps.orm.em.fork();
  const [run] = await sql(em, `select status from code_agent_runs where tenant = ? and run_id = ?`, [
    input.tenant,
    input.runId,
  ]);
  const status = (run?.status as CodeAgentRunStatus | undefined) ?? 'failed';
  await sql(
    em,
    `update ticket_rca_sessions set run_status = ?, updated_at = now()
      where tenant = ? and presenter_session_id = ? and attempt = ? and state = 'running'`,
    [status, input.tenant, input.presenterSessionId, input.attempt],
  );
  return { status, terminal: !run || CODE_AGENT_TERMINAL.includes(status) };
}

/**
 * Records the outcome: `completed` when the run finished, else `failed` with the code; a finished
 * run's summary is posted on the ticket as a comment (best effort: the tracker's refusal is kept in `error`).
 */
export async function finishSession(
  deps: TicketRcaDeps,
  input: TicketRcaInput & { state: 'completed' | 'failed'; code?: string | undefined; message?: string | undefined },
): Promise<void> {
  const em = deps.orm.em.fork();
  const row = await readSession(em, input.tenant, input.presenterSessionId);
  if (!row || row.attempt !== input.attempt || !['preparing', 'running'].includes(row.state as string)) return;
  let code = input.code ?? null;
  let message = input.message ?? null;
  if (input.state === 'completed' && row.ticket_key && row.run_id) {
    const [run] = await sql(em, `select summary, pr_url from code_agent_runs where tenant = ? and run_id = ?`, [
      input.tenant,
      row.run_id,
    ]);
    const cred = await trackerCredential(em, deps, input.tenant);
    const text = [
      `Root-cause analysis by the code agent (run ${String(row.run_id)}):`,
      (run?.summary as string | null) ?? 'no summary',
      run?.pr_url ? `Proposed fix: ${String(run.pr_url)}` : '',
    ]
      .filter(Boolean)
      .join('\n\n');
    try {
      if ('code' in cred) throw new TrackerReadError(TrackerCodes.tracker_refused, cred.message);
      await addIssueComment(deps.config, cred, row.ticket_key as string, text);
    } catch (err) {
      if (!(err instanceof TrackerReadError)) throw err;
      code = DemoCodes.TICKET_COMMENT_FAILED;
      message = `The analysis finished but could not be posted on the ticket: ${err.message}`;
    }
  }
  await sql(
    em,
    `update ticket_rca_sessions set state = ?, error_code = ?, error = ?, finished_at = now(), updated_at = now()
      where tenant = ? and presenter_session_id = ? and attempt = ? and state in ('preparing', 'running')`,
    [input.state, code, message, input.tenant, input.presenterSessionId, input.attempt],
  );
}
