import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { learning, propose } from '../action-review/support.js';
import { cookieOf, csrfOf, signInOverHttp, startConsoleStack, type ConsoleStack } from './support.js';

let c: ConsoleStack;

beforeAll(async () => {
  c = await startConsoleStack();
});
afterAll(async () => {
  await c?.close();
});

const get = (path: string, cookie?: string, headers: Record<string, string> = {}) =>
  fetch(`${c.stack.url}${path}`, {
    redirect: 'manual',
    headers: { ...headers, ...(cookie ? { cookie: `platform_console_session=${cookie}` } : {}) },
  });
const post = (path: string, cookie: string | undefined, form: Record<string, string>) =>
  fetch(`${c.stack.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie ? { cookie: `platform_console_session=${cookie}` } : {}),
    },
    body: new URLSearchParams(form).toString(),
  });
const proposalStatus = async (id: string) =>
  (
    await query<{ status: string }>(
      c.stack.db.url,
      'select status from action_review_proposals where proposal_id = $1',
      [id],
    )
  )[0]?.status;

describe('console over plain HTTP', () => {
  it('sends a strict CSP with no inline script or style, and keeps the console out of the API document', async () => {
    const { cookie } = await signInOverHttp(c);
    const res = await get('/console/proposals', cookie);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const page = await res.text();
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(page).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    const css = /href="(\/console\/static\/console\.[0-9a-f]{12}\.css)"/.exec(page)![1]!;
    const asset = await get(css);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('text/css');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    const doc = await http(c.stack.url, 'GET', '/openapi.json');
    expect(Object.keys(doc.body.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
  });

  it('sets the session cookie HttpOnly and SameSite=Lax, Secure only outside loopback', async () => {
    const local = await signInOverHttp(c);
    expect(local.attributes).toMatch(/httponly/i);
    expect(local.attributes).toMatch(/samesite=lax/i);
    expect(local.attributes).toMatch(/path=\//i);
    expect(local.attributes).not.toMatch(/secure/i);
    const remote = await signInOverHttp(c, { 'x-forwarded-host': 'console.example.com', 'x-forwarded-proto': 'https' });
    expect(remote.attributes).toMatch(/;\s*secure/i);
    expect(remote.attributes).toMatch(/httponly/i);
    expect(remote.attributes).toMatch(/samesite=lax/i);
    // The session lives in PostgreSQL under the cookie's hash, never the cookie itself.
    const rows = await query<{ id_hash: string; principal_id: string }>(
      c.stack.db.url,
      'select id_hash, principal_id from console_sessions',
    );
    expect(rows.some((r) => r.principal_id === 'olivia')).toBe(true);
    expect(rows.some((r) => r.id_hash === local.cookie)).toBe(false);
  });

  it('refuses a sign-in whose state is unknown, and sends visitors without a session to the sign-in page', async () => {
    const callback = await get('/console/callback?code=abc&state=forged');
    expect(callback.status).toBe(401);
    expect(await callback.text()).toContain('unknown, already used or expired');
    expect(cookieOf(callback.headers, 'platform_console_session')).toBeNull();
    const anonymous = await get('/console/proposals?status=requested');
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe(
      '/console/login?return_to=%2Fconsole%2Fproposals%3Fstatus%3Drequested',
    );
  });

  it('refuses a form without the session’s CSRF token and leaves the proposal undecided', async () => {
    const id = await propose(c.stack.url, c.tokens.rita, learning(1));
    const { cookie } = await signInOverHttp(c);
    const page = await get(`/console/proposals/${id}`, cookie);
    expect(page.status).toBe(200);
    const token = csrfOf(await page.text());
    const missing = await post(`/console/proposals/${id}/reject`, cookie, { reason: 'no' });
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain('CSRF');
    const wrong = await post(`/console/proposals/${id}/reject`, cookie, { reason: 'no', _csrf: `${token}x` });
    expect(wrong.status).toBe(403);
    // Another session's token does not fit this session.
    const other = await signInOverHttp(c);
    const otherToken = csrfOf(await (await get(`/console/proposals/${id}`, other.cookie)).text());
    expect((await post(`/console/proposals/${id}/reject`, cookie, { reason: 'no', _csrf: otherToken })).status).toBe(
      403,
    );
    // Without a session cookie at all (a cross-site post): back to sign-in, nothing decided.
    expect((await post(`/console/proposals/${id}/reject`, undefined, { reason: 'no', _csrf: token })).status).toBe(303);
    expect(await proposalStatus(id)).toBe('requested');
    const ok = await post(`/console/proposals/${id}/reject`, cookie, { reason: 'not now', _csrf: token });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe(`/console/proposals/${id}?done=rejected`);
    expect(await proposalStatus(id)).toBe('rejected');
  });

  it('reads a form only for a signed-in session: others go to sign-in whatever they sent', async () => {
    const id = await propose(c.stack.url, c.tokens.rita, learning(1));
    const raw = (cookie: string | undefined, body: string, type: string) =>
      fetch(`${c.stack.url}/console/proposals/${id}/reject`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': type, ...(cookie ? { cookie: `platform_console_session=${cookie}` } : {}) },
        body,
      });
    const large = `reason=${'x'.repeat(1024 * 1024)}`;
    for (const [body, type] of [
      [large, 'application/x-www-form-urlencoded'],
      ['{"reason":', 'application/json'],
      ['reject', 'text/plain'],
    ] as const) {
      const anonymous = await raw(undefined, body, type);
      expect(anonymous.status).toBe(303);
      expect(anonymous.headers.get('location')).toMatch(/^\/console\/login\?return_to=/);
    }
    const { cookie } = await signInOverHttp(c);
    const tooLarge = await raw(cookie, large, 'application/x-www-form-urlencoded');
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get('content-type')).toMatch(/^text\/html/);
    const malformed = await raw(cookie, '{"reason":', 'application/json');
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('not valid JSON');
    expect((await raw(cookie, 'reject', 'text/plain')).status).toBe(415);
    expect(await proposalStatus(id)).toBe('requested');
  });

  it('refuses a bad form with 400 and a decided proposal with its reason', async () => {
    const id = await propose(c.stack.url, c.tokens.rita, learning(2));
    const { cookie } = await signInOverHttp(c);
    const token = csrfOf(await (await get(`/console/proposals/${id}`, cookie)).text());
    const bad = await post(`/console/proposals/${id}/approve`, cookie, { _csrf: token, expected_version: 'seven' });
    expect(bad.status).toBe(400);
    expect(await proposalStatus(id)).toBe('requested');
    const stale = await post(`/console/proposals/${id}/approve`, cookie, { _csrf: token, expected_version: '99' });
    expect(stale.status).toBe(409);
    expect(await stale.text()).toContain('decision_context_mismatch');
    expect(await proposalStatus(id)).toBe('requested');
  });

  it('filters the inbox by status and pages through it', async () => {
    const { cookie } = await signInOverHttp(c);
    const ids = [
      await propose(c.stack.url, c.tokens.rita, learning(11)),
      await propose(c.stack.url, c.tokens.rita, learning(12)),
    ];
    const token = csrfOf(await (await get(`/console/proposals/${ids[0]}`, cookie)).text());
    expect((await post(`/console/proposals/${ids[0]}/reject`, cookie, { reason: 'r', _csrf: token })).status).toBe(303);
    const rejected = await (await get('/console/proposals?status=rejected&limit=100', cookie)).text();
    expect(rejected).toContain(`/console/proposals/${ids[0]}"`);
    expect(rejected).not.toContain(`/console/proposals/${ids[1]}"`);
    expect(rejected).toMatch(/name="status" value="rejected"\s+checked/);
    const requested = await (await get('/console/proposals?status=requested&limit=100', cookie)).text();
    expect(requested).toContain(`/console/proposals/${ids[1]}"`);
    expect(requested).not.toContain(`/console/proposals/${ids[0]}"`);
    const first = await (await get('/console/proposals?limit=1', cookie)).text();
    const total = Number(/Showing 1–1 of (\d+)\./.exec(first)![1]);
    expect(total).toBeGreaterThanOrEqual(2);
    expect(first).toContain('href="/console/proposals?offset=1&amp;limit=1" rel="next"');
    expect(first).not.toContain('rel="prev"');
    const second = await (await get('/console/proposals?offset=1&limit=1', cookie)).text();
    expect(second).toContain('Showing 2–2 of');
    expect(second).toContain('href="/console/proposals?offset=0&amp;limit=1" rel="prev"');
    // A status the inbox does not know is a 400 page, not a silent empty list.
    expect((await get('/console/proposals?status=bogus', cookie)).status).toBe(400);
  });

  it('ends a session at its expiry and at sign-out', async () => {
    const { cookie } = await signInOverHttp(c);
    expect((await get('/console/proposals', cookie)).status).toBe(200);
    await query(c.stack.db.url, `update console_sessions set expires_at = now() - interval '1 second'`);
    const expired = await get('/console/proposals', cookie);
    expect(expired.status).toBe(303);
    expect(expired.headers.get('location')).toMatch(/^\/console\/login/);
    // The expired session is gone from the table, not just refused.
    const hash = createHash('sha256').update(cookie).digest('hex');
    expect(await query(c.stack.db.url, 'select 1 from console_sessions where id_hash = $1', [hash])).toHaveLength(0);

    const fresh = await signInOverHttp(c);
    const token = csrfOf(await (await get('/console/proposals', fresh.cookie)).text());
    const out = await post('/console/logout', fresh.cookie, { _csrf: token });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/console/login?signed_out=1');
    expect(cookieOf(out.headers, 'platform_console_session')?.value).toBe('');
    expect((await get('/console/proposals', fresh.cookie)).status).toBe(303);
  });

  it('shows a person without APPROVE_AGENT_ACTION a refusal, not the inbox', async () => {
    const member = await startConsoleStackMember();
    try {
      const { cookie } = await signInOverHttp(member);
      const res = await fetch(`${member.stack.url}/console/proposals`, {
        headers: { cookie: `platform_console_session=${cookie}` },
        redirect: 'manual',
      });
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('APPROVE_AGENT_ACTION');
    } finally {
      await member.close();
    }
  });
});

async function startConsoleStackMember(): Promise<ConsoleStack> {
  const idp = await startFakeOidc({ subject: 'mo', roles: ['member'] });
  const stack = await startStack({
    worker: false,
    env: {
      AUTH_PROVIDER: 'oidc',
      AUTH_JWKS_URL: idp.jwksUrl,
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AUTH_CLIENT_ID: idp.clientId,
      AUTH_CLIENT_SECRET: idp.clientSecret,
    },
  });
  return {
    stack,
    idp,
    tokens: { rita: '', ada: '' },
    agent: async () => '',
    ownThread: async () => {},
    close: async () => (await stack.close(), await idp.close()),
  };
}

describe('console with AUTH_PROVIDER=none', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ worker: false });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('signs everyone in as the local admin with a visible banner and no sign-out', async () => {
    const res = await fetch(`${s.url}/console/proposals`, { redirect: 'manual' });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('Authentication is off (AUTH_PROVIDER=none)');
    expect(page).toContain('Local admin');
    expect(page).not.toContain('/console/logout');
    const cookie = cookieOf(res.headers, 'platform_console_session');
    expect(cookie?.attributes).toMatch(/httponly/i);
    const login = await fetch(`${s.url}/console/login`, { redirect: 'manual' });
    expect(login.status).toBe(302);
    expect(login.headers.get('location')).toBe('/console/proposals');
  });
});
