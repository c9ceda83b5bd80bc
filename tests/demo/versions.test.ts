import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoRunWorkflowId, demoVersionWorkflowId } from '../../workflows/demo-version-definitions.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { http, type Stack } from '../helpers/stack.js';
import { presenters, startPresenterStack, type PresenterStack } from './support.js';

const INTERNAL = 'demo-versions-internal-token';
const internal = { 'x-platform-internal-token': INTERNAL };
let s: PresenterStack;
let stack: Stack;
let admin: string;
let presenter: string;
let staffOnly: string;
let grantedNotStaff: string;
let member: string;
let agentId: string;
const blueprintId = 'bp-demo-1';

beforeAll(async () => {
  // `present_demos` reaches a staff member through a custom role.
  s = await startPresenterStack(
    { PLATFORM_INTERNAL_TOKEN: INTERNAL },
    { name: 'Demo guide', instructions: 'Guide the demo.' },
    presenters({ sub: 'mia', email: 'mia@example.com', roles: ['member'] }),
  );
  ({
    stack,
    agentId,
    tokens: { admin, presenter, staffOnly, grantedNotStaff, member },
  } = s);
  await query(stack.db.url, `insert into blueprints (blueprint_id, tenant, name) values ($1, 'default', 'Demo bp')`, [
    blueprintId,
  ]);
});
afterAll(() => s?.close());

const versionResult = (id: string) => stack.api.deps.temporal.workflow.getHandle(demoVersionWorkflowId(id)).result();
const runResult = (id: string) => stack.api.deps.temporal.workflow.getHandle(demoRunWorkflowId(id)).result();

async function createVersion(
  body: Record<string, unknown>,
  auth: { token?: string; headers?: Record<string, string> },
) {
  const res = await http(stack.url, 'POST', '/api/demo/versions', { body, ...auth });
  expect(res.status).toBe(201);
  expect(res.body.data.status).toBe('draft');
  return res.body.data.id as string;
}

describe('presenter access', () => {
  it('refuses callers without the presenter capability and writes nothing', async () => {
    const body = { name: 'Refused', profile: 'standard' };
    const none = await http(stack.url, 'GET', '/api/demo/versions');
    expect(none.status).toBe(401);
    for (const token of [member, staffOnly, grantedNotStaff]) {
      const res = await http(stack.url, 'POST', '/api/demo/versions', { token, body });
      expect(res.status).toBe(403);
      expect(res.body.error_type).toBe('forbidden');
      expect(res.body.payload.required_permission).toBe('present_demos');
      expect((await http(stack.url, 'GET', '/api/demo/versions/runs', { token })).status).toBe(403);
    }
    const badToken = await http(stack.url, 'POST', '/api/demo/versions', {
      headers: { 'x-platform-internal-token': 'wrong' },
      body,
    });
    expect(badToken.status).toBe(401);
    expect(badToken.body.payload.reason).toBe('internal_token_unrecognised');
    expect(await query(stack.db.url, `select id from demo_versions where name = 'Refused'`)).toEqual([]);
  });

  it('accepts the internal token, a staff presenter and an admin', async () => {
    for (const auth of [{ headers: internal }, { token: presenter }, { token: admin }]) {
      const res = await http(stack.url, 'GET', '/api/demo/versions', auth);
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body.data)).toBe(true);
    }
    const id = await createVersion(
      { name: 'By presenter', profile: 'rca', presenter_session_id: 'ps-1' },
      {
        token: presenter,
      },
    );
    expect(await versionResult(id)).toBe('ready');
    const [row] = await query(
      stack.db.url,
      `select created_by, presenter_session_id from demo_versions where id = $1`,
      [id],
    );
    expect(row).toEqual({ created_by: 'person:pat', presenter_session_id: 'ps-1' });
  });
});

describe('demo versions', () => {
  it('validates a version with existing bindings to ready', async () => {
    const id = await createVersion(
      { name: 'Ready one', profile: 'standard', bindings: { agents: [agentId], blueprints: [blueprintId] } },
      { headers: internal },
    );
    expect(await versionResult(id)).toBe('ready');
    await recordHistory('demo-version-ready', stack.api.deps.temporal.workflow.getHandle(demoVersionWorkflowId(id)));
    const got = await http(stack.url, 'GET', `/api/demo/versions/${id}`, { headers: internal });
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({
      id,
      status: 'ready',
      error_code: null,
      created_by: 'internal-token',
      bindings: { agents: [agentId], blueprints: [blueprintId], connections: [] },
    });
    const list = await http(stack.url, 'GET', '/api/demo/versions?status=ready', { token: admin });
    expect(list.body.data.map((v: { id: string }) => v.id)).toContain(id);
  });

  it('fails a version whose binding names nothing (DEMO_VERSION_BINDING_INVALID)', async () => {
    const id = await createVersion(
      { name: 'Bad binding', profile: 'standard', bindings: { agents: [agentId], blueprints: ['no-such-bp'] } },
      { headers: internal },
    );
    expect(await versionResult(id)).toBe('failed');
    const got = await http(stack.url, 'GET', `/api/demo/versions/${id}`, { token: presenter });
    expect(got.body.data.status).toBe('failed');
    expect(got.body.data.error_code).toBe('DEMO_VERSION_BINDING_INVALID');
    expect(got.body.data.error).toContain('blueprints:no-such-bp');
  });

  it('fails a version whose profile is not offered (DEMO_VERSION_PROFILE_UNAVAILABLE)', async () => {
    const id = await createVersion({ name: 'Bad profile', profile: 'no-such-profile' }, { headers: internal });
    expect(await versionResult(id)).toBe('failed');
    const got = await http(stack.url, 'GET', `/api/demo/versions/${id}`, { headers: internal });
    expect(got.body.data.error_code).toBe('DEMO_VERSION_PROFILE_UNAVAILABLE');
  });

  it('refuses an invalid body and an unknown version', async () => {
    const bad = await http(stack.url, 'POST', '/api/demo/versions', { headers: internal, body: { profile: 'rca' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error_type).toBe('bad_request');
    const unknown = await http(stack.url, 'GET', `/api/demo/versions/${randomUUID()}`, { headers: internal });
    expect(unknown.status).toBe(404);
  });
});

describe('demo runs', () => {
  it('runs a ready version to completed', async () => {
    const versionId = await createVersion(
      { name: 'Run me', profile: 'aum', bindings: { agents: [agentId], blueprints: [blueprintId] } },
      { headers: internal },
    );
    expect(await versionResult(versionId)).toBe('ready');
    const created = await http(stack.url, 'POST', '/api/demo/versions/runs', {
      token: presenter,
      body: { version_id: versionId, presenter_session_id: 'ps-2' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      version_id: versionId,
      status: 'prepared',
      presenter_session_id: 'ps-2',
    });
    const runId = created.body.data.id as string;
    expect(await runResult(runId)).toBe('completed');
    await recordHistory('demo-run-completed', stack.api.deps.temporal.workflow.getHandle(demoRunWorkflowId(runId)));
    const got = await http(stack.url, 'GET', `/api/demo/versions/runs/${runId}`, { headers: internal });
    expect(got.status).toBe(200);
    expect(got.body.data.status).toBe('completed');
    expect(got.body.data.started_at).not.toBeNull();
    expect(got.body.data.finished_at).not.toBeNull();
    expect(got.body.data.steps).toEqual([
      { kind: 'agent', target: agentId, status: 'done', detail: expect.any(String) },
      { kind: 'blueprint', target: blueprintId, status: 'done', detail: expect.any(String) },
    ]);
    const list = await http(stack.url, 'GET', `/api/demo/versions/runs?version_id=${versionId}`, { token: admin });
    expect(list.body.data.map((r: { id: string }) => r.id)).toEqual([runId]);
  });

  it('ends incomplete when a bound subject is gone by the time it runs', async () => {
    await query(
      stack.db.url,
      `insert into blueprints (blueprint_id, tenant, name) values ('bp-gone', 'default', 'Gone')`,
    );
    const versionId = await createVersion(
      { name: 'Fading', profile: 'standard', bindings: { blueprints: ['bp-gone', blueprintId] } },
      { headers: internal },
    );
    expect(await versionResult(versionId)).toBe('ready');
    await query(stack.db.url, `delete from blueprints where blueprint_id = 'bp-gone'`);
    const created = await http(stack.url, 'POST', '/api/demo/versions/runs', {
      headers: internal,
      body: { version_id: versionId },
    });
    expect(created.status).toBe(201);
    expect(await runResult(created.body.data.id)).toBe('incomplete');
    const got = await http(stack.url, 'GET', `/api/demo/versions/runs/${created.body.data.id}`, { headers: internal });
    expect(got.body.data.steps.map((s: { status: string }) => s.status)).toEqual(['skipped', 'done']);
  });

  it('refuses to run a version that is not ready, and an unknown version', async () => {
    const versionId = await createVersion({ name: 'Never ready', profile: 'nope' }, { headers: internal });
    expect(await versionResult(versionId)).toBe('failed');
    const refused = await http(stack.url, 'POST', '/api/demo/versions/runs', {
      headers: internal,
      body: { version_id: versionId },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error_type).toBe('conflict');
    expect(refused.body.payload).toMatchObject({ code: 'DEMO_VERSION_NOT_READY', status: 'failed' });
    expect(await query(stack.db.url, `select id from demo_runs where version_id = $1`, [versionId])).toEqual([]);
    const unknown = await http(stack.url, 'POST', '/api/demo/versions/runs', {
      headers: internal,
      body: { version_id: randomUUID() },
    });
    expect(unknown.status).toBe(404);
    expect(
      (await http(stack.url, 'GET', `/api/demo/versions/runs/${randomUUID()}`, { headers: internal })).status,
    ).toBe(404);
  });
});

describe('demo user info', () => {
  it('reports has_submitted before and after the form, per person', async () => {
    const before = await http(stack.url, 'GET', '/api/demo/user-info-status', { token: member });
    expect(before.status).toBe(200);
    expect(before.body.data).toEqual({ has_submitted: false, submitted_at: null });

    const bad = await http(stack.url, 'POST', '/api/demo/user-info', {
      token: member,
      body: { name: 'Mia', email: 'not-an-address' },
    });
    expect(bad.status).toBe(400);
    expect(await query(stack.db.url, `select subject from demo_user_info`)).toEqual([]);

    const sent = await http(stack.url, 'POST', '/api/demo/user-info', {
      token: member,
      body: { name: 'Mia', email: 'mia@example.com', company: 'Acme' },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data.has_submitted).toBe(true);
    const after = await http(stack.url, 'GET', '/api/demo/user-info-status', { token: member });
    expect(after.body.data.has_submitted).toBe(true);
    expect(after.body.data.submitted_at).toEqual(expect.any(String));
    const [row] = await query(stack.db.url, `select name, email, company from demo_user_info where subject = 'mia'`);
    expect(row).toEqual({ name: 'Mia', email: 'mia@example.com', company: 'Acme' });

    const other = await http(stack.url, 'GET', '/api/demo/user-info-status', { token: presenter });
    expect(other.body.data.has_submitted).toBe(false);
    // A person-only route: the internal token is no credential here.
    expect((await http(stack.url, 'GET', '/api/demo/user-info-status', { headers: internal })).status).toBe(401);
  });
});
