import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startDemoStack } from './support.js';

const INTERNAL = 'demo-internal-token';
let s: OidcStack<'owner' | 'stranger' | 'admin' | 'staff'>;
let p: OidcStack;
let stack: Stack;
let plain: Stack;
let owner: string;
let stranger: string;
let admin: string;
let staff: string;

const internal = { 'x-platform-internal-token': INTERNAL };
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

beforeAll(async () => {
  s = await startDemoStack({
    env: { PLATFORM_INTERNAL_TOKEN: INTERNAL, PLATFORM_DEMO_MODE: 'true' },
    tokens: {
      owner: { sub: 'olive', email: 'olive@example.com', name: 'Olive', roles: ['member'] },
      stranger: { sub: 'sam', email: 'sam@example.com', roles: ['member'] },
      admin: { sub: 'root', roles: ['admin'] },
      staff: { sub: 'stu', roles: ['staff'] },
    },
  });
  p = await startDemoStack({ idp: s.idp, env: { PLATFORM_INTERNAL_TOKEN: INTERNAL } });
  stack = s.stack;
  ({ owner, stranger, admin, staff } = s.tokens);
  plain = p.stack;
});
afterAll(async () => {
  await p?.close();
  await s?.close();
});

const setOwner = (body: Record<string, unknown>, s = stack) =>
  http(s.url, 'PUT', '/api/internal/demo-access/owner', { body, headers: internal });

describe('demo gate', () => {
  it('refuses everyone but admins and staff while the demo has no owner', async () => {
    const res = await http(stack.url, 'GET', '/api/agents', { token: stranger });
    expect(res.status).toBe(403);
    expect(res.body.error_type).toBe('demo_access_denied');
    expect(res.body.error).toMatch(/^demo_access_denied/);
    expect(res.body.payload).toEqual({
      reason: 'no_demo_owner',
      detail: expect.any(String),
      redirect_to: '/demo/access-denied',
    });
    expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
    expect((await http(stack.url, 'GET', '/api/agents', { token: admin })).status).toBe(200);
    expect((await http(stack.url, 'GET', '/api/agents', { token: staff })).status).toBe(200);
  });

  it('admits the owner (by e-mail before a sub is known, then by sub) and refuses another person', async () => {
    expect((await setOwner({ email: 'olive@example.com', email_verified: true })).status).toBe(200);
    // The owner's sign-in is recorded on their first request; matching by address needs that record.
    expect((await http(stack.url, 'GET', '/api/agents', { token: owner })).status).toBe(200);
    expect((await http(stack.url, 'GET', '/api/agents', { token: owner })).status).toBe(200);
    const set = await setOwner({ email: 'olive@example.com', email_verified: true, sub: 'olive' });
    expect(set.body.data.owner_sub).toBe('olive');
    expect((await http(stack.url, 'GET', '/api/agents', { token: owner })).status).toBe(200);

    const api = await http(stack.url, 'POST', '/api/agents', {
      token: stranger,
      body: { name: 'x', instructions: 'y' },
    });
    expect(api.status).toBe(403);
    expect(api.body.error_type).toBe('demo_access_denied');
    expect(api.body.payload.reason).toBe('not_demo_owner');
    expect(await query(stack.db.url, `select id from agents where name = 'x'`)).toEqual([]);
  });

  it('redirects a denied browser page load with 303 to the refusal page', async () => {
    const res = await fetch(`${stack.url}/api/agents`, {
      headers: { accept: BROWSER_ACCEPT, authorization: `Bearer ${stranger}` },
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/demo/access-denied');
    // The owner's browser passes.
    const ok = await fetch(`${stack.url}/api/agents`, {
      headers: { accept: BROWSER_ACCEPT, authorization: `Bearer ${owner}` },
      redirect: 'manual',
    });
    expect(ok.status).toBe(200);
  });

  it('leaves public routes open and does nothing outside demo mode', async () => {
    const mode = await http(stack.url, 'GET', '/api/config/demo-mode');
    expect(mode.status).toBe(200);
    expect(mode.body.data.demo_mode).toBe(true);
    expect((await http(stack.url, 'GET', '/healthz')).status).not.toBe(403);
    expect((await http(plain.url, 'GET', '/api/agents', { token: stranger })).status).toBe(200);
  });
});

function tarList(bytes: Buffer, gz = false): { dir: string; files: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'demo-export-'));
  const file = join(dir, gz ? 'a.tar.gz' : 'a.tar');
  writeFileSync(file, bytes);
  const listed = execFileSync('tar', [gz ? '-tzf' : '-tf', file], { encoding: 'utf8' })
    .trim()
    .split('\n');
  const out = join(dir, 'out');
  execFileSync('mkdir', [out]);
  execFileSync('tar', [gz ? '-xzf' : '-xf', file, '-C', out]);
  return { dir: out, files: listed };
}

describe('demo-state exports', () => {
  beforeAll(async () => {
    // Records of the deployment tenant: 450 messages in one thread (three pages), an agent, a blueprint.
    await query(
      stack.db.url,
      `insert into agents (id, tenant, name, description, instructions, source, created_by, created_at, updated_at)
       values ('demo-agent', 'default', 'Demo agent', 'Shows things', 'Be brief.', 'api', 'root', now(), now())`,
    );
    await query(
      stack.db.url,
      `insert into conversation_threads (id, tenant, title) values ('th-1', 'default', 'First thread'), ('th-x', 'other', 'Other tenant')`,
    );
    await query(
      stack.db.url,
      `insert into conversation_messages (id, thread_id, role, author_kind, author_id, content, created_at)
       select gen_random_uuid(), 'th-1', 'user', 'person', 'olive', 'message ' || g, now() + g * interval '1 second'
       from generate_series(1, 450) g`,
    );
    await query(
      stack.db.url,
      `insert into blueprints (blueprint_id, tenant, name, created_by) values ('bp-1', 'default', 'sales-demo', 'root')`,
    );
  });

  it('refuses without the internal token', async () => {
    for (const path of ['export-state', 'export-content', 'export-microapps']) {
      const res = await http(stack.url, 'POST', `/api/internal/demo-state/${path}`, { token: admin });
      expect(res.status).toBe(401);
      expect(res.body.payload.reason).toBe('internal_token_absent');
    }
  });

  it('export-state streams a tar readable by tar, one JSON file per page, with no-store headers', async () => {
    const res = await fetch(`${stack.url}/api/internal/demo-state/export-state`, { method: 'POST', headers: internal });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('pragma')).toBe('no-cache');
    expect(res.headers.get('content-type')).toBe('application/x-tar');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const { dir, files } = tarList(Buffer.from(await res.arrayBuffer()));
    try {
      expect(files).toContain('manifest.json');
      expect(files.filter((f) => f.startsWith('state/conversation_messages/')).sort()).toEqual([
        'state/conversation_messages/000001.json',
        'state/conversation_messages/000002.json',
        'state/conversation_messages/000003.json',
      ]);
      const messages = readdirSync(join(dir, 'state/conversation_messages')).flatMap(
        (f) => JSON.parse(readFileSync(join(dir, 'state/conversation_messages', f), 'utf8')) as unknown[],
      );
      expect(messages).toHaveLength(450);
      const threads = JSON.parse(readFileSync(join(dir, 'state/conversation_threads/000001.json'), 'utf8'));
      expect(threads.map((t: { id: string }) => t.id)).toEqual(['th-1']);
      const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
      expect(manifest.tables.conversation_messages).toEqual({ rows: 450, pages: 3 });
      const agents = JSON.parse(readFileSync(join(dir, 'state/agents/000001.json'), 'utf8')) as Array<{ id: string }>;
      expect(agents.map((a) => a.id)).toContain('demo-agent');
      expect(manifest.tables.agents).toEqual({ rows: agents.length, pages: 1 });
      expect(manifest.tenant).toBe('default');
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  });

  it('export-content streams Markdown with agents, threads and their messages, and blueprints', async () => {
    const res = await fetch(`${stack.url}/api/internal/demo-state/export-content`, {
      method: 'POST',
      headers: internal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('pragma')).toBe('no-cache');
    expect(res.headers.get('content-type')).toMatch(/^text\/markdown/);
    const text = await res.text();
    expect(text).toContain('### Demo agent (`demo-agent`)');
    expect(text).toContain('> Be brief.');
    expect(text).toContain('### First thread (`th-1`)');
    expect(text.indexOf('message 1\n')).toBeLessThan(text.indexOf('message 450\n'));
    expect(text).toContain('message 450');
    expect(text).not.toContain('Other tenant');
    expect(text).toContain('- sales-demo (`bp-1`)');
  });

  it('export-microapps streams a gzip tar of flows and blueprints readable by tar -xzf', async () => {
    const res = await fetch(`${stack.url}/api/internal/demo-state/export-microapps`, {
      method: 'POST',
      headers: internal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('pragma')).toBe('no-cache');
    expect(res.headers.get('content-type')).toBe('application/gzip');
    const { dir, files } = tarList(Buffer.from(await res.arrayBuffer()), true);
    try {
      expect(files.sort()).toEqual(['blueprints/sales-demo.json', 'manifest.json']);
      const bp = JSON.parse(readFileSync(join(dir, 'blueprints/sales-demo.json'), 'utf8'));
      expect(bp).toMatchObject({ blueprint_id: 'bp-1', name: 'sales-demo', grants: [] });
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  });
});
