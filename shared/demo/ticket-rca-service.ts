import type { EntityManager } from '@mikro-orm/postgresql';
import { isUnsupported, resolveLauncher } from '../code-agent/launcher.js';
import { CODE_AGENT_TERMINAL, type CodeAgentRunStatus } from '../code-agent/runs.js';
import { readSession, sessionView, sql, ticketRcaRunId } from './ticket-rca.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { trackerCredential } from '../tracker/automation.js';
import { TrackerReadError } from '../tracker/client.js';
import { addIssueLabel, projectIssueTypes } from '../tracker/issues.js';
import { codeAgentCancelSignal, codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import {
  DEMO_VERSION_BINDING_INVALID,
  DEMO_VERSION_PROFILE_UNAVAILABLE,
  type DemoBindings,
} from '../../workflows/demo-version-definitions.js';
import {
  BUILD_PROVIDER_BUSY,
  TICKET_RCA_ACTIVE,
  TICKET_RCA_RESET_LABEL,
  TICKETING_ISSUE_TYPE_UNAVAILABLE,
  TICKETING_SETUP_REQUIRED,
  ticketRcaWorkflowId,
  type TicketRcaFailureCode,
  type TicketRcaState,
} from '../../workflows/ticket-rca-definitions.js';
import type { AppDeps } from '../app-deps.js';
import type { Caller } from './versions.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { TrackerCodes } from '../tracker/error-codes.js';

/**
 * The ticket-RCA presenter vignette (issue 18): a support ticket filed in the tracker, then a
 * root-cause analysis of it by the code agent. `prepare` checks, in order, the demo version, the
 * tracker connection, the project's issue type, the code-agent launcher and that no other session of
 * the tenant holds the build provider; a failed check answers `{success: false, error: {code, message}}`
 * and writes nothing. Then it records the session `preparing` and starts workflow
 * `ticket-rca/<tenant>/<presenter_session_id>`. `reset` cancels that, cancels the run, labels the
 * ticket `demo-reset` and clears the session (idempotent).
 */
export type TicketRcaView = ReturnType<typeof sessionView>;
type Failure = { success: false; error: { code: TicketRcaFailureCode; message: string } };
const failure = (code: TicketRcaFailureCode, message: string): Failure => ({
  success: false,
  error: { code, message },
});

export interface PrepareInput {
  presenter_session_id: string;
  project_key: string;
  issue_type: string;
  summary: string;
  demo_version_id?: string | undefined;
}

/** The tables a demo version's bindings name (as the version validation checks them, activities/demo.ts). */
const BINDING_TABLES = {
  agents: { table: 'agents', id: 'id' },
  blueprints: { table: 'blueprints', id: 'blueprint_id' },
  connections: { table: 'crm_connections', id: 'id' },
} as const;

async function checkVersion(em: EntityManager, tenant: string, id: string): Promise<Failure | null> {
  const [v] = await sql(
    em,
    `select profile, bindings, status, error_code, error from demo_versions where tenant = ? and id = ?`,
    [tenant, id],
  );
  if (!v) return failure(DEMO_VERSION_BINDING_INVALID, `The session names demo version ${id}, which does not exist.`);
  if (v.profile !== 'ticket-rca')
    return failure(
      DEMO_VERSION_PROFILE_UNAVAILABLE,
      `Demo version ${id} has profile "${String(v.profile)}"; the ticket vignette needs profile "ticket-rca".`,
    );
  if (v.status === 'failed')
    return failure(
      v.error_code === DEMO_VERSION_PROFILE_UNAVAILABLE
        ? DEMO_VERSION_PROFILE_UNAVAILABLE
        : DEMO_VERSION_BINDING_INVALID,
      `Demo version ${id} failed validation: ${String(v.error ?? '')}`,
    );
  if (v.status !== 'ready')
    return failure(DEMO_VERSION_BINDING_INVALID, `Demo version ${id} is ${String(v.status)}, not ready yet.`);
  const bindings = v.bindings as DemoBindings;
  const missing: string[] = [];
  for (const kind of ['agents', 'blueprints', 'connections'] as const) {
    const t = BINDING_TABLES[kind];
    for (const target of bindings[kind] ?? []) {
      const rows = await sql(em, `select 1 from ${t.table} where tenant = ? and ${t.id} = ?`, [tenant, target]);
      if (!rows.length) missing.push(`${kind}:${target}`);
    }
  }
  if (missing.length)
    return failure(
      DEMO_VERSION_BINDING_INVALID,
      `Demo version ${id} binds what no longer exists: ${missing.join(', ')}.`,
    );
  return null;
}

const trackerDeps = (deps: AppDeps) => ({ orm: deps.orm, settings: deps.settings, config: deps.config });

export async function ticketRcaStatus(em: EntityManager, caller: Caller, presenterSessionId: string) {
  return sessionView(presenterSessionId, await readSession(em, caller.tenant, presenterSessionId));
}

export async function prepareTicketRca(
  deps: AppDeps,
  em: EntityManager,
  caller: Caller,
  input: PrepareInput,
): Promise<{ success: true; data: TicketRcaView } | Failure> {
  const psid = input.presenter_session_id;
  const existing = await readSession(em, caller.tenant, psid);
  // A prepare of a session already under way answers it (a presenter's double click starts nothing twice).
  if (existing && TICKET_RCA_ACTIVE.includes(existing.state as TicketRcaState))
    return { success: true, data: sessionView(psid, existing) };

  if (input.demo_version_id) {
    const refused = await checkVersion(em, caller.tenant, input.demo_version_id);
    if (refused) return refused;
  }
  const cred = await trackerCredential(em, trackerDeps(deps), caller.tenant);
  if ('code' in cred) return failure(TICKETING_SETUP_REQUIRED, cred.message);
  let types: string[];
  try {
    types = await projectIssueTypes(deps.config, cred, input.project_key);
  } catch (err) {
    if (!(err instanceof TrackerReadError)) throw err;
    return failure(
      TICKETING_SETUP_REQUIRED,
      `The tracker did not list the issue types of project ${input.project_key}: ${err.message}`,
    );
  }
  const issueType = types.find((t) => t.toLowerCase() === input.issue_type.toLowerCase());
  if (!issueType)
    return failure(
      TICKETING_ISSUE_TYPE_UNAVAILABLE,
      `Project ${input.project_key} offers no issue type "${input.issue_type}" (it offers: ${types.join(', ') || 'none'}).`,
    );
  const launcher = await resolveLauncher(deps.settings, em);
  if (isUnsupported(launcher)) return failure(launcher.code, launcher.message);
  const busy = async () => {
    const [other] = await sql(
      em,
      `select presenter_session_id from ticket_rca_sessions
        where tenant = ? and state in ('preparing', 'running') and presenter_session_id <> ?`,
      [caller.tenant, psid],
    );
    return other
      ? failure(
          BUILD_PROVIDER_BUSY,
          `Presenter session ${String(other.presenter_session_id)} is running the ticket vignette; reset it or wait for it to end.`,
        )
      : null;
  };
  const held = await busy();
  if (held) return held;

  let row;
  try {
    [row] = await sql(
      em,
      `insert into ticket_rca_sessions (tenant, presenter_session_id, state, attempt, project_key, issue_type,
         demo_version_id, summary, created_by, prepared_at, updated_at)
       values (?, ?, 'preparing', 1, ?, ?, ?, ?, ?, now(), now())
       on conflict (tenant, presenter_session_id) do update set state = 'preparing',
         attempt = ticket_rca_sessions.attempt + 1, project_key = excluded.project_key,
         issue_type = excluded.issue_type, demo_version_id = excluded.demo_version_id, summary = excluded.summary,
         created_by = excluded.created_by, ticket_key = null, run_id = null, run_status = null, error_code = null,
         error = null, prepared_at = now(), finished_at = null, updated_at = now()
       where ticket_rca_sessions.state not in ('preparing', 'running')
       returning *`,
      [caller.tenant, psid, input.project_key, issueType, input.demo_version_id ?? null, input.summary, caller.actor],
    );
  } catch (err) {
    // The partial unique index: another session took the provider between the check and the write.
    if ((err as { code?: string }).code === '23505')
      return (await busy()) ?? failure(BUILD_PROVIDER_BUSY, 'The build provider is busy.');
    throw err;
  }
  // A concurrent prepare of the same session won the row: answer it.
  if (!row) return { success: true, data: sessionView(psid, await readSession(em, caller.tenant, psid)) };
  try {
    await deps.temporal.workflow.start(workflowRef('ticketRcaWorkflow'), {
      workflowId: ticketRcaWorkflowId(caller.tenant, psid),
      taskQueue: deps.config.temporal.taskQueue,
      args: [{ tenant: caller.tenant, presenterSessionId: psid, attempt: row.attempt as number }],
      typedSearchAttributes: lifecycleSearchAttributes('ticketRcaWorkflow', {
        tenant: caller.tenant,
        resourceId: psid,
        status: 'preparing',
      }),
      // A closed lifecycle of an earlier attempt may still be finishing: its steps only write their own attempt.
      workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    });
  } catch (err) {
    await sql(
      em,
      `update ticket_rca_sessions set state = 'failed', error_code = 'TICKET_RCA_NOT_STARTED', error = ?, updated_at = now()
        where tenant = ? and presenter_session_id = ? and attempt = ?`,
      [`The vignette could not be started: ${(err as Error).message}`, caller.tenant, psid, row.attempt],
    );
    throw err;
  }
  return { success: true, data: sessionView(psid, row) };
}

export async function resetTicketRca(
  deps: AppDeps,
  em: EntityManager,
  caller: Caller,
  presenterSessionId: string,
): Promise<
  | {
      success: true;
      data: {
        session: TicketRcaView;
        ticket_key: string | null;
        ticket_labelled: boolean;
        run_id: string | null;
        run_cancel_requested: boolean;
      };
    }
  | Failure
> {
  const psid = presenterSessionId;
  let row = await readSession(em, caller.tenant, psid);
  const idle = { ticket_key: null, ticket_labelled: false, run_id: null, run_cancel_requested: false };
  if (!row || row.state === 'idle') return { success: true, data: { session: sessionView(psid, row), ...idle } };
  const active = TICKET_RCA_ACTIVE.includes(row.state as TicketRcaState);
  // Checked before anything changes: a ticket to label (or one a running lifecycle may file) needs the tracker.
  const cred = await trackerCredential(em, trackerDeps(deps), caller.tenant);
  if ((row.ticket_key || active) && 'code' in cred) return failure(TICKETING_SETUP_REQUIRED, cred.message);

  if (active) {
    const handle = deps.temporal.workflow.getHandle(ticketRcaWorkflowId(caller.tenant, psid));
    await handle.cancel().catch(() => undefined);
    // The lifecycle waits for its step in flight, so once it has closed the row names every ticket and run it made.
    await handle.result().catch(() => undefined);
    row = (await readSession(em, caller.tenant, psid))!;
  }
  const derivedRun = ticketRcaRunId(caller.tenant, psid, row.attempt as number);
  const [run] = await sql(em, `select run_id, status from code_agent_runs where tenant = ? and run_id = ?`, [
    caller.tenant,
    (row.run_id as string | null) ?? derivedRun,
  ]);
  let runCancelRequested = false;
  if (run && !CODE_AGENT_TERMINAL.includes(run.status as CodeAgentRunStatus)) {
    await deps.temporal.workflow
      .getHandle(codeAgentWorkflowId(run.run_id as string))
      .signal(codeAgentCancelSignal)
      .then(() => (runCancelRequested = true))
      .catch(() => undefined);
  }
  const ticketKey = (row.ticket_key as string | null) ?? null;
  let labelled = false;
  if (ticketKey) {
    try {
      if ('code' in cred) throw new TrackerReadError(TrackerCodes.tracker_refused, cred.message);
      await addIssueLabel(deps.config, cred, ticketKey, TICKET_RCA_RESET_LABEL);
      labelled = true;
    } catch (err) {
      if (!(err instanceof TrackerReadError)) throw err;
      // The run is stopped; the ticket keeps the session until a reset can label it.
      await sql(
        em,
        `update ticket_rca_sessions set state = 'failed', error_code = ?, error = ?, finished_at = coalesce(finished_at, now()),
           updated_at = now() where tenant = ? and presenter_session_id = ? and attempt = ?`,
        [
          TICKETING_SETUP_REQUIRED,
          `Reset could not label ${ticketKey}: ${err.message}`,
          caller.tenant,
          psid,
          row.attempt,
        ],
      );
      return failure(
        TICKETING_SETUP_REQUIRED,
        `The run was stopped but ${ticketKey} could not be labelled: ${err.message}`,
      );
    }
  }
  const [cleared] = await sql(
    em,
    `update ticket_rca_sessions set state = 'idle', project_key = null, issue_type = null, demo_version_id = null,
       summary = null, ticket_key = null, run_id = null, run_status = null, error_code = null, error = null,
       prepared_at = null, finished_at = null, updated_at = now()
      where tenant = ? and presenter_session_id = ? and attempt = ? returning *`,
    [caller.tenant, psid, row.attempt],
  );
  return {
    success: true,
    data: {
      session: sessionView(psid, cleared ?? (await readSession(em, caller.tenant, psid))),
      ticket_key: ticketKey,
      ticket_labelled: labelled,
      run_id: run ? (run.run_id as string) : null,
      run_cancel_requested: runCancelRequested,
    },
  };
}
