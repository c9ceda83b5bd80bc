import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { setDesktopClock } from '../../shared/desktop/clock.js';
import { query } from '../helpers/db.js';
import { startFakeProvisioner, type FakeProvisioner } from '../helpers/fake-provisioner.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let prov: FakeProvisioner;
let stack: Stack;
let off: Stack;
let aiOnly: Stack;
let now = Date.parse('2026-11-25T10:00:00Z');

const desktopEnv = (p: FakeProvisioner, extra: Record<string, string> = {}) => ({
  PLATFORM_DESKTOP_MODE: 'true',
  PLATFORM_DESKTOP_PROVISIONER_URL: p.baseUrl,
  PLATFORM_DESKTOP_PROVISIONER_CLIENT_ID: p.clientId,
  PLATFORM_DESKTOP_PROVISIONER_CLIENT_SECRET: p.clientSecret,
  ...extra,
});

beforeAll(async () => {
  setDesktopClock(() => now);
  prov = await startFakeProvisioner();
  stack = await startStack({ worker: false, env: desktopEnv(prov) });
  off = await startStack({ worker: false });
  aiOnly = await startStack({ worker: false, env: desktopEnv(prov, { PLATFORM_DESKTOP_PLATFORM_AI_ONLY: 'true' }) });
});
afterAll(async () => {
  setDesktopClock(undefined);
  await stack?.close();
  await off?.close();
  await aiOnly?.close();
  await prov?.close();
});

const get = (path: string, s = stack) => http(s.url, 'GET', path);
const post = (path: string, body?: unknown, s = stack) => http(s.url, 'POST', path, { body });
const advance = (ms: number) => (now += ms);

/** Starts a sign-in and completes it through the callback with a fresh code. */
async function signIn(code = `code-${now}`) {
  const login = await get('/api/desktop/auth/login?port=47081');
  expect(login.status).toBe(200);
  const cb = await get(
    `/api/desktop/auth/callback?state=${encodeURIComponent(login.body.data.state)}&code=${encodeURIComponent(code)}`,
  );
  return { state: login.body.data.state as string, cb };
}

async function attempts(): Promise<number> {
  const rows = await query<{ n: string }>(stack.db.url, 'select count(*) as n from desktop_sign_in_attempts');
  return Number(rows[0]!.n);
}

describe('desktop mode off', () => {
  it('answers 404 desktop_mode_unavailable on every family and 409 on the two notice routes', async () => {
    for (const [method, path] of [
      ['GET', '/api/desktop/auth/login'],
      ['GET', '/api/desktop/auth/status?state=abc'],
      ['POST', '/api/desktop/auth/cancel'],
      ['GET', '/api/desktop/auth/callback?state=abc&code=x'],
      ['GET', '/api/desktop/status'],
      ['POST', '/api/desktop/activate'],
      ['POST', '/api/desktop/check-in'],
      ['POST', '/api/desktop/sign-out'],
      ['GET', '/api/desktop/credit'],
      ['POST', '/api/desktop/llm-choice'],
      ['POST', '/api/desktop/credit/switch'],
      ['GET', '/api/desktop/update/darwin/aarch64/1.0.0'],
      ['POST', '/api/desktop/diagnostics/preview'],
      ['POST', '/api/desktop/diagnostics/send'],
      ['POST', '/api/desktop/browser-tool/install'],
      ['POST', '/api/desktop/browser-tool/remove'],
    ] as const) {
      const body = path.endsWith('cancel')
        ? { state: 'abc' }
        : path.endsWith('llm-choice')
          ? { choice: 'platform' }
          : path.endsWith('switch')
            ? { model: 'm' }
            : path.endsWith('send')
              ? { preview_id: 'p' }
              : undefined;
      const res = await http(off.url, method, path, { body });
      expect(res.status, path).toBe(404);
      expect(res.body.payload, path).toEqual({ code: 'desktop_mode_unavailable' });
    }
    for (const path of ['/api/desktop/platform-ai-only-notice/seen', '/api/desktop/credentials-notice/seen']) {
      const res = await post(path, undefined, off);
      expect(res.status, path).toBe(409);
      expect(res.body.error_type).toBe('conflict');
      expect(res.body.payload).toEqual({ code: 'desktop_mode_unavailable' });
    }
    expect(prov.calls).toEqual([]);
  });
});

describe('sign-in', () => {
  it('answers an authorize URL and state for the registered loopback ports only', async () => {
    const res = await get('/api/desktop/auth/login');
    expect(res.status).toBe(200);
    const url = new URL(res.body.data.authorize_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${prov.baseUrl}/authorize`);
    expect(url.searchParams.get('client_id')).toBe(prov.clientId);
    expect(url.searchParams.get('state')).toBe(res.body.data.state);
    expect(url.searchParams.get('redirect_uri')).toBe('http://127.0.0.1:47080/api/desktop/auth/callback');
    for (const port of [47080, 47083]) {
      const ok = await get(`/api/desktop/auth/login?port=${port}`);
      expect(ok.status).toBe(200);
      expect(ok.body.data.redirect_uri).toBe(`http://127.0.0.1:${port}/api/desktop/auth/callback`);
    }
    const before = await attempts();
    for (const port of [47079, 47084, 8080]) {
      const bad = await get(`/api/desktop/auth/login?port=${port}`);
      expect(bad.status).toBe(400);
      expect(bad.body.error_type).toBe('bad_request');
      expect(bad.body.payload).toEqual({
        reason: 'sign_in_port_not_registered',
        sign_in_ports: [47080, 47081, 47082, 47083],
      });
    }
    expect(await attempts()).toBe(before);
    const status = await get(`/api/desktop/auth/status?state=${encodeURIComponent(res.body.data.state)}`);
    expect(status.status).toBe(200);
    expect(status.body.data).toMatchObject({ status: 'waiting', failure_reason: null, finished_at: null });
  });

  it('bounds state and the cancel field to 1..128 characters and answers 404 for an unknown state', async () => {
    expect((await get('/api/desktop/auth/status?state=')).status).toBe(400);
    expect((await get(`/api/desktop/auth/status?state=${'a'.repeat(129)}`)).status).toBe(400);
    expect((await post('/api/desktop/auth/cancel', { state: '' })).status).toBe(400);
    expect((await post('/api/desktop/auth/cancel', { state: 'a'.repeat(129) })).status).toBe(400);
    expect((await get(`/api/desktop/auth/status?state=${'a'.repeat(128)}`)).status).toBe(404);
    expect((await post('/api/desktop/auth/cancel', { state: 'a'.repeat(128) })).status).toBe(404);
    expect((await get('/api/desktop/auth/callback?state=unknown&code=c')).status).toBe(404);
  });

  it('cancels a waiting attempt (failed, cancelled); its callback is then refused 409', async () => {
    const { body } = await get('/api/desktop/auth/login');
    const state = body.data.state as string;
    const cancelled = await post('/api/desktop/auth/cancel', { state });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'failed', failure_reason: 'cancelled' });
    expect((await post('/api/desktop/auth/cancel', { state })).body.data.status).toBe('failed');
    const cb = await get(`/api/desktop/auth/callback?state=${encodeURIComponent(state)}&code=c1`);
    expect(cb.status).toBe(409);
    expect(cb.body.payload).toMatchObject({ code: 'sign_in_attempt_finished', status: 'failed' });
    expect(prov.count('/v1/desktop/token')).toBe(0);
  });

  it('fails an attempt the user denied, whose code is refused, or that expired', async () => {
    const denied = await get('/api/desktop/auth/login');
    const d = await get(
      `/api/desktop/auth/callback?state=${encodeURIComponent(denied.body.data.state)}&error=access_denied`,
    );
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ status: 'failed', failure_reason: 'denied' });

    prov.refusedCodes.add('bad-code');
    const refused = await signIn('bad-code');
    expect(refused.cb.status).toBe(200);
    expect(refused.cb.body.data).toMatchObject({ status: 'failed', failure_reason: 'code_refused' });
    expect((await get(`/api/desktop/auth/status?state=${encodeURIComponent(refused.state)}`)).body.data.status).toBe(
      'failed',
    );

    const late = await get('/api/desktop/auth/login');
    advance(11 * 60_000);
    const s = await get(`/api/desktop/auth/status?state=${encodeURIComponent(late.body.data.state)}`);
    expect(s.body.data).toMatchObject({ status: 'failed', failure_reason: 'expired' });
    expect((await get('/api/desktop/status')).body.data.signed_in).toBe(false);
  });

  it('succeeds through the callback, sealing the device credential and AI key', async () => {
    expect((await post('/api/desktop/activate')).body.payload).toEqual({ code: 'not_signed_in' });
    const { state, cb } = await signIn();
    expect(cb.status).toBe(200);
    expect(cb.body.data).toMatchObject({ status: 'succeeded', failure_reason: null });
    expect((await get(`/api/desktop/auth/status?state=${encodeURIComponent(state)}`)).body.data.status).toBe(
      'succeeded',
    );
    const status = await get('/api/desktop/status');
    expect(status.body.data).toMatchObject({ signed_in: true, activated: false, saved_credentials_unreadable: 0 });
    const [row] = await query<{ credentials_sealed: string }>(
      stack.db.url,
      'select credentials_sealed from desktop_state',
    );
    const device = [...prov.devices][0]!;
    expect(row!.credentials_sealed).not.toContain(device);
    expect(row!.credentials_sealed).not.toContain('sk-');
    expect(status.text).not.toContain(device);
  });

  it('answers 503 when the previous AI key cannot be removed, keeping the attempt waiting for a retry', async () => {
    const previousKeys = [...prov.liveKeys];
    expect(previousKeys).toHaveLength(1);
    prov.revokeFails = true;
    const login = await get('/api/desktop/auth/login');
    const state = login.body.data.state as string;
    const url = `/api/desktop/auth/callback?state=${encodeURIComponent(state)}&code=retry-code`;
    const failed = await get(url);
    expect(failed.status).toBe(503);
    expect(failed.body.error_type).toBe('service_unavailable');
    expect(failed.body.payload).toEqual({ dependency: 'desktop_provisioner' });
    expect((await get(`/api/desktop/auth/status?state=${encodeURIComponent(state)}`)).body.data.status).toBe('waiting');
    expect(prov.count('/v1/desktop/token')).toBe(2); // the refused code and the first success only
    prov.revokeFails = false;
    const retried = await get(url);
    expect(retried.status).toBe(200);
    expect(retried.body.data.status).toBe('succeeded');
    expect(prov.revokedKeys).toEqual(previousKeys);
  });
});

describe('activation, version policy and update manifests', () => {
  it('refuses check-in and update checks before activation (409 not_activated)', async () => {
    const check = await post('/api/desktop/check-in', {});
    expect(check.status).toBe(409);
    expect(check.body.payload).toEqual({ code: 'not_activated' });
    const upd = await get('/api/desktop/update/darwin/aarch64/1.0.0');
    expect(upd.status).toBe(409);
    expect(upd.body.payload).toEqual({ code: 'not_activated' });
  });

  it('activates: data.activation.llm and data.trial, and every status field', async () => {
    prov.activation = {
      llm: { returning: true, plan_mode: 'monthly', remaining_usd: 12.5 },
      trial: { ends_at: '2026-12-24T00:00:00Z', days_left: 30 },
      version_policy: null,
    };
    const res = await post('/api/desktop/activate', { app_version: '1.9.0-3' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      activation: { activated: true, llm: { returning: true, plan_mode: 'monthly', remaining_usd: 12.5 } },
      trial: { ends_at: '2026-12-24T00:00:00Z', days_left: 30 },
    });
    const status = (await get('/api/desktop/status')).body.data;
    expect(status).toMatchObject({
      signed_in: true,
      activated: true,
      saved_credentials_unreadable: 0,
      platform_ai_only: false,
      platform_ai_only_notice: false,
      platform_ai_only_notice_seen: false,
      update_required: null,
      update_available: null,
      trial: { ends_at: '2026-12-24T00:00:00Z', days_left: 30 },
      activation: { activated: true, llm: { returning: true, plan_mode: 'monthly', remaining_usd: 12.5 } },
      credit: null,
      app_version: '1.9.0-3',
      llm_choice: null,
    });
    expect(prov.calls.filter((c) => c.path === '/v1/desktop/activate').at(-1)!.body).toEqual({
      app_version: '1.9.0-3',
    });
  });

  it('locks on a required notice (426), not on a recommended one, and unlocks when the minimum is lowered at check-in', async () => {
    prov.activation.version_policy = {
      min_version: '2.0.0',
      recommended_version: '2.1.0-2',
      message: 'Please update',
      download_url: 'https://downloads.example.test/app',
    };
    expect((await post('/api/desktop/check-in', {})).status).toBe(200);
    const status = (await get('/api/desktop/status')).body.data;
    expect(status.update_required).toEqual({
      min_version: '2.0.0',
      recommended_version: '2.1.0d2',
      current_version: '1.9.0d3',
      message: 'Please update',
      download_url: 'https://downloads.example.test/app',
    });
    expect(status.update_available).toBeNull();
    for (const [method, path, body] of [
      ['GET', '/api/desktop/credit', undefined],
      ['POST', '/api/desktop/llm-choice', { choice: 'platform' }],
      ['POST', '/api/desktop/credit/switch', { model: 'platform-small' }],
    ] as const) {
      const locked = await http(stack.url, method, path, { body });
      expect(locked.status, path).toBe(426);
      expect(locked.body.error_type).toBe('update_required');
      expect(locked.body.payload.status).toBe('update_required');
      expect(locked.body.payload.app_version_policy).toMatchObject({
        min_version: '2.0.0',
        current_version: '1.9.0d3',
      });
    }
    expect((await get('/api/desktop/status')).body.data.llm_choice).toBeNull();

    // Recommended only: shown, no lock.
    prov.activation.version_policy = { ...prov.activation.version_policy, min_version: '1.5.0' };
    expect((await get('/api/desktop/status')).body.data.update_required).not.toBeNull(); // until the next check-in
    expect((await post('/api/desktop/check-in', {})).status).toBe(200);
    const after = (await get('/api/desktop/status')).body.data;
    expect(after.update_required).toBeNull();
    expect(after.update_available).toMatchObject({ min_version: '1.5.0', recommended_version: '2.1.0d2' });
    expect((await get('/api/desktop/credit')).status).toBe(200);

    // A non-HTTPS download URL is never shown.
    prov.activation.version_policy = { ...prov.activation.version_policy, download_url: 'http://plain.example.test/' };
    await post('/api/desktop/check-in', {});
    expect((await get('/api/desktop/status')).body.data.update_available.download_url).toBeNull();
  });

  it("answers the channel's manifest, 204 without update, 404 without channel, 503 when the check fails", async () => {
    const manifest = {
      version: '2.1.0',
      url: 'https://downloads.example.test/app.tar.gz',
      signature: 'sig',
      notes: 'n',
    };
    prov.updates = { 'darwin/aarch64': manifest, 'linux/x86_64': 'none', 'windows/x86_64': 'fail' };
    const ok = await get('/api/desktop/update/darwin/aarch64/1.9.0-3');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual(manifest);
    expect(prov.calls.at(-1)!.path).toBe('/v1/desktop/update/darwin/aarch64/1.9.0-3');
    const none = await get('/api/desktop/update/linux/x86_64/2.1.0');
    expect(none.status).toBe(204);
    expect(none.text).toBe('');
    const missing = await get('/api/desktop/update/solaris/sparc/1.0.0');
    expect(missing.status).toBe(404);
    expect(missing.body.payload).toEqual({ code: 'update_unavailable' });
    const failed = await get('/api/desktop/update/windows/x86_64/1.0.0');
    expect(failed.status).toBe(503);
    expect(failed.body.error_type).toBe('service_unavailable');
    for (const bad of [
      'Darwin/aarch64/1.0',
      'darwin/arch-64/1.0',
      `darwin/aarch64/${'1'.repeat(65)}`,
      'darwin/aarch64/1.0%20beta',
    ])
      expect((await get(`/api/desktop/update/${bad}`)).status, bad).toBe(400);
  });
});

describe('credit', () => {
  it('caches readings up to 180 s, refreshes fresh reads older than 15 s, and waits 180 s after a refused credential', async () => {
    const calls = () => prov.count('/v1/desktop/credit');
    advance(181_000); // past the reading the version-policy test took
    const base = calls();
    const first = await get('/api/desktop/credit');
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      available: true,
      model: 'platform-large',
      max_budget_usd: 20,
      spend_usd: 5,
      used_fraction: 0.25,
      exhausted: false,
      heads_up_due: false,
      alternatives: ['platform-small'],
      percent_used: 25,
      resets_at: '2026-12-01T00:00:00Z',
      read_at: new Date(now).toISOString(),
      device_credential_refused: false,
    });
    expect(calls()).toBe(base + 1);
    advance(10_000);
    await get('/api/desktop/credit');
    await get('/api/desktop/credit?fresh=true');
    expect(calls()).toBe(base + 1);
    advance(6_000);
    prov.credit = { ...prov.credit, spend_usd: 17 };
    const fresh = await get('/api/desktop/credit?fresh=true');
    expect(calls()).toBe(base + 2);
    expect(fresh.body.data).toMatchObject({ spend_usd: 17, heads_up_due: true, exhausted: false, percent_used: 85 });
    advance(179_000);
    expect((await get('/api/desktop/credit')).body.data.spend_usd).toBe(17);
    expect(calls()).toBe(base + 2);
    advance(2_000);
    prov.credit = { ...prov.credit, spend_usd: 20 };
    expect((await get('/api/desktop/credit')).body.data).toMatchObject({ exhausted: true, heads_up_due: false });
    expect(calls()).toBe(base + 3);

    // A refused device credential: the cached reading is answered and no call is made for 180 s.
    prov.refuseDevices = true;
    advance(181_000);
    const refused = await get('/api/desktop/credit');
    expect(refused.status).toBe(200);
    expect(refused.body.data).toMatchObject({ available: true, spend_usd: 20, device_credential_refused: true });
    expect(calls()).toBe(base + 4);
    advance(100_000);
    await get('/api/desktop/credit?fresh=true');
    advance(79_000);
    await get('/api/desktop/credit');
    expect(calls()).toBe(base + 4);
    prov.refuseDevices = false;
    advance(2_000);
    expect((await get('/api/desktop/credit')).body.data.device_credential_refused).toBe(false);
    expect(calls()).toBe(base + 5);

    // Provisioner down with a cached reading: the reading stays.
    prov.creditFails = true;
    advance(181_000);
    expect((await get('/api/desktop/credit')).status).toBe(200);
    prov.creditFails = false;
  });

  it('stores the model choice and switches among the offered models', async () => {
    const choice = await post('/api/desktop/llm-choice', { choice: 'own_provider' });
    expect(choice.status).toBe(200);
    expect(choice.body.data).toEqual({ llm_choice: 'own_provider' });
    expect((await post('/api/desktop/llm-choice', { choice: 'other' })).status).toBe(400);
    const sw = await post('/api/desktop/credit/switch', { model: 'platform-small' });
    expect(sw.status).toBe(200);
    expect(sw.body.data.model).toBe('platform-small');
    const bad = await post('/api/desktop/credit/switch', { model: 'unknown-model' });
    expect(bad.status).toBe(400);
    expect(bad.body.payload).toMatchObject({ reason: 'model_not_offered', alternatives: ['platform-small'] });
    const status = (await get('/api/desktop/status')).body.data;
    expect(status.llm_choice).toBe('own_provider');
    expect(status.credit.model).toBe('platform-small');
  });

  it('refuses llm-choice and credit switch with 403 in platform-AI-only mode', async () => {
    const choice = await post('/api/desktop/llm-choice', { choice: 'platform' }, aiOnly);
    expect(choice.status).toBe(403);
    expect(choice.body.payload).toEqual({ code: 'platform_ai_only' });
    const sw = await post('/api/desktop/credit/switch', { model: 'platform-small' }, aiOnly);
    expect(sw.status).toBe(403);
    const status = (await get('/api/desktop/status', aiOnly)).body.data;
    expect(status).toMatchObject({
      platform_ai_only: true,
      platform_ai_only_notice: true,
      platform_ai_only_notice_seen: false,
    });
    const seen = await post('/api/desktop/platform-ai-only-notice/seen', undefined, aiOnly);
    expect(seen.status).toBe(200);
    expect(seen.body).toEqual({ success: true, message: 'Notice marked as seen.' });
    expect((await get('/api/desktop/status', aiOnly)).body.data).toMatchObject({
      platform_ai_only_notice: false,
      platform_ai_only_notice_seen: true,
    });
  });
});

describe('browser tool', () => {
  it('answers 501 not_available_here on install and remove (not managed by this deployment)', async () => {
    for (const action of ['install', 'remove']) {
      const res = await post(`/api/desktop/browser-tool/${action}`);
      expect(res.status, action).toBe(501);
      expect(res.body.error_type).toBe('not_available_here');
      expect(res.body.payload).toEqual({ code: 'browser_tool_not_managed' });
    }
  });
});

describe('unreadable credentials and sign-out', () => {
  it('counts saved credentials it cannot open; the credentials notice drops them', async () => {
    const [row] = await query<{ credentials_sealed: string }>(
      stack.db.url,
      'select credentials_sealed from desktop_state',
    );
    const sealed = row!.credentials_sealed;
    const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    await query(stack.db.url, 'update desktop_state set credentials_sealed = $1', [tampered]);
    const status = (await get('/api/desktop/status')).body.data;
    expect(status).toMatchObject({ saved_credentials_unreadable: 1, signed_in: false, activated: false });
    const seen = await post('/api/desktop/credentials-notice/seen');
    expect(seen.status).toBe(200);
    expect(seen.body.success).toBe(true);
    expect((await get('/api/desktop/status')).body.data).toMatchObject({
      saved_credentials_unreadable: 0,
      signed_in: false,
    });
    const [after] = await query<{ credentials_sealed: string | null }>(
      stack.db.url,
      'select credentials_sealed from desktop_state',
    );
    expect(after!.credentials_sealed).toBeNull();
  });

  it('signs out: the provisioner is told, credentials and activation are gone', async () => {
    const { cb } = await signIn();
    expect(cb.body.data.status).toBe('succeeded');
    expect((await post('/api/desktop/activate', {})).status).toBe(200);
    const device = prov.calls.filter((c) => c.path === '/v1/desktop/activate').at(-1)!.bearer!;
    const out = await post('/api/desktop/sign-out');
    expect(out.status).toBe(200);
    expect(out.body.data).toEqual({ activation: { activated: false, llm: null }, trial: null });
    expect(prov.devices.has(device)).toBe(false);
    const status = (await get('/api/desktop/status')).body.data;
    expect(status).toMatchObject({ signed_in: false, activated: false, credit: null });
    expect((await get('/api/desktop/credit')).body.data).toMatchObject({ available: false, model: null });
    const [row] = await query<{ credentials_sealed: string | null }>(
      stack.db.url,
      'select credentials_sealed from desktop_state',
    );
    expect(row!.credentials_sealed).toBeNull();
  });
});

afterEach(() => {
  prov.revokeFails = false;
  prov.refuseDevices = false;
});
