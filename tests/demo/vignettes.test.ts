/**
 * The presenter vignettes over real HTTP (issue 18): RCA presenter sessions (fresh-session, status,
 * reset), agents under management, optimization and presenter missions, against the fake model.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoVersionWorkflowId } from '../../workflows/demo-version-definitions.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, type Stack } from '../helpers/stack.js';
import { startPresenterStack, type PresenterStack } from './support.js';

const INTERNAL = 'vignettes-internal-token';
const internal = { 'x-platform-internal-token': INTERNAL };
let s: PresenterStack;
let llm: FakeLlm;
let stack: Stack;
let root: string;
let admin: string;
let presenter: string;
let staffOnly: string;
let grantedNotStaff: string;
let member: string;
let agentId: string;
const unknownSession = `psess_${'0'.repeat(32)}`;

const lastUser = (req: { messages: Array<{ role: string; content: string | null }> }) =>
  [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vignettes-test-'));
  llm = await startFakeLlm((req) => ({ content: `plan for: ${lastUser(req).slice(0, 40)}` }));
  s = await startPresenterStack(
    {
      PLATFORM_INTERNAL_TOKEN: INTERNAL,
      PLATFORM_BLUEPRINTS_DIR: root,
      PLATFORM_LLM_BASE_URL: llm.baseUrl,
      PLATFORM_LLM_MODEL: 'fake-model',
    },
    { name: 'RCA guide', instructions: 'Find root causes.' },
  );
  ({
    stack,
    agentId,
    tokens: { admin, presenter, staffOnly, grantedNotStaff, member },
  } = s);
});
afterAll(async () => {
  await s?.close();
  await llm?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const call = (method: string, p: string, auth: { token?: string; headers?: Record<string, string> }, body?: unknown) =>
  http(stack.url, method, p, { ...auth, ...(body !== undefined ? { body } : {}) });

async function freshSession(auth: { token?: string; headers?: Record<string, string> }, body: unknown = {}) {
  const res = await call('POST', '/api/demo/rca/fresh-session', auth, body);
  expect(res.status).toBe(201);
  return res.body.data as Record<string, any>;
}

async function readyVersion(bindings: Record<string, string[]>) {
  const res = await call('POST', '/api/demo/versions', { headers: internal }, { name: 'v', profile: 'rca', bindings });
  expect(res.status).toBe(201);
  const id = res.body.data.id as string;
  expect(await stack.api.deps.temporal.workflow.getHandle(demoVersionWorkflowId(id)).result()).toBe('ready');
  return id;
}

const sessionsCount = async () =>
  (await query(stack.db.url, 'select count(*)::int as n from presenter_sessions'))[0]!.n as number;

describe('presenter access', () => {
  const routes: Array<[string, string, unknown?]> = [
    ['POST', '/api/demo/rca/fresh-session', {}],
    ['GET', `/api/demo/rca/status?presenter_session_id=${unknownSession}`],
    ['POST', '/api/demo/rca/reset', { presenter_session_id: unknownSession }],
    ['GET', '/api/demo/aum'],
    ['GET', '/api/demo/optimization'],
    ['GET', '/api/demo/presenter-missions'],
    ['POST', '/api/demo/presenter-missions', { presenter_session_id: unknownSession, blueprint_name: 'x' }],
  ];

  it('refuses callers without the presenter capability (401, 403) and writes nothing', async () => {
    for (const [method, p, body] of routes) {
      expect((await call(method, p, {}, body)).status).toBe(401);
      const badToken = await call(method, p, { headers: { 'x-platform-internal-token': 'wrong' } }, body);
      expect(badToken.status).toBe(401);
      for (const token of [member, staffOnly, grantedNotStaff]) {
        const res = await call(method, p, { token }, body);
        expect(res.status).toBe(403);
        expect(res.body.error_type).toBe('forbidden');
        expect(res.body.payload.required_permission).toBe('present_demos');
      }
    }
    expect(await sessionsCount()).toBe(0);
  });

  it('accepts the internal token, a staff presenter and an admin', async () => {
    for (const auth of [{ headers: internal }, { token: presenter }, { token: admin }]) {
      expect((await call('GET', '/api/demo/aum', auth)).status).toBe(200);
      expect((await call('GET', '/api/demo/optimization', auth)).status).toBe(200);
      expect((await call('GET', '/api/demo/presenter-missions', auth)).status).toBe(200);
    }
  });
});

describe('RCA presenter sessions', () => {
  it('opens a session: a new thread seeded with the scenario prompt, answered by the model', async () => {
    const s = await freshSession({ token: presenter });
    expect(s.presenter_session_id).toMatch(/^psess_[0-9a-f]{32}$/);
    expect(s).toMatchObject({ status: 'active', demo_version_id: null, created_by: 'person:pat', reset_at: null });
    expect(s.first_turn.ok).toBe(true);
    expect(s.first_turn.reply).toBe('plan for: Root-cause analysis drill: yesterday the');
    const [row] = await query(stack.db.url, 'select * from presenter_sessions where id = $1', [s.presenter_session_id]);
    expect(row).toMatchObject({ status: 'active', thread_id: s.thread_id, agent_id: s.agent_id, tenant: 'default' });
    const [thread] = await query(
      stack.db.url,
      'select owner_id, bot_id, origin from conversation_threads where id = $1',
      [s.thread_id],
    );
    expect(thread).toEqual({ owner_id: 'pat', bot_id: s.agent_id, origin: 'presenter_session' });
    const messages = await query(
      stack.db.url,
      'select role, content from conversation_messages where thread_id = $1 order by created_at',
      [s.thread_id],
    );
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[0]!.content).toMatch(/^Root-cause analysis drill/);

    const status = await call('GET', `/api/demo/rca/status?presenter_session_id=${s.presenter_session_id}`, {
      token: admin,
    });
    expect(status.status).toBe(200);
    expect(status.body.data).toMatchObject({
      ready: true,
      blockers: [],
      agent: { agent_id: s.agent_id, present: true },
      llm: { configured: true, source: 'env', model: 'fake-model' },
      thread: { thread_id: s.thread_id, state: 'running', messages: 2, agent_replies: 1 },
      missions_started: 0,
    });
    expect(Date.parse(status.body.data.thread.last_activity_at)).toBeGreaterThan(0);
  });

  it("uses a ready demo version's bound agent and a custom scenario prompt", async () => {
    const versionId = await readyVersion({ agents: [agentId] });
    const s = await freshSession(
      { headers: internal },
      { demo_version_id: versionId, scenario_prompt: 'Why did the nightly load fail?' },
    );
    expect(s).toMatchObject({ agent_id: agentId, agent_name: 'RCA guide', demo_version_id: versionId });
    expect(s.created_by).toBe('internal-token');
    expect(s.first_turn.reply).toBe('plan for: Why did the nightly load fail?');
  });

  it('refuses unknown, unready and agentless versions and bad bodies, writing nothing', async () => {
    const before = await sessionsCount();
    const unknown = await call(
      'POST',
      '/api/demo/rca/fresh-session',
      { token: presenter },
      { demo_version_id: randomUUID() },
    );
    expect(unknown.status).toBe(404);
    const failing = await call('POST', '/api/demo/versions', { headers: internal }, { name: 'bad', profile: 'nope' });
    const failedId = failing.body.data.id as string;
    expect(await stack.api.deps.temporal.workflow.getHandle(demoVersionWorkflowId(failedId)).result()).toBe('failed');
    const unready = await call(
      'POST',
      '/api/demo/rca/fresh-session',
      { token: presenter },
      { demo_version_id: failedId },
    );
    expect(unready.status).toBe(409);
    expect(unready.body.payload).toMatchObject({ code: 'DEMO_VERSION_NOT_READY', status: 'failed' });
    const agentless = await readyVersion({});
    const noAgent = await call(
      'POST',
      '/api/demo/rca/fresh-session',
      { token: presenter },
      { demo_version_id: agentless },
    );
    expect(noAgent.status).toBe(409);
    expect(noAgent.body.payload.code).toBe('DEMO_VERSION_NO_AGENT');
    const extra = await call('POST', '/api/demo/rca/fresh-session', { token: presenter }, { agent: 'x' });
    expect(extra.status).toBe(422);
    const empty = await call('POST', '/api/demo/rca/fresh-session', { token: presenter }, { scenario_prompt: ' ' });
    expect(empty.status).toBe(400);
    expect(await sessionsCount()).toBe(before);
  });

  it('keeps the session when the model fails, and its status says why', async () => {
    llm.respond = () => ({ status: 401, body: '{"error":{"message":"Incorrect API key provided"}}' });
    try {
      const s = await freshSession({ token: presenter });
      expect(s.first_turn.ok).toBe(false);
      expect(s.first_turn.llm_failure.kind).toEqual(expect.any(String));
      const status = await call('GET', `/api/demo/rca/status?presenter_session_id=${s.presenter_session_id}`, {
        token: presenter,
      });
      expect(status.body.data.session.status).toBe('active');
      expect(status.body.data.thread.agent_replies).toBe(0);
    } finally {
      llm.respond = (req) => ({ content: `plan for: ${lastUser(req).slice(0, 40)}` });
    }
  });

  it('cuts the first turn short when the session is reset while it runs', async () => {
    llm.respond = () => ({ hang: true });
    try {
      const pending = call(
        'POST',
        '/api/demo/rca/fresh-session',
        { token: presenter },
        { scenario_prompt: 'Reset me mid-turn' },
      );
      // The session row exists and the model call is in flight.
      let id = '';
      for (;;) {
        const rows = await query(
          stack.db.url,
          `select id from presenter_sessions where scenario_prompt = 'Reset me mid-turn'`,
        );
        if (rows.length && llm.requests.some((r) => lastUser(r) === 'Reset me mid-turn')) {
          id = rows[0]!.id as string;
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      const reset = await call('POST', '/api/demo/rca/reset', { token: presenter }, { presenter_session_id: id });
      expect(reset.body.data).toMatchObject({ status: 'reset', thread_closed: true });
      llm.release({ content: 'too late' });
      const res = await pending;
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        presenter_session_id: id,
        status: 'active',
        first_turn: { ok: false, reply: null, llm_failure: null },
      });
    } finally {
      llm.respond = (req) => ({ content: `plan for: ${lastUser(req).slice(0, 40)}` });
    }
  });

  it('answers 404 for an unknown session and 400 for a malformed id', async () => {
    const unknown = await call('GET', `/api/demo/rca/status?presenter_session_id=${unknownSession}`, { token: admin });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_type).toBe('not_found');
    expect((await call('GET', '/api/demo/rca/status?presenter_session_id=nope', { token: admin })).status).toBe(400);
    expect((await call('GET', '/api/demo/rca/status', { token: admin })).status).toBe(400);
  });

  it('resets a session once: its thread workflow is terminated; again changes nothing', async () => {
    const s = await freshSession({ token: presenter });
    const first = await call(
      'POST',
      '/api/demo/rca/reset',
      { token: presenter },
      { presenter_session_id: s.presenter_session_id },
    );
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ status: 'reset', already_reset: false, thread_closed: true });
    const described = await stack.api.deps.temporal.workflow.getHandle(`thread/${s.thread_id}`).describe();
    expect(described.status.name).toBe('TERMINATED');
    const [row] = await query(stack.db.url, 'select status, reset_at from presenter_sessions where id = $1', [
      s.presenter_session_id,
    ]);
    expect(row!.status).toBe('reset');
    expect(row!.reset_at).not.toBeNull();

    const again = await call(
      'POST',
      '/api/demo/rca/reset',
      { headers: internal },
      { presenter_session_id: s.presenter_session_id },
    );
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ status: 'reset', already_reset: true, thread_closed: false });
    expect(again.body.data.reset_at).toBe(first.body.data.reset_at);

    const status = await call('GET', `/api/demo/rca/status?presenter_session_id=${s.presenter_session_id}`, {
      token: presenter,
    });
    expect(status.body.data).toMatchObject({
      ready: false,
      blockers: ['session_reset'],
      thread: { state: 'terminated' },
    });

    expect(
      (await call('POST', '/api/demo/rca/reset', { token: presenter }, { presenter_session_id: unknownSession }))
        .status,
    ).toBe(404);
    const extra = await call(
      'POST',
      '/api/demo/rca/reset',
      { token: presenter },
      { presenter_session_id: unknownSession, all: true },
    );
    expect(extra.status).toBe(422);
  });
});

describe('AUM and optimization vignettes', () => {
  let sessionId = '';
  const proposalId = randomUUID();

  beforeAll(async () => {
    sessionId = (await freshSession({ token: presenter })).presenter_session_id;
    await query(
      stack.db.url,
      `insert into agents (id, tenant, name, instructions, tool_groups, access, source, is_editable, created_by, created_at, updated_at)
       values ('agent_idle', 'default', 'Idle', 'Nothing.', '[]', '{"roles": [], "users": []}', 'api', true, 'root',
               now() - interval '30 days', now() - interval '30 days')`,
    );
    await query(
      stack.db.url,
      `insert into managed_sources (id, tenant, name, repo_url, settings, created_at, updated_at, created_by)
       values ('ms_failed', 'default', 'Failing', 'https://git.example.test/a.git', '{}', now(), now(), 'root'),
              ('ms_new', 'default', 'New', 'https://git.example.test/b.git', '{}', now(), now(), 'root'),
              ('ms_ok', 'default', 'Fine', 'https://git.example.test/c.git', '{}', now(), now(), 'root')`,
    );
    await query(
      stack.db.url,
      `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, requested_by, started_at, updated_at)
       values ('j1', 'ms_failed', 'default', 'complete', 'done', 'root', now() - interval '2 hours', now()),
              ('j2', 'ms_failed', 'default', 'error', 'clone', 'root', now() - interval '1 hour', now()),
              ('j3', 'ms_ok', 'default', 'error', 'clone', 'root', now() - interval '2 hours', now()),
              ('j4', 'ms_ok', 'default', 'complete', 'done', 'root', now() - interval '1 hour', now())`,
    );
    await query(
      stack.db.url,
      `insert into action_review_proposals (proposal_id, tenant, action_type, status, version, payload, payload_digest,
         expected_effect, requester, requester_kind, execution_origin, created_at, updated_at)
       values ($1, 'default', 'demo.v1', 'requested', 1, '{}', 'd', 'effect', '{}', 'agent', 'api',
               now() - interval '48 hours', now())`,
      [proposalId],
    );
  });

  it('counts what the platform manages from its records', async () => {
    const res = await call('GET', `/api/demo/aum?presenter_session_id=${sessionId}`, { token: presenter });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.presenter_session_id).toBe(sessionId);
    const [agents] = await query(stack.db.url, `select count(*)::int as n from agents where tenant = 'default'`);
    const [threads] = await query(
      stack.db.url,
      `select count(*)::int as n from conversation_threads where tenant = 'default'`,
    );
    expect(d.agents.total).toBe(agents!.n);
    expect(d.agents.by_source.api).toBeGreaterThanOrEqual(2);
    expect(d.agents.active_last_24h).toBeGreaterThanOrEqual(1);
    expect(d.threads.total).toBe(threads!.n);
    expect(d.threads.active_last_24h).toBeGreaterThanOrEqual(1);
    expect(d.action_review).toMatchObject({ total: 1, awaiting_review: 1 });
    expect(d.action_review.by_status.requested).toBe(1);
    expect(d.managed_sources).toEqual({
      total: 3,
      by_last_sync: { never_synced: 1, running: 0, complete: 1, error: 1 },
    });
    expect(d.missions.by_status).toEqual({ running: 0, paused: 0, completed: 0, cancelled: 0, closed: 0, failed: 0 });

    expect(
      (await call('GET', `/api/demo/aum?presenter_session_id=${unknownSession}`, { token: presenter })).status,
    ).toBe(404);
    expect((await call('GET', '/api/demo/aum?presenter_session_id=bad', { token: presenter })).status).toBe(400);
  });

  it('recommends from real records, each with its evidence ids', async () => {
    const res = await call('GET', `/api/demo/optimization?presenter_session_id=${sessionId}`, { headers: internal });
    expect(res.status).toBe(200);
    const recs = res.body.data.recommendations as Array<Record<string, any>>;
    const byKind = Object.fromEntries(recs.map((r) => [r.kind, r]));
    expect(res.body.data.thresholds).toEqual({ idle_agent_days: 7, review_backlog_hours: 24 });
    expect(byKind.failed_sync).toMatchObject({ severity: 'high', count: 1, evidence_ids: ['ms_failed'] });
    expect(byKind.never_synced_source).toMatchObject({ count: 1, evidence_ids: ['ms_new'] });
    expect(byKind.review_backlog).toMatchObject({ count: 1, evidence_ids: [proposalId] });
    expect(byKind.idle_agent.evidence_ids).toEqual(['agent_idle']);
    expect(byKind.stuck_mission).toBeUndefined();

    const relaxed = await call('GET', '/api/demo/optimization?review_backlog_hours=72&idle_agent_days=60', {
      token: presenter,
    });
    expect(relaxed.status).toBe(200);
    const kinds = (relaxed.body.data.recommendations as Array<{ kind: string }>).map((r) => r.kind);
    expect(kinds).not.toContain('review_backlog');
    expect(kinds).not.toContain('idle_agent');
    expect(kinds).toContain('failed_sync');

    expect((await call('GET', '/api/demo/optimization?idle_agent_days=0', { token: presenter })).status).toBe(400);
    expect(
      (await call('GET', `/api/demo/optimization?presenter_session_id=${unknownSession}`, { token: presenter })).status,
    ).toBe(404);
  });
});

describe('presenter missions', () => {
  const phases = [
    {
      id: 'scope',
      name: 'Scope',
      goal: 'Agree the scope',
      agents: [] as string[],
      prompts: [{ text: 'Scope the RCA' }],
      questions: [
        { id: 'window', content: 'Which window?', priority: 'high', category: 'scope', expected_response_type: 'text' },
      ],
    },
  ];

  it('starts a mission for a session, tagged with it, and lists it', async () => {
    phases[0]!.agents = [agentId];
    expect(
      (await call('POST', '/api/blueprints/', { token: admin }, { blueprint_name: 'rca-drill', phases })).status,
    ).toBe(201);
    const s = await freshSession({ token: admin });
    const other = await freshSession({ token: admin });
    const started = await call(
      'POST',
      '/api/demo/presenter-missions',
      { token: admin },
      { presenter_session_id: s.presenter_session_id, blueprint_name: 'rca-drill', name: 'RCA drill' },
    );
    expect(started.status).toBe(201);
    const mission = started.body.data;
    expect(mission).toMatchObject({
      name: 'RCA drill',
      blueprint_name: 'rca-drill',
      status: 'running',
      requested_by: 'root',
      presenter_session_id: s.presenter_session_id,
    });
    const [tag] = await query(
      stack.db.url,
      'select presenter_session_id from presenter_session_missions where project_id = $1',
      [mission.id],
    );
    expect(tag).toEqual({ presenter_session_id: s.presenter_session_id });

    const all = await call('GET', '/api/demo/presenter-missions', { headers: internal });
    expect(all.body.data.map((m: { id: string }) => m.id)).toContain(mission.id);
    const mine = await call('GET', `/api/demo/presenter-missions?presenter_session_id=${s.presenter_session_id}`, {
      token: presenter,
    });
    expect(mine.body.data).toHaveLength(1);
    expect(mine.body.data[0]).toMatchObject({ id: mission.id, presenter_session_id: s.presenter_session_id });
    const none = await call('GET', `/api/demo/presenter-missions?presenter_session_id=${other.presenter_session_id}`, {
      token: presenter,
    });
    expect(none.body.data).toEqual([]);
    const status = await call('GET', `/api/demo/rca/status?presenter_session_id=${s.presenter_session_id}`, {
      token: admin,
    });
    expect(status.body.data.missions_started).toBe(1);
    const aum = await call('GET', '/api/demo/aum', { token: admin });
    expect(aum.body.data.missions.by_status.running).toBe(1);
  });

  it('refuses like the missions route, for unknown and reset sessions and bad bodies, writing nothing', async () => {
    const s = await freshSession({ token: admin });
    const projects = async () => (await query(stack.db.url, 'select count(*)::int as n from projects'))[0]!.n;
    const before = await projects();
    const start = (body: Record<string, unknown>, token = admin) =>
      call('POST', '/api/demo/presenter-missions', { token }, body);
    // Pat may not view the admin's blueprint: it does not exist for him.
    expect(
      (await start({ presenter_session_id: s.presenter_session_id, blueprint_name: 'rca-drill' }, presenter)).status,
    ).toBe(404);
    expect((await start({ presenter_session_id: s.presenter_session_id, blueprint_name: 'no-such' })).status).toBe(404);
    expect((await start({ presenter_session_id: unknownSession, blueprint_name: 'rca-drill' })).status).toBe(404);
    expect(
      (await start({ presenter_session_id: s.presenter_session_id, blueprint_name: 'rca-drill', x: 1 })).status,
    ).toBe(422);
    expect((await start({ presenter_session_id: 'bad', blueprint_name: 'rca-drill' })).status).toBe(400);
    expect(
      (
        await call(
          'POST',
          '/api/blueprints/',
          { token: admin },
          {
            blueprint_name: 'ghost-drill',
            phases: [{ id: 'p', name: 'P', goal: 'g', agents: ['nobody'] }],
          },
        )
      ).status,
    ).toBe(201);
    const ghost = await start({ presenter_session_id: s.presenter_session_id, blueprint_name: 'ghost-drill' });
    expect(ghost.status).toBe(409);
    expect(ghost.body.payload.code).toBe('unknown_agents');
    await call('POST', '/api/demo/rca/reset', { token: admin }, { presenter_session_id: s.presenter_session_id });
    const reset = await start({ presenter_session_id: s.presenter_session_id, blueprint_name: 'rca-drill' });
    expect(reset.status).toBe(409);
    expect(reset.body.payload.code).toBe('presenter_session_reset');
    expect(await projects()).toBe(before);
    expect(
      (await call('GET', `/api/demo/presenter-missions?presenter_session_id=${unknownSession}`, { token: admin }))
        .status,
    ).toBe(404);
  });
});
