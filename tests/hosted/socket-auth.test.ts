/**
 * Hosted WebSockets take the token also where a browser can put it: the subprotocol `bearer.<token>`
 * in Sec-WebSocket-Protocol (an accepted protocol is echoed) or the `access_token` query parameter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { connectWs, isOpen, type WsOpen } from '../helpers/ws-client.js';
import { aliceAndBob, claims, startHostedStack } from './support.js';

let s: OidcStack<never>;
let idp: FakeIdp;
let stack: Stack;
let alice: string;
let bob: string;
let bobBinding: string;

async function opened(path: string, headers: Record<string, string> = {}): Promise<WsOpen> {
  const r = await connectWs(stack.url, path, headers);
  if (!isOpen(r)) throw new Error(`refused ${r.status}: ${JSON.stringify(r.body)}`);
  expect((await r.waitFor((m) => m.type === 'ready')).channel).toBe(path.split('?')[0]!.slice('/api/ws/'.length));
  return r;
}

beforeAll(async () => {
  s = await startHostedStack();
  ({ stack, idp } = s);
  ({ alice, bob, bobBinding } = await aliceAndBob(s));
});
afterAll(() => s?.close());

describe('WebSocket credentials a browser can send', () => {
  it('accepts the token as the subprotocol bearer.<token> and echoes the accepted protocol', async () => {
    const alone = await opened('/api/ws/log', { 'sec-websocket-protocol': `bearer.${alice}` });
    expect(alone.headers['sec-websocket-protocol']).toBe(`bearer.${alice}`);
    alone.close();
    // With an application protocol offered too, that one is echoed (the token is not).
    const both = await opened('/api/ws/estate-live', { 'sec-websocket-protocol': `platform.v1, bearer.${alice}` });
    expect(both.headers['sec-websocket-protocol']).toBe('platform.v1');
    both.close();
  });

  it('accepts the token as the access_token query parameter (no protocol echoed)', async () => {
    const ws = await opened(`/api/ws/unified?access_token=${encodeURIComponent(alice)}`);
    expect(ws.headers['sec-websocket-protocol']).toBeUndefined();
    ws.close();
  });

  it('refuses a bad token in either place (401) and ambiguous credentials (400)', async () => {
    const forged = await idp.sign(claims('alice'), { foreignKey: true });
    const unbound = await idp.sign(claims('nobody'));
    for (const headers of [
      { 'sec-websocket-protocol': `bearer.${forged}` },
      { 'sec-websocket-protocol': 'bearer.not-a-token' },
    ]) {
      const r = await connectWs(stack.url, '/api/ws/log', headers);
      expect(r.status).toBe(401);
      expect(isOpen(r) ? null : r.body.error_type).toBe('authentication');
    }
    const q = await connectWs(stack.url, `/api/ws/log?access_token=${encodeURIComponent(unbound)}`);
    expect(q.status).toBe(401);
    expect(isOpen(q) ? null : q.body.payload.reason).toBe('identity_link_missing');
    const ambiguous: Array<{ path: string; headers: Record<string, string> }> = [
      { path: '/api/ws/log', headers: { 'sec-websocket-protocol': `bearer.${alice}, bearer.${bob}` } },
      { path: `/api/ws/log?access_token=${alice}&access_token=${bob}`, headers: {} },
      { path: '/api/ws/log?access_token=', headers: {} },
      { path: `/api/ws/log?access_token=${bob}`, headers: { 'sec-websocket-protocol': `bearer.${alice}` } },
    ];
    for (const { path, headers } of ambiguous) {
      const r = await connectWs(stack.url, path, headers);
      expect(r.status, path).toBe(400);
      expect(isOpen(r) ? null : r.body.payload.reason).toBe('ambiguous_websocket_credential');
    }
  });

  it('prefers the Authorization header over the query parameter', async () => {
    const ws = await opened(`/api/ws/log?access_token=not-a-token`, { authorization: `Bearer ${alice}` });
    ws.close();
  });

  it('rechecks a socket opened with a subprotocol or query token: a revoke closes it', async () => {
    const viaProtocol = await opened('/api/ws/log', { 'sec-websocket-protocol': `bearer.${bob}` });
    const viaQuery = await opened(`/api/ws/estate-live?access_token=${encodeURIComponent(bob)}`);
    const res = await http(stack.url, 'POST', `/api/hosted-identities/${bobBinding}/revoke`, {
      token: alice,
      body: { operation_id: 'rev-socket-auth' },
    });
    expect(res.status).toBe(200);
    expect((await viaProtocol.closed).code).toBe(4401);
    expect((await viaQuery.closed).code).toBe(4401);
    const again = await connectWs(stack.url, `/api/ws/log?access_token=${encodeURIComponent(bob)}`);
    expect(again.status).toBe(401);
  });
});
