import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { listUsableAgents } from '../agents/registry.js';
import type { Principal } from '../auth/principal.js';
import { permissionsFor } from '../auth/rbac.js';
import { ConflictError, LlmFailureError, NotFoundError } from '../errors.js';
import { activeProviders } from '../llm/active-provider.js';
import { PROPOSAL_STATUSES } from '../action-review/types.js';
import { MISSION_STATUSES, WAITING_STATES } from '../../workflows/mission-definitions.js';
import { threadWorkflowId } from '../../workflows/thread-definitions.js';
import { describeProjects, startMission, type StartMissionInput } from '../missions/service.js';
import type { ProjectRow } from '../missions/store.js';
import { openThread, postMessage } from '../threads/service.js';
import type { AppDeps } from '../app-deps.js';
import { sql } from '../db/sql.js';
import { DemoCodes } from './error-codes.js';

/**
 * The hosted demo's presenter vignettes (spec: "Demo and presenter routes"; issue 18): presenter
 * sessions with their RCA thread (`/api/demo/rca/*`), the agents-under-management and optimization
 * views computed from the tenant's records, and missions started in a session. Sessions belong to
 * the tenant: every presenter of it (and the internal token) sees and resets them.
 */
type Row = Record<string, unknown>;
const exec = (em: EntityManager, q: string, params: unknown[] = []) => sql<Row>(em, q, params);
const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());
const int = (v: unknown) => Number(v ?? 0);

export const newPresenterSessionId = () => `psess_${randomBytes(16).toString('hex')}`;

/** The scenario a fresh RCA session opens its thread with (a body's `scenario_prompt` replaces it). */
export const RCA_SCENARIO_PROMPT =
  'Root-cause analysis drill: yesterday the daily revenue dashboard dropped by 30% compared with the week before. ' +
  'Using the data sources and tools you can reach, lay out how you would find the root cause: the hypotheses ' +
  '(late or failed loads, schema or definition changes, an upstream outage, a real business change), the evidence ' +
  'you would check first for each, and what each finding would mean. Answer with a short ordered plan.';

/** Thresholds of the optimization vignette (query parameters may change them). */
export const IDLE_AGENT_DAYS = 7;
export const REVIEW_BACKLOG_HOURS = 24;
/** Evidence ids listed per recommendation (the count is always complete). */
export const EVIDENCE_LIMIT = 100;
/** Missions listed per answer of `GET /api/demo/presenter-missions`. */
export const PRESENTER_MISSIONS_LIMIT = 200;

export const THREAD_STATES = [
  'not_started',
  'running',
  'completed',
  'failed',
  'cancelled',
  'terminated',
  'continued_as_new',
  'timed_out',
  'unknown',
] as const;
export type ThreadState = (typeof THREAD_STATES)[number];

/**
 * Who acts: a presenting person as themselves; the internal token as the deployment tenant's
 * platform system (it may use every agent and start built-in and tenant blueprints).
 */
export function actingPrincipal(principal: Principal | null | undefined, deps: AppDeps): Principal {
  return (
    principal ?? {
      kind: 'system',
      id: 'system',
      tenant: deps.config.auth.deploymentTenant,
      displayName: 'Presenter (internal token)',
      roles: ['admin'],
      permissions: permissionsFor(['admin']),
      credential: 'service_token',
    }
  );
}
const actorOf = (p: Principal | null | undefined) => (p ? `${p.kind}:${p.id}` : 'internal-token');

function sessionView(r: Row) {
  return {
    presenter_session_id: r.id as string,
    status: r.status as 'active' | 'reset',
    demo_version_id: (r.demo_version_id as string | null) ?? null,
    agent_id: r.agent_id as string,
    thread_id: r.thread_id as string,
    created_by: r.created_by as string,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    reset_at: iso(r.reset_at),
  };
}

async function sessionRow(em: EntityManager, tenant: string, id: string): Promise<Row> {
  const [row] = await exec(em, `select * from presenter_sessions where tenant = ? and id = ?`, [tenant, id]);
  if (!row) throw new NotFoundError(`No presenter session ${id}.`, { presenter_session_id: id });
  return row;
}

/** Checks a session named by a vignette read (404 when unknown) and returns its view. */
export async function optionalSession(em: EntityManager, tenant: string, id: string | undefined) {
  return id ? sessionView(await sessionRow(em, tenant, id)) : null;
}

/** The agent of a ready demo version: its first bound agent the caller may use. */
async function versionAgent(em: EntityManager, principal: Principal, versionId: string): Promise<string> {
  const [version] = await exec(em, `select status, bindings from demo_versions where tenant = ? and id = ?`, [
    principal.tenant,
    versionId,
  ]);
  if (!version) throw new NotFoundError(`demo version ${versionId} not found`, { version_id: versionId });
  if (version.status !== 'ready')
    throw new ConflictError(`demo version ${versionId} is ${String(version.status)}; only a ready version presents`, {
      code: DemoCodes.DEMO_VERSION_NOT_READY,
      version_id: versionId,
      status: version.status,
    });
  const bound = ((version.bindings as { agents?: string[] }).agents ?? []) as string[];
  const usable = new Set((await listUsableAgents(em, principal)).map((a) => a.id));
  const agentId = bound.find((a) => usable.has(a));
  if (!agentId)
    throw new ConflictError(`demo version ${versionId} binds no agent you may use`, {
      code: DemoCodes.DEMO_VERSION_NO_AGENT,
      version_id: versionId,
    });
  return agentId;
}

/**
 * A fresh presenter session: a new thread with the version's agent (or the tenant's default agent),
 * recorded as `active`, then the scenario's first turn. A model failure leaves the session in place
 * (its status route says why) and is reported in `first_turn`.
 */
export async function freshSession(
  deps: AppDeps,
  em: EntityManager,
  caller: Principal | null | undefined,
  input: { demo_version_id?: string | undefined; scenario_prompt?: string | undefined },
) {
  const principal = actingPrincipal(caller, deps);
  const agentId = input.demo_version_id ? await versionAgent(em, principal, input.demo_version_id) : undefined;
  const id = newPresenterSessionId();
  const prompt = input.scenario_prompt ?? RCA_SCENARIO_PROMPT;
  const { thread, agent } = await openThread(deps, em, principal, {
    ...(agentId ? { agentId } : {}),
    origin: 'presenter_session',
    callerGoal: 'Present the root-cause analysis vignette',
    title: `RCA vignette (${id})`,
  });
  const [row] = await exec(
    em,
    `insert into presenter_sessions (id, tenant, status, demo_version_id, agent_id, thread_id, scenario_prompt, created_by, created_at, updated_at)
     values (?, ?, 'active', ?, ?, ?, ?, ?, now(), now()) returning *`,
    [id, principal.tenant, input.demo_version_id ?? null, agent.id, thread.id, prompt, actorOf(caller)],
  );
  let firstTurn: { ok: boolean; reply: string | null; llm_failure: Record<string, string> | null };
  try {
    const turn = await postMessage(deps, principal, thread, prompt);
    firstTurn = { ok: true, reply: turn.ok ? turn.reply : null, llm_failure: null };
  } catch (err) {
    if (err instanceof LlmFailureError) {
      firstTurn = { ok: false, reply: null, llm_failure: err.payload!.llm_failure as Record<string, string> };
    } else {
      // A reset while the first turn ran terminates its workflow: the turn is cut short, not a failure.
      const [now] = await exec(em, `select status from presenter_sessions where id = ?`, [id]);
      if (now?.status !== 'reset') throw err;
      firstTurn = { ok: false, reply: null, llm_failure: null };
    }
  }
  return { ...sessionView(row!), agent_name: agent.name, first_turn: firstTurn };
}

async function threadState(deps: AppDeps, threadId: string): Promise<ThreadState> {
  try {
    const d = await deps.temporal.workflow.getHandle(threadWorkflowId(threadId)).describe();
    const name = d.status.name.toLowerCase();
    if (name === 'canceled' || name === 'cancelled') return 'cancelled';
    return (THREAD_STATES as readonly string[]).includes(name) ? (name as ThreadState) : 'unknown';
  } catch (err) {
    if ((err as { name?: string }).name === 'WorkflowNotFoundError') return 'not_started';
    throw err;
  }
}

/** Readiness of a session, from its rows, its thread's workflow and the tenant's active model provider. */
export async function sessionStatus(deps: AppDeps, em: EntityManager, caller: Principal | null, id: string) {
  const principal = actingPrincipal(caller, deps);
  const row = await sessionRow(em, principal.tenant, id);
  const [agent] = await exec(em, `select id, name from agents where tenant = ? and id = ?`, [
    principal.tenant,
    row.agent_id,
  ]);
  const [msgs] = await exec(
    em,
    `select count(*)::int as n, max(created_at) as last_at,
            count(*) filter (where role = 'assistant')::int as replies
     from conversation_messages where thread_id = ?`,
    [row.thread_id],
  );
  const active = await activeProviders(deps.config).resolve(em, principal.tenant);
  const llmConfigured = active.source !== 'none' && active.admission === 'auto' && Boolean(active.chatModel);
  const state = await threadState(deps, row.thread_id as string);
  const missions = await exec(
    em,
    `select count(*)::int as n from presenter_session_missions where presenter_session_id = ?`,
    [id],
  );
  const blockers: string[] = [];
  if (row.status !== 'active') blockers.push('session_reset');
  if (!agent) blockers.push('agent_missing');
  if (!llmConfigured) blockers.push('llm_not_configured');
  return {
    session: sessionView(row),
    ready: blockers.length === 0,
    blockers,
    agent: { agent_id: row.agent_id as string, present: Boolean(agent), name: (agent?.name as string) ?? null },
    llm: { configured: llmConfigured, source: active.source, provider: active.label, model: active.chatModel ?? null },
    thread: {
      thread_id: row.thread_id as string,
      state,
      messages: int(msgs?.n),
      agent_replies: int(msgs?.replies),
      last_activity_at: iso(msgs?.last_at) ?? iso(row.created_at)!,
    },
    missions_started: int(missions[0]?.n),
  };
}

/** Closes the session's thread (its running workflow is terminated) and marks it `reset`; idempotent. */
export async function resetSession(deps: AppDeps, em: EntityManager, caller: Principal | null, id: string) {
  const principal = actingPrincipal(caller, deps);
  const row = await sessionRow(em, principal.tenant, id);
  // The row first: a first turn cut short by the terminate below then sees the reset. Of concurrent
  // resets exactly one changes it; a retry after a failed terminate closes the thread then.
  const [updated] =
    row.status === 'reset'
      ? []
      : await exec(
          em,
          `update presenter_sessions set status = 'reset', reset_at = now(), updated_at = now()
           where id = ? and status = 'active' returning *`,
          [id],
        );
  let threadClosed = false;
  if ((await threadState(deps, row.thread_id as string)) === 'running') {
    try {
      await deps.temporal.workflow
        .getHandle(threadWorkflowId(row.thread_id as string))
        .terminate(`presenter session ${id} reset by ${actorOf(caller)}`);
      threadClosed = true;
    } catch (err) {
      // Ended between the read and the terminate: already closed.
      if ((err as { name?: string }).name !== 'WorkflowNotFoundError') throw err;
    }
  }
  const final = updated ?? (await sessionRow(em, principal.tenant, id));
  return { ...sessionView(final), already_reset: !updated, thread_closed: threadClosed };
}

// ---------------------------------------------------------------------------------------------
// Agents under management

const zeroed = <K extends string>(keys: readonly K[], rows: Row[], key = 'k') => {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const r of rows) if ((keys as readonly string[]).includes(r[key] as string)) out[r[key] as K] = int(r.n);
  return out;
};
const SYNC_STATES = ['never_synced', 'running', 'complete', 'error'] as const;

/** The tenant's rows of a table counted per value of one column: rows `{k: value, n: count}`. */
const countsBy = (
  em: EntityManager,
  table: 'projects' | 'action_review_proposals',
  column: 'status' | 'waiting_state',
  tenant: string,
) => exec(em, `select ${column} as k, count(*)::int as n from ${table} where tenant = ? group by ${column}`, [tenant]);

/** The AUM vignette: what the platform manages for the tenant, counted from its records. */
export async function agentsUnderManagement(em: EntityManager, tenant: string) {
  const [agents] = await exec(
    em,
    `select count(*)::int as total,
            count(*) filter (where source = 'builtin')::int as builtin,
            count(*) filter (where source = 'api')::int as api,
            count(*) filter (where source = 'managed')::int as managed
     from agents where tenant = ?`,
    [tenant],
  );
  const [threads] = await exec(
    em,
    `select count(*)::int as total,
            count(*) filter (where exists (select 1 from conversation_messages m
              where m.thread_id = t.id and m.created_at > now() - interval '1 day'))::int as active
     from conversation_threads t where t.tenant = ?`,
    [tenant],
  );
  const [agentsActive] = await exec(
    em,
    `select count(distinct t.bot_id)::int as n from conversation_threads t
     join conversation_messages m on m.thread_id = t.id
     where t.tenant = ? and m.created_at > now() - interval '1 day'`,
    [tenant],
  );
  const missionStatus = await countsBy(em, 'projects', 'status', tenant);
  const missionWaiting = await countsBy(em, 'projects', 'waiting_state', tenant);
  const proposals = await countsBy(em, 'action_review_proposals', 'status', tenant);
  const sources = await exec(
    em,
    `select coalesce(j.status, 'never_synced') as k, count(*)::int as n
     from managed_sources s
     left join lateral (select status from managed_source_sync_jobs where source_id = s.id
                        order by started_at desc limit 1) j on true
     where s.tenant = ? group by 1`,
    [tenant],
  );
  const sum = (rows: Row[]) => rows.reduce((a, r) => a + int(r.n), 0);
  return {
    agents: {
      total: int(agents?.total),
      by_source: { builtin: int(agents?.builtin), api: int(agents?.api), managed: int(agents?.managed) },
      active_last_24h: int(agentsActive?.n),
    },
    threads: { total: int(threads?.total), active_last_24h: int(threads?.active) },
    missions: {
      total: sum(missionStatus),
      by_status: zeroed(MISSION_STATUSES, missionStatus),
      by_waiting_state: zeroed(WAITING_STATES, missionWaiting),
    },
    action_review: {
      total: sum(proposals),
      awaiting_review: int(proposals.find((r) => r.k === 'requested')?.n),
      by_status: zeroed(PROPOSAL_STATUSES, proposals),
    },
    managed_sources: { total: sum(sources), by_last_sync: zeroed(SYNC_STATES, sources) },
  };
}

// ---------------------------------------------------------------------------------------------
// Optimization

export const RECOMMENDATION_KINDS = [
  'idle_agent',
  'review_backlog',
  'failed_sync',
  'never_synced_source',
  'stuck_mission',
  'mission_needs_input',
] as const;
type RecommendationKind = (typeof RECOMMENDATION_KINDS)[number];

interface Recommendation {
  kind: RecommendationKind;
  severity: 'low' | 'medium' | 'high';
  title: string;
  detail: string;
  count: number;
  evidence_ids: string[];
}

/** The optimization vignette: recommendations derived from the tenant's records, each with its evidence ids. */
export async function optimization(
  em: EntityManager,
  tenant: string,
  thresholds: { idle_agent_days: number; review_backlog_hours: number },
) {
  const ids = async (q: string, params: unknown[]) => (await exec(em, q, params)).map((r) => r.id as string);
  const idle = await ids(
    `select a.id from agents a
     where a.tenant = ? and a.created_at < now() - make_interval(days => ?)
       and not exists (select 1 from conversation_threads t join conversation_messages m on m.thread_id = t.id
                       where t.bot_id = a.id and m.created_at > now() - make_interval(days => ?))
     order by a.id`,
    [tenant, thresholds.idle_agent_days, thresholds.idle_agent_days],
  );
  const backlog = await ids(
    `select proposal_id::text as id from action_review_proposals
     where tenant = ? and status = 'requested' and created_at < now() - make_interval(hours => ?)
     order by created_at, proposal_id`,
    [tenant, thresholds.review_backlog_hours],
  );
  const latestSync = `select s.id, j.status from managed_sources s
     left join lateral (select status from managed_source_sync_jobs where source_id = s.id
                        order by started_at desc limit 1) j on true
     where s.tenant = ?`;
  const failed = await ids(`select id from (${latestSync}) x where status = 'error' order by id`, [tenant]);
  const never = await ids(`select id from (${latestSync}) x where status is null order by id`, [tenant]);
  const stuck = await ids(
    `select id from projects where tenant = ? and status = 'running' and waiting_state = 'STUCK' order by started_at, id`,
    [tenant],
  );
  const needsInput = await ids(
    `select id from projects where tenant = ? and status = 'running' and waiting_state = 'IN_PROGRESS_NEEDING_INPUT'
     order by started_at, id`,
    [tenant],
  );
  const out: Recommendation[] = [];
  const add = (
    kind: RecommendationKind,
    severity: Recommendation['severity'],
    found: string[],
    title: string,
    detail: string,
  ) => {
    if (found.length)
      out.push({ kind, severity, title, detail, count: found.length, evidence_ids: found.slice(0, EVIDENCE_LIMIT) });
  };
  add(
    'failed_sync',
    'high',
    failed,
    'Fix failing managed-source syncs',
    'The latest sync of these managed sources ended in error: their agents and skills are out of date.',
  );
  add('stuck_mission', 'high', stuck, 'Unblock stuck missions', 'These running missions made no progress for a day.');
  add(
    'review_backlog',
    'medium',
    backlog,
    'Review waiting Action Review proposals',
    `These proposals have waited for a decision for more than ${thresholds.review_backlog_hours} hours.`,
  );
  add(
    'mission_needs_input',
    'medium',
    needsInput,
    'Answer mission questions',
    'These running missions wait for answers from people.',
  );
  add('never_synced_source', 'low', never, 'Sync new managed sources', 'These managed sources were never synced.');
  add(
    'idle_agent',
    'low',
    idle,
    'Retire or reassign idle agents',
    `These agents have had no thread activity for ${thresholds.idle_agent_days} days.`,
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// Presenter missions

/** Starts a mission for an active session (refused like `POST /api/projects`) and tags it with the session. */
export async function startPresenterMission(
  deps: AppDeps,
  em: EntityManager,
  caller: Principal | null,
  input: StartMissionInput & { presenter_session_id: string },
) {
  const principal = actingPrincipal(caller, deps);
  const session = await sessionRow(em, principal.tenant, input.presenter_session_id);
  if (session.status !== 'active')
    throw new ConflictError(`Presenter session ${input.presenter_session_id} was reset; open a fresh session.`, {
      code: DemoCodes.presenter_session_reset,
      presenter_session_id: input.presenter_session_id,
    });
  const { presenter_session_id: sessionId, ...start } = input;
  const mission = await startMission(deps, em, principal, start);
  await exec(
    em,
    `insert into presenter_session_missions (project_id, presenter_session_id, tenant, created_at) values (?, ?, ?, now())`,
    [mission.id, sessionId, principal.tenant],
  );
  return { ...mission, presenter_session_id: sessionId };
}

/** Missions started in presenter sessions of the tenant (or one session), newest first. */
export async function listPresenterMissions(
  deps: AppDeps,
  em: EntityManager,
  caller: Principal | null,
  sessionId: string | undefined,
) {
  const principal = actingPrincipal(caller, deps);
  if (sessionId) await sessionRow(em, principal.tenant, sessionId);
  const rows = await exec(
    em,
    `select p.*, t.presenter_session_id from presenter_session_missions t join projects p on p.id = t.project_id
     where t.tenant = ? ${sessionId ? 'and t.presenter_session_id = ?' : ''}
     order by t.created_at desc, p.id limit ${PRESENTER_MISSIONS_LIMIT}`,
    sessionId ? [principal.tenant, sessionId] : [principal.tenant],
  );
  const views = await describeProjects(em, rows as unknown as ProjectRow[]);
  return views.map((v, i) => ({ ...v, presenter_session_id: rows[i]!.presenter_session_id as string }));
}
