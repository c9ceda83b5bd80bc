import { z } from 'zod';
import {
  actingPrincipal,
  agentsUnderManagement,
  EVIDENCE_LIMIT,
  freshSession,
  IDLE_AGENT_DAYS,
  listPresenterMissions,
  optimization,
  optionalSession,
  PRESENTER_MISSIONS_LIMIT,
  RCA_SCENARIO_PROMPT,
  RECOMMENDATION_KINDS,
  resetSession,
  REVIEW_BACKLOG_HOURS,
  sessionStatus,
  startPresenterMission,
  THREAD_STATES,
} from '../../shared/demo/vignettes.js';
import { defineRoute, routeArea, successEnvelope, type AnyRoute } from '../http/route.js';
import { PROPOSAL_STATUSES } from '../../shared/action-review/types.js';
import { MISSION_STATUSES, WAITING_STATES } from '../../workflows/mission-definitions.js';
import { ProjectView } from '../../shared/missions/views.js';
import { StartBody } from './projects.js';

/**
 * The hosted demo's presenter vignettes (spec: "Demo and presenter routes"): RCA presenter sessions,
 * agents under management, optimization recommendations and presenter missions. Access `presenter`
 * (the internal token, or a person with `present_demos` and the role `staff` or `admin`).
 */
const access = { kind: 'presenter' as const };
const { tags, err } = routeArea('demo');

const SessionId = z
  .string()
  .regex(/^psess_[0-9a-f]{32}$/)
  .describe('Presenter session id (`psess_` + 32 lowercase hex), from `POST /api/demo/rca/fresh-session`');

const Session = z
  .object({
    presenter_session_id: z.string(),
    status: z.enum(['active', 'reset']),
    demo_version_id: z.string().nullable(),
    agent_id: z.string(),
    thread_id: z.string().describe('The RCA agent thread (workflow `thread/<thread_id>`)'),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    reset_at: z.string().nullable(),
  })
  .meta({ id: 'PresenterSession' });

const FreshSession = Session.extend({
  agent_name: z.string(),
  first_turn: z
    .object({
      ok: z.boolean(),
      reply: z.string().nullable().describe("The agent's answer to the scenario prompt"),
      llm_failure: z
        .object({ kind: z.string(), message: z.string(), action: z.string(), error_id: z.string() })
        .nullable()
        .describe(
          'Set when the model call failed: the session exists, its status says why it is not ready. `ok` false without it: the session was reset while the turn ran',
        ),
    })
    .describe('The scenario prompt turn'),
});

const Status = z.object({
  session: Session,
  ready: z.boolean().describe('Active, agent present and a model provider configured'),
  blockers: z.array(z.enum(['session_reset', 'agent_missing', 'llm_not_configured'])),
  agent: z.object({ agent_id: z.string(), present: z.boolean(), name: z.string().nullable() }),
  llm: z.object({
    configured: z.boolean(),
    source: z.enum(['saved', 'env', 'none']),
    provider: z.string(),
    model: z.string().nullable(),
  }),
  thread: z.object({
    thread_id: z.string(),
    state: z.enum(THREAD_STATES).describe("The thread workflow's state (`not_started` before its first turn)"),
    messages: z.number().int(),
    agent_replies: z.number().int(),
    last_activity_at: z.string(),
  }),
  missions_started: z.number().int(),
});

const Reset = Session.extend({
  already_reset: z.boolean().describe('The session was reset before this call (nothing changed)'),
  thread_closed: z.boolean().describe('This call terminated the running thread workflow'),
});

const counts = <T extends readonly [string, ...string[]]>(keys: T) =>
  z.object(Object.fromEntries(keys.map((k) => [k, z.number().int()])) as { [K in T[number]]: z.ZodNumber });

const Aum = z.object({
  presenter_session_id: z.string().nullable(),
  generated_at: z.string(),
  agents: z.object({
    total: z.number().int(),
    by_source: counts(['builtin', 'api', 'managed']),
    active_last_24h: z.number().int().describe('Agents with a thread message in the last 24 hours'),
  }),
  threads: z.object({ total: z.number().int(), active_last_24h: z.number().int() }),
  missions: z.object({
    total: z.number().int(),
    by_status: counts(MISSION_STATUSES),
    by_waiting_state: counts(WAITING_STATES),
  }),
  action_review: z.object({
    total: z.number().int(),
    awaiting_review: z.number().int().describe('Proposals in `requested`'),
    by_status: counts(PROPOSAL_STATUSES),
  }),
  managed_sources: z.object({
    total: z.number().int(),
    by_last_sync: counts(['never_synced', 'running', 'complete', 'error']).describe("The latest sync job's status"),
  }),
});

const Optimization = z.object({
  presenter_session_id: z.string().nullable(),
  generated_at: z.string(),
  thresholds: z.object({ idle_agent_days: z.number().int(), review_backlog_hours: z.number().int() }),
  recommendations: z.array(
    z.object({
      kind: z.enum(RECOMMENDATION_KINDS),
      severity: z.enum(['low', 'medium', 'high']),
      title: z.string(),
      detail: z.string(),
      count: z.number().int(),
      evidence_ids: z.array(z.string()).describe(`The records behind it (at most ${EVIDENCE_LIMIT})`),
    }),
  ),
});

const PresenterMission = ProjectView.extend({ presenter_session_id: z.string() });

export const demoVignetteRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/demo/rca/fresh-session',
    operationId: 'openPresenterRcaSession',
    summary: 'Open a presenter session: a new RCA agent thread seeded with the scenario prompt',
    description: `The agent is the first agent bound to \`demo_version_id\` (a \`ready\` demo version) the caller may use, else the tenant's default agent. The thread's first turn sends \`scenario_prompt\` (default: ${JSON.stringify(RCA_SCENARIO_PROMPT)}). A model failure does not undo the session: \`first_turn.ok\` is false and \`GET /api/demo/rca/status\` says why. With the internal token the deployment tenant's platform system acts.`,
    tags,
    access,
    body: z
      .object({
        demo_version_id: z.uuid().optional(),
        scenario_prompt: z
          .string()
          .min(1)
          .max(8000)
          .regex(/\S/, 'not blank')
          .optional()
          .describe('Replaces the default RCA scenario prompt'),
      })
      .strict(),
    bodyKind: 'config',
    successStatus: 201,
    responses: {
      201: { description: 'Session opened (`active`)', schema: successEnvelope(FreshSession) },
      404: err('No such demo version, or the agent is not available to you'),
      409: err(
        'The demo version is not ready (`payload.code` `DEMO_VERSION_NOT_READY`) or binds no usable agent (`DEMO_VERSION_NO_AGENT`); or no default agent can be chosen (`payload.code`)',
      ),
    },
    handler: async ({ body, principal, deps, em }) => ({
      success: true,
      data: await freshSession(deps, em, principal, body),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/rca/status',
    operationId: 'getPresenterRcaStatus',
    summary: "A presenter session's readiness: agent, model provider, thread state, messages, last activity",
    tags,
    access,
    query: z.object({ presenter_session_id: SessionId }),
    responses: {
      200: { description: 'Status', schema: successEnvelope(Status) },
      404: err('No such presenter session in the tenant'),
    },
    handler: async ({ query, principal, deps, em }) => ({
      success: true,
      data: await sessionStatus(deps, em, principal, query.presenter_session_id),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/demo/rca/reset',
    operationId: 'resetPresenterRcaSession',
    summary: 'Reset a presenter session: terminate its running thread workflow and mark it `reset` (idempotent)',
    tags,
    access,
    body: z.object({ presenter_session_id: SessionId }).strict(),
    bodyKind: 'config',
    responses: {
      200: { description: 'Reset (again: `already_reset` true)', schema: successEnvelope(Reset) },
      404: err('No such presenter session in the tenant'),
    },
    handler: async ({ body, principal, deps, em }) => ({
      success: true,
      data: await resetSession(deps, em, principal, body.presenter_session_id),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/aum',
    operationId: 'getDemoAgentsUnderManagement',
    summary:
      "Agents under management: the tenant's agents, threads, missions, Action Review proposals and managed sources",
    description:
      'Counted from the records at the time of the call; `presenter_session_id`, when given, must name a session of the tenant and is echoed.',
    tags,
    access,
    query: z.object({ presenter_session_id: SessionId.optional() }),
    responses: {
      200: { description: 'Counts', schema: successEnvelope(Aum) },
      404: err('No such presenter session in the tenant'),
    },
    handler: async ({ query, principal, deps, em }) => {
      const tenant = actingPrincipal(principal, deps).tenant;
      const session = await optionalSession(em, tenant, query.presenter_session_id);
      return {
        success: true,
        data: {
          presenter_session_id: session?.presenter_session_id ?? null,
          generated_at: new Date().toISOString(),
          ...(await agentsUnderManagement(em, tenant)),
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/optimization',
    operationId: 'getDemoOptimization',
    summary: "Optimization recommendations computed from the tenant's records, each with its evidence ids",
    description:
      'Kinds: `failed_sync` (latest sync job of a managed source in error), `stuck_mission` (running, STUCK), `review_backlog` (proposals `requested` for more than `review_backlog_hours`), `mission_needs_input`, `never_synced_source`, `idle_agent` (older than `idle_agent_days` with no thread message within them). Only kinds with evidence are listed, most severe first.',
    tags,
    access,
    query: z.object({
      presenter_session_id: SessionId.optional(),
      idle_agent_days: z.coerce.number().int().min(1).max(365).default(IDLE_AGENT_DAYS),
      review_backlog_hours: z.coerce.number().int().min(1).max(720).default(REVIEW_BACKLOG_HOURS),
    }),
    responses: {
      200: { description: 'Recommendations', schema: successEnvelope(Optimization) },
      404: err('No such presenter session in the tenant'),
    },
    handler: async ({ query, principal, deps, em }) => {
      const tenant = actingPrincipal(principal, deps).tenant;
      const session = await optionalSession(em, tenant, query.presenter_session_id);
      const thresholds = { idle_agent_days: query.idle_agent_days, review_backlog_hours: query.review_backlog_hours };
      return {
        success: true,
        data: {
          presenter_session_id: session?.presenter_session_id ?? null,
          generated_at: new Date().toISOString(),
          thresholds,
          recommendations: await optimization(em, tenant, thresholds),
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/presenter-missions',
    operationId: 'listPresenterMissions',
    summary: `Missions started in presenter sessions of the tenant (or one session), newest first, at most ${PRESENTER_MISSIONS_LIMIT}`,
    tags,
    access,
    query: z.object({ presenter_session_id: SessionId.optional() }),
    responses: {
      200: { description: 'Missions', schema: successEnvelope(z.array(PresenterMission)) },
      404: err('No such presenter session in the tenant'),
    },
    handler: async ({ query, principal, deps, em }) => ({
      success: true,
      data: await listPresenterMissions(deps, em, principal, query.presenter_session_id),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/demo/presenter-missions',
    operationId: 'startPresenterMission',
    summary:
      'Start a mission from a blueprint in a presenter session (as `POST /api/projects`), tagged with the session',
    description:
      "Refused like `POST /api/projects` (404 unknown or not viewable blueprint, 409 `unknown_agents` or `blueprint_prompt_missing`), and 409 `presenter_session_reset` for a reset session. With the internal token the deployment tenant's platform system starts it.",
    tags,
    access,
    body: StartBody.extend({ presenter_session_id: SessionId }).strict(),
    bodyKind: 'config',
    successStatus: 201,
    responses: {
      201: { description: 'Mission started', schema: successEnvelope(PresenterMission) },
      404: err('No such presenter session, or no blueprint of that name you may view'),
      409: err('The session was reset, a named agent does not exist, or a prompt file is missing (`payload.code`)'),
    },
    handler: async ({ body, principal, deps, em }) => ({
      success: true,
      data: await startPresenterMission(deps, em, principal, body),
    }),
  }),
];
