/**
 * Many replicas (issue 33): two API processes and two worker processes on one PostgreSQL and one
 * Temporal (tests/replicas/support.ts). Lifecycles run through both APIs alternately; a write through
 * one is seen by the next read through the other (settings, branding, the active provider, a revoked
 * token); a download link signed elsewhere verifies on each and is used once across them, and so does a
 * console session; each of the workers' Schedules exists once and each sweep it starts runs once; the log
 * socket on one API gets the other API's lines, once.
 * One topology for the whole file. Every wait is on state or a message, bounded.
 */
import { Client, Connection, type ScheduleDescription } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { initOrm } from '../../shared/db/orm.js';
import { signDownload, storeDownload } from '../../shared/downloads/signed-urls.js';
import { HANDBACK_SWEEP_SCHEDULE_ID } from '../../shared/action-review/sweep-schedule.js';
import { csrfOf, signInAt } from '../console/support.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http } from '../helpers/stack.js';
import { waitFor } from '../helpers/worker-env.js';
import { connectWs, isOpen, type WsOpen } from '../helpers/ws-client.js';
import { claims, TENANT } from '../hosted/support.js';
import { BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID } from '../../workflows/blueprint-hidden-purge-definitions.js';
import { REPLICAS_NAMESPACE } from '../setup/global-setup.js';
import { initialAdmin, startReplicas, type Replicas } from './support.js';

let r: Replicas;
let llm: FakeLlm;
let a: string;
let b: string;
let alice: string;
let bob: string;
const sockets: WsOpen[] = [];

beforeAll(async () => {
  llm = await startFakeLlm(() => ({ content: 'ok' }));
  r = await startReplicas();
  [a, b] = r.apis.map((api) => api.url) as [string, string];
  // The control plane makes alice the initial admin through A; she invites bob through B.
  alice = await initialAdmin(r, a);
  const inv = await http(b, 'POST', '/api/hosted-identities/invitations', { token: alice, body: { subject: 'bob' } });
  expect(inv.status, inv.text).toBe(201);
  bob = await r.idp.sign(claims('bob'));
}, 300_000);

afterAll(async () => {
  for (const ws of sockets) ws.close();
  await r?.close();
  await llm?.close();
});

/** The results of the runs a Schedule started that it still lists (its recent actions), each awaited. */
function runResults(client: Client, described: ScheduleDescription): Promise<unknown[]> {
  return Promise.all(
    described.info.recentActions.map(({ action }) =>
      client.workflow.getHandle(action.workflow.workflowId, action.workflow.firstExecutionRunId).result(),
    ),
  );
}

async function socket(base: string, token: string): Promise<WsOpen> {
  const res = await connectWs(base, '/api/ws/log', { authorization: `Bearer ${token}` });
  if (!isOpen(res)) throw new Error(`log socket refused ${res.status}: ${JSON.stringify(res.body)}`);
  sockets.push(res);
  await res.waitFor((m) => m.type === 'ready');
  return res;
}

describe('a write through one API is read through the other', () => {
  it('branding and its setting, saved on A, are what B shows next', async () => {
    for (const [write, read, name] of [
      [a, b, 'Acme via A'],
      [b, a, 'Acme via B'],
    ] as const) {
      const put = await http(write, 'PUT', '/api/config/branding', { token: alice, body: { product_name: name } });
      expect(put.status, put.text).toBe(200);
      const branding = await http(read, 'GET', '/api/config/branding', { token: alice });
      expect(branding.body.data.product_name).toBe(name);
      const source = await http(read, 'GET', '/api/config/setup/sources?path=branding.product_name', {
        token: alice,
      });
      expect(source.body.data).toMatchObject({ effective_value: name, source: 'saved' });
    }
  });

  it('a provider saved on A and activated on B is the active one on A', async () => {
    const saved = await http(a, 'POST', '/api/config/llm-providers/other', {
      token: alice,
      body: { sub_provider: 'acme', base_url: llm.baseUrl, api_key: 'k1', model_name: 'fake-model' },
    });
    expect(saved.body.success, saved.text).toBe(true);
    const act = await http(b, 'POST', '/api/config/llm-providers/other/activate', {
      token: alice,
      body: { sub_provider: 'acme' },
    });
    expect(act.body.success, act.text).toBe(true);
    const info = await http(a, 'GET', '/api/config/llm-providers/info', { token: alice });
    expect(info.body.data.summary.active).toMatchObject({ source: 'saved', provider_kind: 'other' });
  });

  it('a PAT minted on A works on B until B revokes it; then A refuses it too', async () => {
    const minted = await http(a, 'POST', '/api/auth/pats', { token: alice, body: { name: 'replicas' } });
    expect(minted.status, minted.text).toBe(201);
    const pat = minted.body.data.token as string;
    expect((await http(b, 'GET', '/api/auth/me', { token: pat })).status).toBe(200);
    const revoked = await http(b, 'DELETE', `/api/auth/pats/${minted.body.data.id as string}`, { token: alice });
    expect(revoked.status, revoked.text).toBeLessThan(300);
    for (const base of [a, b]) expect((await http(base, 'GET', '/api/auth/me', { token: pat })).status).toBe(401);
  });

  it('a download link signed by another process of the deployment serves once across both APIs', async () => {
    // This test process, loading the deployment's environment, is one more replica.
    const config = loadConfig(r.env);
    const orm = await initOrm({ clientUrl: r.db.url, poolMax: 1 });
    try {
      const file = await storeDownload(orm.em.fork(), {
        tenant: TENANT,
        name: 'r.csv',
        contentType: 'text/csv',
        bytes: Buffer.from('x\n'),
      });
      const url = await signDownload(config, { fileId: file.id, tenant: TENANT, ttlSeconds: 60, publicOrigin: b });
      const path = new URL(url).pathname;
      const first = await http(b, 'GET', path);
      expect([first.status, first.text]).toEqual([200, 'x\n']);
      const second = await http(a, 'GET', path);
      expect(second.status).toBe(410);
    } finally {
      await orm.close();
    }
  });
});

describe('console sessions', () => {
  const page = (base: string, cookie: string, init: RequestInit = {}) =>
    fetch(`${base}/console/proposals`, {
      redirect: 'manual',
      ...init,
      headers: { ...init.headers, cookie: `platform_console_session=${cookie}` },
    });

  it('a session signed in on A is alice on B, its CSRF token holds there, and signing out on B ends it on A', async () => {
    const { cookie } = await signInAt(a);
    const onB = await page(b, cookie);
    expect(onB.status).toBe(200);
    const html = await onB.text();
    expect(html).toContain('/console/logout');
    // The form token B rendered is the session's, so A's page carries the same one.
    const token = csrfOf(html);
    expect(csrfOf(await (await page(a, cookie)).text())).toBe(token);
    const out = await fetch(`${b}/console/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `platform_console_session=${cookie}`,
      },
      body: new URLSearchParams({ _csrf: token }).toString(),
    });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/console/login?signed_out=1');
    for (const base of [a, b]) {
      const after = await page(base, cookie);
      expect(after.status).toBe(303);
      expect(after.headers.get('location')).toMatch(/^\/console\/login/);
    }
  });
});

describe('lifecycles across both APIs', () => {
  it('a proposal created on A, approved on B and executed on both at once runs its effect once', async () => {
    const created = await http(a, 'POST', '/api/action-review/proposals', {
      token: alice,
      body: {
        action_type: 'prover.request_finding_evidence.v1',
        payload: { finding_id: 'f-replicas', evidence_request: 'Attach the query output.' },
        expected_effect: 'The finding gets an evidence request.',
      },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.proposal_id as string;
    const approved = await http(b, 'POST', `/api/action-review/proposals/${id}/approve`, { token: alice, body: {} });
    expect(approved.status, approved.text).toBe(200);
    const executed = await Promise.all(
      [a, b].map((base) => http(base, 'POST', `/api/action-review/proposals/${id}/execute`, { token: alice })),
    );
    for (const e of executed) expect(e.body.final_status, e.text).toBe('executed');
    const effects = await query<{ n: number }>(
      r.db.url,
      'select count(*)::int as n from prover_decisions where proposal_id = $1',
      [id],
    );
    expect(effects[0]!.n).toBe(1);
  });
});

describe('the workers', () => {
  it("ensure each Schedule once: two workers' starts leave one of each", async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection, namespace: REPLICAS_NAMESPACE });
      const ids: string[] = [];
      for await (const s of client.schedule.list()) ids.push(s.scheduleId);
      expect(ids).toContain(HANDBACK_SWEEP_SCHEDULE_ID);
      expect(ids.length).toBeGreaterThanOrEqual(3);
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      await connection.close();
    }
  });

  it('run each sweep once: one trigger is one run of its workflow, and a hidden blueprint is purged by one run', async () => {
    // The purge sweep's effect: this blueprint, hidden with no mission open, is purged (and reported) once.
    await query(r.db.url, `insert into blueprints (blueprint_id, tenant, name, hidden) values ($1, $2, $3, true)`, [
      'bp-replicas-sweep',
      TENANT,
      'replicas-sweep',
    ]);
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection, namespace: REPLICAS_NAMESPACE });
      const active: string[] = [];
      for await (const s of client.schedule.list()) if (!s.state.paused) active.push(s.scheduleId);
      expect(active).toContain(BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID);
      const before = new Map<string, number>();
      for (const id of active) {
        const handle = client.schedule.getHandle(id);
        before.set(id, (await handle.describe()).info.numActionsTaken);
        await handle.trigger();
      }
      const results = new Map<string, unknown[]>();
      for (const id of active) {
        // Every action the Schedule took (its trigger, and any tick meanwhile), each run to its end.
        const described = await waitFor(`${id} to take its triggered action`, async () => {
          const d = await client.schedule.getHandle(id).describe();
          return d.info.numActionsTaken > before.get(id)! ? d : undefined;
        });
        results.set(id, await runResults(client, described));
        // Each action is one run of the sweep's workflow; no worker started one of its own.
        const query = `WorkflowType = '${described.action.workflowType}'`;
        const runs = await waitFor(`${id}'s runs in visibility`, async () => {
          const ids: string[] = [];
          for await (const run of client.workflow.list({ query })) ids.push(run.workflowId);
          return ids.length >= described.info.numActionsTaken ? ids : undefined;
        });
        expect(runs, id).toHaveLength(described.info.numActionsTaken);
        // Schedule-started ids are `<action's workflow id>-<scheduled time>`.
        for (const runId of runs) expect(runId.startsWith(`${id}-run-`), runId).toBe(true);
      }
      const purged = results
        .get(BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID)!
        .flatMap((res) => (res as { purged: Array<{ blueprint_id: string }> }).purged)
        .filter((p) => p.blueprint_id === 'bp-replicas-sweep');
      expect(purged).toHaveLength(1);
      expect(await query(r.db.url, `select 1 from blueprints where blueprint_id = 'bp-replicas-sweep'`)).toHaveLength(
        0,
      );
    } finally {
      await connection.close();
    }
  }, 120_000);
});

describe('logs across replicas', () => {
  it("bob's log socket on B gets the lines of his requests to A, and A's socket has each once", async () => {
    const onB = await socket(b, bob);
    const onA = await socket(a, bob);
    const me = await http(a, 'GET', '/api/auth/me', { token: bob, headers: { 'x-request-id': 'replicas-rid-1' } });
    expect(me.status).toBe(200);
    const seen = await onB.waitFor((m) => m.type === 'log' && m.line.request_id === 'replicas-rid-1');
    expect(seen.line.principal_id).toBeTruthy();
    // A later request's line on A's socket: by then a relayed copy of the first would have come back too.
    await http(a, 'GET', '/api/auth/me', { token: bob, headers: { 'x-request-id': 'replicas-rid-2' } });
    await onB.waitFor((m) => m.type === 'log' && m.line.request_id === 'replicas-rid-2');
    await onA.waitFor((m) => m.type === 'log' && m.line.request_id === 'replicas-rid-2');
    const firstOnA = onA.messages.filter((m) => m.type === 'log' && m.line.request_id === 'replicas-rid-1');
    const firstOnB = onB.messages.filter((m) => m.type === 'log' && m.line.request_id === 'replicas-rid-1');
    expect(firstOnA.length).toBeGreaterThan(0);
    expect(firstOnA.length).toBe(firstOnB.length);
  });
});
