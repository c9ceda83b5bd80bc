/**
 * Hosted-mode WebSockets (spec, Events; Hosted identity): the upgrade needs a verified assertion and
 * an active identity link; estate-live shows the caller's workflows, log the caller's lines; terminals
 * answer not_available_here; a revoke closes open sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { connectWs, isOpen, type WsOpen } from '../helpers/ws-client.js';
import { aliceAndBob, claims, startHostedStack, startOidcTwin } from './support.js';

let s: OidcStack<never>;
let twin: OidcStack<never>;
let idp: FakeIdp;
let stack: Stack;
let oidc: Stack;
let alice: string;
let bob: string;
let bobBinding: string;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function open(path: string, token: string): Promise<WsOpen> {
  const r = await connectWs(stack.url, path, bearer(token));
  if (!isOpen(r)) throw new Error(`refused ${r.status}: ${JSON.stringify(r.body)}`);
  return r;
}

beforeAll(async () => {
  s = await startHostedStack({ logLines: [], worker: true });
  twin = await startOidcTwin(s.idp);
  ({ stack, idp } = s);
  oidc = twin.stack;
  ({ alice, bob, bobBinding } = await aliceAndBob(s));
});
afterAll(async () => {
  await twin?.close();
  await s?.close();
});

describe('hosted WebSockets', () => {
  it('refuses the upgrade without a verified assertion and an active link', async () => {
    const none = await connectWs(stack.url, '/api/ws/log');
    expect(none.status).toBe(401);
    expect(isOpen(none) ? null : none.body.error_type).toBe('authentication');
    const unbound = await connectWs(stack.url, '/api/ws/estate-live', bearer(await idp.sign(claims('nobody'))));
    expect(unbound.status).toBe(401);
    expect(isOpen(unbound) ? null : unbound.body.payload.reason).toBe('identity_link_missing');
    const otherInstallation = await connectWs(
      stack.url,
      '/api/ws/log',
      bearer(await idp.sign(claims('bob', { installation: 'inst-2' }))),
    );
    expect(otherInstallation.status).toBe(401);
    const forged = await connectWs(
      stack.url,
      '/api/ws/log',
      bearer(await idp.sign(claims('bob'), { foreignKey: true })),
    );
    expect(forged.status).toBe(401);
    const unknown = await connectWs(stack.url, '/api/ws/nothing', bearer(bob));
    expect(unknown.status).toBe(404);
  });

  it('answers not_available_here for the terminals and outside hosted mode', async () => {
    for (const path of ['/api/ws/sandbox-terminal', '/api/ws/cli-terminal']) {
      const r = await connectWs(stack.url, path, bearer(bob));
      expect(r.status).toBe(501);
      expect(isOpen(r) ? null : r.body.error_type).toBe('not_available_here');
    }
    const r = await connectWs(oidc.url, '/api/ws/log', bearer(await idp.sign({ sub: 'ann' })));
    expect(r.status).toBe(501);
  });

  it("estate-live shows the caller's workflows only", async () => {
    const job = await http(stack.url, 'POST', '/api/jobs/echo', { token: bob, body: { message: 'hello' } });
    expect([200, 202]).toContain(job.status);
    const jobId = job.body.data.job_id as string;
    const ws = await open('/api/ws/estate-live', bob);
    expect((await ws.waitFor((m) => m.type === 'ready')).channel).toBe('estate-live');
    const frame = await ws.waitFor(
      (m) => m.type === 'estate' && m.workflows.some((w: { workflow_id: string }) => w.workflow_id.includes(jobId)),
    );
    const entry = frame.workflows.find((w: { workflow_id: string }) => w.workflow_id.includes(jobId));
    expect(entry.workflow_type).toBe('echoWorkflow');
    expect(typeof entry.status).toBe('string');
    ws.close();
    // Alice sees her own estate, without Bob's job.
    const theirs = await open('/api/ws/estate-live', alice);
    const first = await theirs.waitFor((m) => m.type === 'estate');
    expect(first.workflows.some((w: { workflow_id: string }) => w.workflow_id.includes(jobId))).toBe(false);
    theirs.close();
  });

  it("log streams the caller's request lines only", async () => {
    const ws = await open('/api/ws/log', bob);
    await ws.waitFor((m) => m.type === 'ready');
    expect((await http(stack.url, 'GET', '/api/auth/me', { token: alice })).status).toBe(200);
    expect((await http(stack.url, 'GET', '/api/auth/me', { token: bob })).status).toBe(200);
    const line = await ws.waitFor((m) => m.type === 'log' && m.line.path === '/api/auth/me');
    expect(line.line.principal_id).toBe('bob');
    expect(line.line.status).toBe(200);
    expect(ws.messages.some((m) => m.type === 'log' && m.line.principal_id === 'alice')).toBe(false);
    ws.close();
  });

  it('rechecks while open: a link revoked elsewhere (another API process) closes the socket', async () => {
    const carolInvite = await http(stack.url, 'POST', '/api/hosted-identities/invitations', {
      token: alice,
      body: { subject: 'carol' },
    });
    expect(carolInvite.status).toBe(201);
    const carol = await idp.sign(claims('carol'));
    const ws = await open('/api/ws/estate-live', carol);
    await ws.waitFor((m) => m.type === 'ready');
    // Revoked straight in the database: no in-process notice, only the periodic recheck sees it.
    await stack.api.deps.orm.em
      .getConnection()
      .execute(`update hosted_identity_bindings set state = 'revoked', revoked_at = now() where binding_id = ?`, [
        carolInvite.body.data.binding_id,
      ]);
    const closed = await ws.closed;
    expect(closed.code).toBe(4401);
    expect(closed.reason).toMatch(/revoked/);
  });

  it('closes open sockets when the link is revoked', async () => {
    const log = await open('/api/ws/log', bob);
    const estate = await open('/api/ws/unified', bob);
    await log.waitFor((m) => m.type === 'ready');
    expect((await estate.waitFor((m) => m.type === 'ready')).channel).toBe('unified');
    const res = await http(stack.url, 'POST', `/api/hosted-identities/${bobBinding}/revoke`, {
      token: alice,
      body: { operation_id: 'rev-ws' },
    });
    expect(res.status).toBe(200);
    expect((await log.closed).code).toBe(4401);
    expect((await estate.closed).code).toBe(4401);
    // And a new upgrade is refused.
    const again = await connectWs(stack.url, '/api/ws/log', bearer(bob));
    expect(again.status).toBe(401);
    expect(isOpen(again) ? null : again.body.payload.reason).toBe('identity_link_revoked');
  });
});
