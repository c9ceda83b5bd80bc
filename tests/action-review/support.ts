import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { Client } from '@temporalio/client';
import { expect } from 'vitest';
import type { FakeIdp } from '../helpers/fake-idp.js';
import { startOidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';

export const INTERNAL_TOKEN = 'internal-secret';
export const SERVICE_TOKEN = 'service-secret';

export interface ReviewStack {
  stack: Stack;
  idp: FakeIdp;
  /** IdP tokens: two reviewers, a member without APPROVE_AGENT_ACTION, an app-only client, another tenant's reviewer. */
  tokens: { rita: string; ravi: string; member: string; app: string; foreign: string };
  agent(botId: string, threadId: string): Promise<string>;
  close(): Promise<void>;
}

/** A stack with OIDC auth against a local IdP, internal and service tokens, and test identities. */
export async function startReviewStack(env: Record<string, string> = {}, logLines?: string[]): Promise<ReviewStack> {
  const oidc = await startOidcStack({
    logLines,
    dataDirPrefix: 'review-test-',
    env: { PLATFORM_INTERNAL_TOKEN: INTERNAL_TOKEN, PLATFORM_SERVICE_TOKEN: SERVICE_TOKEN, ...env },
    tokenExpiresIn: '1h',
    tokens: {
      rita: { sub: 'rita', name: 'Rita Reviewer', roles: ['reviewer'] },
      ravi: { sub: 'ravi', name: 'Ravi Reviewer', roles: ['reviewer'] },
      member: { sub: 'mo', name: 'Mo Member', roles: ['member'] },
      app: { sub: 'ci-bot', azp: 'ci-bot', gty: 'client-credentials', roles: ['admin'] },
      foreign: { sub: 'fay', name: 'Fay Foreign', tenant: 'other-tenant', roles: ['reviewer'] },
    },
  });
  const { stack, idp, tokens } = oidc;
  return {
    stack,
    idp,
    tokens,
    async agent(botId, threadId) {
      const res = await http(stack.url, 'POST', '/api/internal/sandbox-tokens', {
        body: { bot_id: botId, thread_id: threadId },
        headers: { 'x-platform-internal-token': INTERNAL_TOKEN },
      });
      expect(res.status).toBe(201);
      return res.body.data.token as string;
    },
    close: () => oidc.close(),
  };
}

export const learning = (n = 1) => ({
  action_type: 'learning.adopt.v1',
  payload: { learning_id: `learning-${n}`, title: 'Prefer ISO dates', content: 'Always write dates as YYYY-MM-DD.' },
  expected_effect: 'The learning is adopted for the team.',
});

export const ticket = (title = 'Broken export') => ({
  action_type: 'ticket.write.v1',
  payload: { title, body: 'The CSV export drops the header row.', labels: ['bug'] },
  expected_effect: 'One issue is created in the tracker.',
});

/** Creates a proposal through the route as the given person; answers its id. */
export async function propose(url: string, token: string, body: Record<string, unknown>): Promise<string> {
  const res = await http(url, 'POST', '/api/action-review/proposals', { token, body });
  expect(res.status, res.text).toBe(201);
  return res.body.data.proposal_id as string;
}

/** Calls the action_review tool as an agent. */
export function tool(url: string, token: string, args: Record<string, unknown>) {
  return http(url, 'POST', '/api/tool_call', { token, body: { tool: 'action_review', arguments: args } });
}

export const path = (id: string, suffix = '') => `/api/action-review/proposals/${id}${suffix}`;

/** Polls until `check` answers a value (deterministic waits on state, never on a fixed time). */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** With RECORD_HISTORIES=1, saves a workflow's history for the replay suite. */
export async function recordHistory(client: Client, workflowId: string, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const file = fileURLToPath(new URL(`../histories/${name}.json`, import.meta.url));
  await writeFile(file, historyToJSON(history) + '\n');
}

export interface FakeTracker {
  url: string;
  requests: Array<{ headers: IncomingMessage['headers']; body: Record<string, unknown> }>;
  /** `ok` creates issues; `hang` accepts the request and never answers; `reject` answers 422; `fail` answers 502 (a gateway page). */
  mode: 'ok' | 'hang' | 'reject' | 'fail';
  /** Issues created (mode `ok`) per idempotency key. An issue counts once the request has arrived, even if the caller is gone before the answer. */
  created: Map<string, number>;
  close(): Promise<void>;
}

/**
 * A local issue tracker on loopback that counts the issues it was asked to create. With `delayMs`
 * it is slow: it creates the issue at once and answers that much later.
 */
export async function startFakeTracker(options: { delayMs?: number } = {}): Promise<FakeTracker> {
  const hanging: ServerResponse[] = [];
  const tracker: FakeTracker = { url: '', requests: [], mode: 'ok', created: new Map(), close: async () => {} };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/issues') return void res.writeHead(404).end();
      tracker.requests.push({ headers: req.headers, body: JSON.parse(raw) as Record<string, unknown> });
      if (tracker.mode === 'hang') return void hanging.push(res);
      if (tracker.mode === 'reject')
        return void res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"project is archived"}');
      if (tracker.mode === 'fail')
        return void res
          .writeHead(502, { 'content-type': 'text/html' })
          .end('<html>502 Bad Gateway: tracker-internal-hostname</html>');
      const n = tracker.requests.length;
      const key = String(req.headers['idempotency-key']);
      tracker.created.set(key, (tracker.created.get(key) ?? 0) + 1);
      const answer = () =>
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ id: `ISSUE-${n}`, url: `http://tracker.local/ISSUE-${n}` }));
      if (!options.delayMs) return answer();
      hanging.push(res); // destroyed by close() if still waiting
      setTimeout(() => !res.destroyed && !res.writableEnded && answer(), options.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tracker.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  tracker.close = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return tracker;
}
