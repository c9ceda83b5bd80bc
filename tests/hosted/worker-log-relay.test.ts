/**
 * Worker log lines reach the API's log WebSocket through PostgreSQL NOTIFY on the tenant's channel
 * (shared/log-relay.ts). The "worker" here is the relay publisher fed lines directly (as a worker
 * process's logger would), not this process's logger, so only the relay can carry them to the socket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_RELAY_BYTES,
  relayPayload,
  startLogRelayPublisher,
  type LogRelayPublisher,
} from '../../shared/log-relay.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { connectWs, isOpen, type WsOpen } from '../helpers/ws-client.js';
import { aliceAndBob, startHostedStack, TENANT } from './support.js';

let s: OidcStack<never>;
let stack: Stack;
let alice: string;
let bob: string;
let bobId: string;
let aliceId: string;
const publishers: LogRelayPublisher[] = [];

/** A relay publisher for `tenant` and the function that "logs" one worker line through it. */
function fakeWorker(tenant: string) {
  let emit: (line: string) => void = () => {};
  const publisher = startLogRelayPublisher({
    databaseUrl: stack.db.url,
    tenant,
    subscribe: (listener) => {
      emit = listener;
      return () => (emit = () => {});
    },
  });
  publishers.push(publisher);
  return (fields: Record<string, unknown>) =>
    emit(JSON.stringify({ time: new Date().toISOString(), level: 'info', service: 'worker', ...fields }));
}

beforeAll(async () => {
  s = await startHostedStack();
  stack = s.stack;
  ({ alice, bob } = await aliceAndBob(s));
  bobId = (await http(stack.url, 'GET', '/api/auth/me', { token: bob })).body.data.id;
  aliceId = (await http(stack.url, 'GET', '/api/auth/me', { token: alice })).body.data.id;
  expect(bobId).toBeTruthy();
  expect(aliceId).not.toBe(bobId);
});
afterAll(async () => {
  for (const p of publishers) await p.close();
  await s?.close();
});

describe('worker log lines on the log WebSocket', () => {
  it("delivers the worker's lines naming the caller, not another caller's nor another tenant's", async () => {
    const r = await connectWs(stack.url, '/api/ws/log', { authorization: `Bearer ${bob}` });
    if (!isOpen(r)) throw new Error(`refused ${r.status}`);
    const ws: WsOpen = r;
    await ws.waitFor((m) => m.type === 'ready');
    const acmeWorker = fakeWorker(TENANT);
    const otherWorker = fakeWorker('other-tenant');
    otherWorker({ msg: 'other tenant line', principal_id: bobId });
    acmeWorker({ msg: 'alice activity line', principal_id: aliceId, workflow_id: 'wf-alice' });
    acmeWorker({ msg: 'no principal or workflow' });
    acmeWorker({ msg: 'bob activity line', principal_id: bobId, workflow_id: 'wf-bob', activity_type: 'step' });
    const line = (await ws.waitFor((m) => m.type === 'log' && m.line.msg === 'bob activity line')).line;
    expect(line).toMatchObject({ service: 'worker', workflow_id: 'wf-bob', activity_type: 'step' });
    // A long line arrives cut to its identifying fields (NOTIFY payloads are bounded).
    acmeWorker({ msg: 'x'.repeat(20_000), principal_id: bobId, detail: 'y'.repeat(20_000) });
    acmeWorker({ msg: 'bob last line', principal_id: bobId });
    await ws.waitFor((m) => m.type === 'log' && m.line.msg === 'bob last line');
    const msgs = ws.messages.filter((m) => m.type === 'log' && m.line.service === 'worker').map((m) => m.line);
    expect(msgs.map((l) => (l.truncated ? 'truncated' : l.msg))).toEqual([
      'bob activity line',
      'truncated',
      'bob last line',
    ]);
    const cut = msgs[1];
    expect(cut.detail).toBeUndefined();
    expect(cut.principal_id).toBe(bobId);
    expect(cut.msg).toBe('x'.repeat(2000));
    ws.close();
  });
});

describe('relay payloads', () => {
  it('relays only lines naming a workflow or principal, bounded in bytes', () => {
    expect(relayPayload('not json')).toBeNull();
    expect(relayPayload(JSON.stringify({ msg: 'plain' }))).toBeNull();
    const small = JSON.stringify({ msg: 'hi', workflow_id: 'w' });
    expect(relayPayload(small)).toBe(small);
    const big = relayPayload(JSON.stringify({ msg: 'é'.repeat(10_000), workflow_id: 'w', extra: 'z'.repeat(9000) }))!;
    expect(Buffer.byteLength(big)).toBeLessThanOrEqual(MAX_RELAY_BYTES);
    expect(JSON.parse(big)).toMatchObject({ truncated: true, workflow_id: 'w' });
    expect(JSON.parse(big).extra).toBeUndefined();
  });
});
