import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setDesktopClock } from '../../shared/desktop/clock.js';
import { query } from '../helpers/db.js';
import { startFakeProvisioner, type FakeProvisioner } from '../helpers/fake-provisioner.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startDemoStack } from './support.js';

const INTERNAL = 'hosted-ai-internal';
let demo: OidcStack<'owner' | 'nameless' | 'stranger' | 'lena' | 'plain' | 'blank'>;
let l: OidcStack;
let u: OidcStack;
let prov: FakeProvisioner;
let stack: Stack;
let limited: Stack;
let unprovisioned: Stack;
let owner: string;
let nameless: string;
let stranger: string;
// Sign-ins are recorded at most once a while per process (shared/auth/store.ts), so each stack's owner is a different person.
let lena: string;
let now = Date.parse('2026-11-25T10:00:00Z');

const envFor = (p: FakeProvisioner | null) => ({
  PLATFORM_INTERNAL_TOKEN: INTERNAL,
  PLATFORM_DEMO_MODE: 'true',
  ...(p
    ? {
        PLATFORM_HOSTED_AI_PROVISIONER_URL: p.baseUrl,
        PLATFORM_HOSTED_AI_PROVISIONER_CLIENT_ID: p.clientId,
        PLATFORM_HOSTED_AI_PROVISIONER_CLIENT_SECRET: p.clientSecret,
      }
    : {}),
});

const setOwner = (s: Stack, email: string, sub = '') =>
  http(s.url, 'PUT', '/api/internal/demo-access/owner', {
    body: { email, email_verified: true, sub },
    headers: { 'x-platform-internal-token': INTERNAL },
  });

beforeAll(async () => {
  setDesktopClock(() => now);
  prov = await startFakeProvisioner();
  demo = await startDemoStack({
    env: envFor(prov),
    tokens: {
      owner: { sub: 'olive', email: 'olive@example.com', name: 'Olive Owner' },
      nameless: { sub: 'nora', email: 'nora@example.com' },
      stranger: { sub: 'root', email: 'root@example.com', name: 'Root', roles: ['admin'] },
      lena: { sub: 'lena', email: 'lena@example.com', name: 'Lena' },
      // A name equal to the login id is a name; a blank one is none.
      plain: { sub: 'pia', email: 'pia@example.com', name: 'pia' },
      blank: { sub: 'bea', email: 'bea@example.com', name: '   ' },
    },
  });
  l = await startDemoStack({ idp: demo.idp, env: envFor(prov) });
  u = await startDemoStack({ idp: demo.idp, env: envFor(null) });
  stack = demo.stack;
  ({ owner, nameless, stranger, lena } = demo.tokens);
  limited = l.stack;
  unprovisioned = u.stack;
  for (const s of [stack, unprovisioned]) expect((await setOwner(s, 'olive@example.com', 'olive')).status).toBe(200);
  expect((await setOwner(limited, 'lena@example.com', 'lena')).status).toBe(200);
});
afterAll(async () => {
  setDesktopClock(undefined);
  await u?.close();
  await l?.close();
  await demo?.close();
  await prov?.close();
});

describe('hosted AI status and activation', () => {
  it('reports an unconfigured provisioned instance, and a plain deployment as unavailable', async () => {
    const res = await http(stack.url, 'GET', '/api/hosted-ai/status', { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      available: true,
      configured: false,
      active: false,
      ai_only: false,
      activated_at: null,
    });
    const off = await http(unprovisioned.url, 'GET', '/api/hosted-ai/status', { token: owner });
    expect(off.body.data).toMatchObject({ available: false, configured: false, active: false });
  });

  it('refuses: 404 not provisioned, 401 without a token, 403 not the owner, 403 profile incomplete', async () => {
    const notProv = await http(unprovisioned.url, 'POST', '/api/hosted-ai/activate', { token: owner });
    expect(notProv.status).toBe(404);
    expect(notProv.body.payload.code).toBe('hosted_ai_not_provisioned');
    const anon = await http(stack.url, 'POST', '/api/hosted-ai/activate');
    expect(anon.status).toBe(401);
    expect(anon.body.error_type).toBe('authentication');
    const admin = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: stranger });
    expect(admin.status).toBe(403);
    expect(admin.body.payload.code).toBe('not_demo_owner');
    // The owner without a name claim: the demo owner is now nora, whose token carries no name.
    expect((await setOwner(stack, 'nora@example.com', 'nora')).status).toBe(409);
    const forced = await http(stack.url, 'PUT', '/api/internal/demo-access/owner', {
      body: { email: 'nora@example.com', email_verified: true, sub: 'nora', force: true },
      headers: { 'x-platform-internal-token': INTERNAL },
    });
    expect(forced.status).toBe(200);
    const incomplete = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: nameless });
    expect(incomplete.status).toBe(403);
    expect(incomplete.body.payload).toMatchObject({ code: 'profile_incomplete', missing: ['name'] });
    expect(prov.hostedKeys).toHaveLength(0);
    expect(await query(stack.db.url, `select key from deployment_settings where key like 'hosted_ai.%'`)).toEqual([]);
    const back = await http(stack.url, 'PUT', '/api/internal/demo-access/owner', {
      body: { email: 'olive@example.com', email_verified: true, sub: 'olive', force: true },
      headers: { 'x-platform-internal-token': INTERNAL },
    });
    expect(back.status).toBe(200);
  });

  it('takes any name, one equal to the login id included; refuses only a missing (blank) one', async () => {
    const forceOwner = (email: string, sub: string) =>
      http(stack.url, 'PUT', '/api/internal/demo-access/owner', {
        body: { email, email_verified: true, sub, force: true },
        headers: { 'x-platform-internal-token': INTERNAL },
      });
    try {
      expect((await forceOwner('bea@example.com', 'bea')).status).toBe(200);
      const blank = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: demo.tokens.blank });
      expect(blank.status).toBe(403);
      expect(blank.body.payload).toMatchObject({ code: 'profile_incomplete', missing: ['name'] });
      expect(prov.hostedKeyRequests).toHaveLength(0);

      // pia's name is her login id: the profile is complete, so the provisioner is asked (and fails here,
      // leaving the one key of this deployment to the owner's test below).
      expect((await forceOwner('pia@example.com', 'pia')).status).toBe(200);
      prov.hostedKeyFails = true;
      const plain = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: demo.tokens.plain });
      expect(plain.status).toBe(503);
      expect(plain.body.payload).not.toMatchObject({ code: 'profile_incomplete' });
      expect(prov.hostedKeyRequests).toEqual([
        { owner_sub: 'pia', owner_email: 'pia@example.com', owner_display_name: 'pia' },
      ]);
    } finally {
      prov.hostedKeyFails = false;
      prov.hostedKeyRequests.length = 0;
      expect((await forceOwner('olive@example.com', 'olive')).status).toBe(200);
    }
    expect(await query(stack.db.url, `select key from deployment_settings where key like 'hosted_ai.%'`)).toEqual([]);
  });

  it('answers 503 when the provisioner fails, storing nothing', async () => {
    prov.hostedKeyFails = true;
    try {
      const res = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: owner });
      expect(res.status).toBe(503);
      expect(res.body.payload.dependency).toBe('hosted_ai_provisioner');
    } finally {
      prov.hostedKeyFails = false;
    }
    expect(await query(stack.db.url, `select key from deployment_settings where key = 'hosted_ai.key'`)).toEqual([]);
  });

  it('issues the key once for the owner, sealed at rest, and is idempotent afterwards', async () => {
    const first = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: owner });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ available: true, configured: true, active: true });
    expect(prov.hostedKeys).toHaveLength(1);
    expect(prov.hostedKeys[0]!.owner).toEqual({
      owner_sub: 'olive',
      owner_email: 'olive@example.com',
      owner_display_name: 'Olive Owner',
    });
    const second = await http(stack.url, 'POST', '/api/hosted-ai/activate', { token: owner });
    expect(second.status).toBe(200);
    expect(second.body.data).toEqual(first.body.data);
    expect(prov.hostedKeys).toHaveLength(1);
    const rows = await query<{ value: { key_id: string; secret_sealed: string } }>(
      stack.db.url,
      `select value from deployment_settings where key = 'hosted_ai.key'`,
    );
    expect(rows[0]!.value.key_id).toBe(prov.hostedKeys[0]!.id);
    expect(JSON.stringify(rows)).not.toMatch(/sk-[0-9a-f]{16}/);
    expect(first.text).not.toMatch(/sk-/);
  });

  it('limits key issuance to 10 provisioner requests a minute (429 with Retry-After)', async () => {
    prov.hostedKeyFails = true;
    const before = prov.count('/v1/hosted/ai-keys');
    try {
      for (let i = 0; i < 10; i++) {
        expect((await http(limited.url, 'POST', '/api/hosted-ai/activate', { token: lena })).status).toBe(503);
      }
      const refused = await http(limited.url, 'POST', '/api/hosted-ai/activate', { token: lena });
      expect(refused.status).toBe(429);
      expect(refused.body.error_type).toBe('too_many_requests');
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(prov.count('/v1/hosted/ai-keys') - before).toBe(10);
    } finally {
      prov.hostedKeyFails = false;
    }
    now += 61_000;
    const ok = await http(limited.url, 'POST', '/api/hosted-ai/activate', { token: lena });
    expect(ok.status).toBe(200);
    expect(ok.body.data.configured).toBe(true);
  });
});

describe('hosted AI credit', () => {
  it('answers 404 when not provisioned and no reading before activation', async () => {
    expect((await http(unprovisioned.url, 'GET', '/api/hosted-ai/credit', { token: owner })).status).toBe(404);
    const none = await http(unprovisioned.url, 'GET', '/api/hosted-ai/status', { token: owner });
    expect(none.body.data.configured).toBe(false);
  });

  it('reads and caches the credit; fresh refreshes readings older than 15 s', async () => {
    const path = '/v1/hosted/credit';
    const before = prov.count(path);
    const first = await http(stack.url, 'GET', '/api/hosted-ai/credit', { token: owner });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      available: true,
      model: 'platform-large',
      max_budget_usd: 20,
      spend_usd: 5,
      used_fraction: 0.25,
      exhausted: false,
      heads_up_due: false,
      percent_used: 25,
    });
    expect(prov.count(path) - before).toBe(1);
    now += 10_000;
    await http(stack.url, 'GET', '/api/hosted-ai/credit?fresh=true', { token: owner });
    expect(prov.count(path) - before).toBe(1);
    now += 10_000;
    await http(stack.url, 'GET', '/api/hosted-ai/credit', { token: owner });
    expect(prov.count(path) - before).toBe(1);
    await http(stack.url, 'GET', '/api/hosted-ai/credit?fresh=true', { token: owner });
    expect(prov.count(path) - before).toBe(2);
    // An exhausted reading makes the hosted AI inactive.
    prov.credit = { ...prov.credit, spend_usd: 20 };
    now += 16_000;
    const exhausted = await http(stack.url, 'GET', '/api/hosted-ai/credit?fresh=1', { token: owner });
    expect(exhausted.body.data.exhausted).toBe(true);
    const status = await http(stack.url, 'GET', '/api/hosted-ai/status', { token: owner });
    expect(status.body.data).toMatchObject({ configured: true, active: false });
    // A provisioner failure answers the cached reading.
    prov.creditFails = true;
    try {
      now += 200_000;
      const cached = await http(stack.url, 'GET', '/api/hosted-ai/credit', { token: owner });
      expect(cached.status).toBe(200);
      expect(cached.body.data.exhausted).toBe(true);
    } finally {
      prov.creditFails = false;
    }
  });
});
