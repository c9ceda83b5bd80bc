/**
 * The ticket-RCA presenter vignette over real HTTP, with a fake tracker and a fake cloud code agent on
 * loopback: presenter access refusals, every prepare failure code (each writing nothing), prepare →
 * status → completion (ticket filed, run finished, analysis commented on the ticket), a second session
 * refused while one holds the build provider, reset of a running session (run cancelled, ticket
 * labelled, state cleared) and its idempotence, and the replay history of `ticketRcaWorkflow`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { demoVersionWorkflowId } from '../../workflows/demo-version-definitions.js';
import { ticketRcaWorkflowId } from '../../workflows/ticket-rca-definitions.js';
import { INTERNAL_TOKEN } from '../action-review/support.js';
import { startFakeProvider, type FakeProvider } from '../code-agent/fake-provider.js';
import { startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { http } from '../helpers/stack.js';
import { startFakeTracker, type FakeTracker } from '../tracker/fake-tracker.js';

let s: CrmStack;
let tracker: FakeTracker;
let provider: FakeProvider;
const internal = { 'x-platform-internal-token': INTERNAL_TOKEN };
const REPO = 'https://git.example/acme/app';

const sql = (text: string, params: unknown[] = []) => query(s.r.stack.db.url, text, params);
const apply = async (content: string) => {
  const res = await http(s.r.stack.url, 'POST', '/api/config/setup/apply-partial', {
    token: s.admin,
    body: { content },
  });
  expect(res.status, res.text).toBe(200);
};
const prepare = (body: Record<string, unknown>, token: string | null = s.admin) =>
  http(s.r.stack.url, 'POST', '/api/demo/ticket-rca/prepare', token ? { token, body } : { headers: internal, body });
const reset = (psid: string) =>
  http(s.r.stack.url, 'POST', '/api/demo/ticket-rca/reset', { token: s.admin, body: { presenter_session_id: psid } });
const status = (psid: string) =>
  http(s.r.stack.url, 'GET', `/api/demo/ticket-rca/status?presenter_session_id=${encodeURIComponent(psid)}`, {
    headers: internal,
  });
const sessions = async () => (await sql('select count(*)::int as n from ticket_rca_sessions'))[0]!.n as number;
const wf = (psid: string) => s.r.stack.api.deps.temporal.workflow.getHandle(ticketRcaWorkflowId('default', psid));

async function expectRefused(body: Record<string, unknown>, code: string) {
  const before = { sessions: await sessions(), created: tracker.created.length, runs: provider.runs.length };
  const res = await prepare(body);
  expect(res.status, res.text).toBe(200);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.message).toEqual(expect.any(String));
  expect({ sessions: await sessions(), created: tracker.created.length, runs: provider.runs.length }).toEqual(before);
  return res.body.error.message as string;
}

async function createVersion(body: Record<string, unknown>) {
  const res = await http(s.r.stack.url, 'POST', '/api/demo/versions', { headers: internal, body });
  expect(res.status, res.text).toBe(201);
  const id = res.body.data.id as string;
  await s.r.stack.api.deps.temporal.workflow.getHandle(demoVersionWorkflowId(id)).result();
  return id;
}

async function waitState(psid: string, states: string[]) {
  for (;;) {
    const res = await status(psid);
    expect(res.status, res.text).toBe(200);
    if (states.includes(res.body.data.state)) return res.body.data;
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  tracker = await startFakeTracker();
  tracker.projects = { APP: ['Task', 'Bug'] };
  provider = await startFakeProvider();
  s = await startCrmStack();
  for (const [name, key, base] of [
    ['tracker', 'tracker-token', tracker.url],
    ['agent_cloud', 'good-key', provider.url],
  ] as const) {
    const res = await http(s.r.stack.url, 'POST', '/api/connections', {
      token: s.admin,
      body: { name, type: 'api_key', auth_mode: 'api_key', config: { api_key: key, api_base_url: base } },
    });
    expect(res.status, res.text).toBe(201);
  }
});
afterAll(async () => {
  await s?.close();
  await tracker?.close();
  await provider?.close();
});

describe('presenter access', () => {
  it('refuses callers without presenter rights (401, 403) and bad bodies (400), writing nothing', async () => {
    const body = { presenter_session_id: 'ps-x', project_key: 'APP' };
    expect((await http(s.r.stack.url, 'POST', '/api/demo/ticket-rca/prepare', { body })).status).toBe(401);
    const wrong = await http(s.r.stack.url, 'POST', '/api/demo/ticket-rca/reset', {
      headers: { 'x-platform-internal-token': 'wrong' },
      body: { presenter_session_id: 'ps-x' },
    });
    expect(wrong.status).toBe(401);
    for (const [method, path, b] of [
      ['POST', '/api/demo/ticket-rca/prepare', body],
      ['POST', '/api/demo/ticket-rca/reset', { presenter_session_id: 'ps-x' }],
      ['GET', '/api/demo/ticket-rca/status?presenter_session_id=ps-x', undefined],
    ] as const) {
      const res = await http(s.r.stack.url, method, path, { token: s.r.tokens.member, body: b });
      expect(res.status, res.text).toBe(403);
      expect(res.body.error_type).toBe('forbidden');
      expect(res.body.payload.required_permission).toBe('present_demos');
    }
    const bad = await prepare({ presenter_session_id: 'ps-x', project_key: 'not a key' });
    expect(bad.status).toBe(400);
    expect(bad.body.error_type).toBe('bad_request');
    expect((await prepare({ project_key: 'APP' })).status).toBe(400);
    expect(await sessions()).toBe(0);
    expect(tracker.created).toEqual([]);
  });

  it('an unknown session is idle; reset of it changes nothing', async () => {
    const st = await status('never-prepared');
    expect(st.body).toMatchObject({
      success: true,
      data: { presenter_session_id: 'never-prepared', state: 'idle', ticket_key: null, run_id: null },
    });
    const res = await reset('never-prepared');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, data: { session: { state: 'idle' }, ticket_key: null } });
    expect(await sessions()).toBe(0);
  });
});

describe('prepare failures (each writes nothing)', () => {
  const body = { presenter_session_id: 'ps-fail', project_key: 'APP', issue_type: 'Bug' };

  it('TICKETING_SETUP_REQUIRED without a tracker connection, and for a project the tracker does not know', async () => {
    expect(await expectRefused(body, 'TICKETING_SETUP_REQUIRED')).toMatch(/connection_name/);
    await apply('enhancements:\n  tracker_automation:\n    connection_name: tracker\n');
    expect(await expectRefused({ ...body, project_key: 'NOPE' }, 'TICKETING_SETUP_REQUIRED')).toMatch(/HTTP 404/);
  });

  it('TICKETING_ISSUE_TYPE_UNAVAILABLE when the project does not offer the issue type', async () => {
    expect(await expectRefused({ ...body, issue_type: 'Incident' }, 'TICKETING_ISSUE_TYPE_UNAVAILABLE')).toMatch(
      /Task, Bug/,
    );
  });

  it('CODING_AGENT_UNSUPPORTED when no code-agent launcher is usable', async () => {
    await expectRefused(body, 'CODING_AGENT_UNSUPPORTED');
  });

  it('DEMO_VERSION_* when the demo version is unknown, of another profile, or binds what is gone', async () => {
    await apply(
      `enhancements:\n  code_agent:\n    adapter: cloud\n    connection_name: agent_cloud\n    target_repo_url: ${REPO}\n    poll_interval_seconds: 1\n`,
    );
    await expectRefused(
      { ...body, demo_version_id: '00000000-0000-4000-8000-000000000000' },
      'DEMO_VERSION_BINDING_INVALID',
    );
    const standard = await createVersion({ name: 'Standard', profile: 'standard' });
    await expectRefused({ ...body, demo_version_id: standard }, 'DEMO_VERSION_PROFILE_UNAVAILABLE');
    await sql(`insert into blueprints (blueprint_id, tenant, name) values ('bp-rca', 'default', 'RCA bp')`);
    const fading = await createVersion({ name: 'Fading', profile: 'ticket-rca', bindings: { blueprints: ['bp-rca'] } });
    await sql(`delete from blueprints where blueprint_id = 'bp-rca'`);
    expect(await expectRefused({ ...body, demo_version_id: fading }, 'DEMO_VERSION_BINDING_INVALID')).toMatch(
      /blueprints:bp-rca/,
    );
  });
});

describe('the vignette', () => {
  let holdRunId: string;

  it('prepare files the ticket and starts the run; another session is BUILD_PROVIDER_BUSY; a repeat answers the session', async () => {
    const version = await createVersion({ name: 'Ticket RCA', profile: 'ticket-rca' });
    const res = await prepare(
      {
        presenter_session_id: 'ps-hold',
        project_key: 'APP',
        issue_type: 'bug',
        summary: 'Checkout times out (hold)',
        demo_version_id: version,
      },
      null,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      data: {
        presenter_session_id: 'ps-hold',
        state: 'preparing',
        attempt: 1,
        issue_type: 'Bug',
        demo_version_id: version,
      },
    });
    const running = await waitState('ps-hold', ['running', 'failed', 'completed']);
    expect(running).toMatchObject({ state: 'running', ticket_key: 'APP-101', run_id: expect.stringMatching(/^car_/) });
    holdRunId = running.run_id;
    // `running` means the code-agent run is started; its launch at the provider is that run's own first
    // activity, so wait for it before counting what the refused session below must not add.
    await expect.poll(() => provider.runs.length).toBe(1);
    expect(tracker.created).toHaveLength(1);
    expect(tracker.created[0]).toMatchObject({
      project: { key: 'APP' },
      issuetype: { name: 'Bug' },
      summary: 'Checkout times out (hold)',
    });
    const [run] = await sql('select ticket_key, requested_by from code_agent_runs where run_id = $1', [holdRunId]);
    expect(run).toEqual({ ticket_key: 'APP-101', requested_by: 'system:ticket-rca' });

    const again = await prepare({ presenter_session_id: 'ps-hold', project_key: 'APP' });
    expect(again.body).toMatchObject({ success: true, data: { state: 'running', attempt: 1, ticket_key: 'APP-101' } });
    expect(tracker.created).toHaveLength(1);

    await expectRefused({ presenter_session_id: 'ps-other', project_key: 'APP' }, 'BUILD_PROVIDER_BUSY');
    expect((await status('ps-other')).body.data.state).toBe('idle');
  });

  it('reset cancels the run, labels the ticket and clears the session; a second reset changes nothing', async () => {
    const res = await reset('ps-hold');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      data: {
        session: { state: 'idle', ticket_key: null, run_id: null, attempt: 1 },
        ticket_key: 'APP-101',
        ticket_labelled: true,
        run_id: holdRunId,
        run_cancel_requested: true,
      },
    });
    expect(await wf('ps-hold').result()).toBe('cancelled');
    await s.r.stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(holdRunId)).result();
    const [run] = await sql('select status from code_agent_runs where run_id = $1', [holdRunId]);
    expect(run!.status).toBe('cancelled');
    expect(tracker.issues.find((i) => i.key === 'APP-101')!.labels).toContain('demo-reset');
    const [row] = await sql(
      "select state, ticket_key, run_id from ticket_rca_sessions where presenter_session_id = 'ps-hold'",
    );
    expect(row).toEqual({ state: 'idle', ticket_key: null, run_id: null });

    const twice = await reset('ps-hold');
    expect(twice.body).toMatchObject({
      success: true,
      data: { session: { state: 'idle' }, ticket_key: null, ticket_labelled: false },
    });
  });

  it('prepare → status → completed: the analysis is commented on the ticket (replay history recorded)', async () => {
    const res = await prepare({
      presenter_session_id: 'ps-done',
      project_key: 'APP',
      summary: 'Totals wrong (finish)',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.state).toBe('preparing');
    expect(await wf('ps-done').result()).toBe('completed');
    await recordHistory('ticket-rca-completed', wf('ps-done'));
    const done = (await status('ps-done')).body.data;
    expect(done).toMatchObject({
      state: 'completed',
      ticket_key: 'APP-102',
      run_id: expect.stringMatching(/^car_/),
      run_status: 'finished',
      error: null,
      finished_at: expect.any(String),
    });
    expect(tracker.comments['APP-102']).toHaveLength(1);
    expect(tracker.comments['APP-102']![0]).toContain(done.run_id);
    // A completed session no longer holds the provider; preparing it again is a new attempt.
    const next = await prepare({ presenter_session_id: 'ps-done', project_key: 'APP', summary: 'Again (finish)' });
    expect(next.body.data).toMatchObject({ state: 'preparing', attempt: 2, ticket_key: null });
    expect(await wf('ps-done').result()).toBe('completed');
    expect((await status('ps-done')).body.data).toMatchObject({ state: 'completed', ticket_key: 'APP-103' });
  });

  it('reset refuses with TICKETING_SETUP_REQUIRED when the tracker is gone, changing nothing', async () => {
    await apply("enhancements:\n  tracker_automation:\n    connection_name: ''\n");
    const res = await reset('ps-done');
    expect(res.body).toMatchObject({ success: false, error: { code: 'TICKETING_SETUP_REQUIRED' } });
    expect((await status('ps-done')).body.data).toMatchObject({ state: 'completed', ticket_key: 'APP-103' });
    await apply('enhancements:\n  tracker_automation:\n    connection_name: tracker\n');
    const ok = await reset('ps-done');
    expect(ok.body).toMatchObject({ success: true, data: { ticket_key: 'APP-103', ticket_labelled: true } });
  });
});
