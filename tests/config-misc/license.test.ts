/**
 * Offline licenses: tokens the test signs itself (Ed25519 here, ES256 through a JWK in the unit part);
 * tampered, wrong-key, wrong-algorithm, wrong-audience and expired tokens refused with a reason and
 * nothing written; the seat limit at activation (409) and afterwards (`check` not ok); permissions.
 */
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { verifyLicense } from '../../shared/license/license.js';
import { query } from '../helpers/db.js';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startMiscStack } from './support.js';

type Key = Awaited<ReturnType<typeof generateKeyPair>>;
let vendor: Key;
let other: Key;
let s: OidcStack;
let idp: FakeIdp;
let stack: Stack;
let admin: string;
let member: string;

const now = () => Math.floor(Date.now() / 1000);

async function license(claims: JWTPayload = {}, key: Key = vendor, alg = 'EdDSA'): Promise<string> {
  return new SignJWT({ seats: 10, licensee: 'Acme Corp', edition: 'enterprise', ...claims })
    .setProtectedHeader({ alg })
    .setAudience((claims.aud as string | undefined) ?? 'data-agent-platform')
    .setSubject('cust-42')
    .setJti((claims.jti as string | undefined) ?? 'lic-1')
    .setIssuedAt(now() - 60)
    .sign(key.privateKey);
}

/** Flips the payload (more seats) while keeping the vendor's signature. */
function tamper(token: string): string {
  const [h, p, s] = token.split('.');
  const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
  payload.seats = 100_000;
  return `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
}

const activate = (token: string, bearer = admin) =>
  http(stack.url, 'POST', '/api/license/activate', { token: bearer, body: { license: token } });
const stored = () => query(stack.db.url, `select value from deployment_settings where key = 'license'`);

beforeAll(async () => {
  vendor = await generateKeyPair('EdDSA', { extractable: true });
  other = await generateKeyPair('EdDSA', { extractable: true });
  s = await startMiscStack({
    env: {
      PLATFORM_LICENSE_PUBLIC_KEY: await exportSPKI(vendor.publicKey),
      PLATFORM_CONTAINER_SERVICE_MODE: 'true',
      PLATFORM_SERVICE_TOKEN: 'license-service-token',
    },
  });
  ({
    stack,
    idp,
    tokens: { admin, member },
  } = s);
  // In container-service mode outbound requests reach only the mesh egress list: the identity provider joins it.
  const jwks = new URL(idp.jwksUrl);
  const egress = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', {
    headers: { 'x-platform-service-token': 'license-service-token' },
    body: { entries: [`${jwks.hostname}:${jwks.port}`] },
  });
  expect(egress.status, egress.text).toBe(200);
  // Both sign in: two people hold seats.
  await http(stack.url, 'GET', '/api/auth/me', { token: admin });
  await http(stack.url, 'GET', '/api/auth/me', { token: member });
});
afterAll(() => s?.close());

describe('license status and check before activation', () => {
  it('reports not activated, container-service mode, enforcement on', async () => {
    const status = await http(stack.url, 'GET', '/api/license/status', { token: admin });
    expect(status.status).toBe(200);
    expect(status.body.data).toMatchObject({
      activated: false,
      spcs_mode: true,
      enforcement_disabled: false,
      enforcement_disabled_reason: null,
      public_key_configured: true,
      valid: null,
      license: null,
      seats_used: 2,
    });
    const check = await http(stack.url, 'GET', '/api/license/check', { token: admin });
    expect(check.body.data).toMatchObject({ ok: false, reason: 'not_activated', seats_used: 2 });
  });
});

describe('activation refusals write nothing', () => {
  it('refuses a tampered token, one signed with another key, another algorithm, audience, or an expired one', async () => {
    const cases: Array<[string, string]> = [
      [tamper(await license()), 'signature_invalid'],
      [await license({}, other), 'signature_invalid'],
      [
        await new SignJWT({ seats: 5 })
          .setProtectedHeader({ alg: 'HS256' })
          .setAudience('data-agent-platform')
          .setSubject('x')
          .setJti('y')
          .setIssuedAt()
          .sign(new TextEncoder().encode('a-shared-secret-of-sufficient-length')),
        'algorithm_not_allowed',
      ],
      [await license({ aud: 'another-product' }), 'audience_mismatch'],
      [await license({ exp: now() - 5 }), 'expired'],
      [await license({ nbf: now() + 3600 }), 'not_yet_valid'],
      [await license({ seats: 0 }), 'claims_invalid'],
      ['abc.def.ghi', 'malformed'],
    ];
    for (const [token, reason] of cases) {
      const res = await activate(token);
      expect(res.status, reason).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
      expect(res.body.payload.reason).toBe(reason);
    }
    expect(await stored()).toEqual([]);
  });

  it('refuses a license with fewer seats than the deployment already has people (409)', async () => {
    const res = await activate(await license({ seats: 1 }));
    expect(res.status).toBe(409);
    expect(res.body.payload).toMatchObject({ code: 'LICENSE_SEAT_LIMIT_EXCEEDED', seats: 1, seats_used: 2 });
    expect(await stored()).toEqual([]);
  });

  it('every license route needs access_config_panel (403) and a credential (401)', async () => {
    for (const [method, path] of [
      ['GET', '/api/license/status'],
      ['GET', '/api/license/check'],
      ['POST', '/api/license/activate'],
      ['POST', '/api/license/deactivate'],
    ] as const) {
      const body = method === 'POST' ? { license: await license() } : undefined;
      const forbidden = await http(stack.url, method, path, { token: member, body });
      expect(forbidden.status, path).toBe(403);
      expect(forbidden.body.payload.required_permission).toBe('access_config_panel');
      expect((await http(stack.url, method, path, { body })).status, path).toBe(401);
    }
    expect(await stored()).toEqual([]);
  });
});

describe('an activated license', () => {
  it('activates, shows its details, and checks ok within seats (exactly at the limit too)', async () => {
    const res = await activate(await license({ seats: 2, exp: now() + 86_400 }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({
      activated: true,
      replaced: false,
      license: { license_id: 'lic-1', licensee: 'Acme Corp', seats: 2, edition: 'enterprise' },
    });
    const status = await http(stack.url, 'GET', '/api/license/status', { token: admin });
    expect(status.body.data).toMatchObject({ activated: true, valid: true, problems: [], activated_by: 'root' });
    const check = await http(stack.url, 'GET', '/api/license/check', { token: admin });
    expect(check.body.data).toMatchObject({ ok: true, reason: null, seats: 2, seats_used: 2, seats_remaining: 0 });
  });

  it('checks not ok once the deployment has more people than seats', async () => {
    await query(
      stack.db.url,
      `insert into users (id, tenant, kind, display_name, email, roles, first_seen_at, last_sign_in_at)
       values ('late', 'default', 'person', 'Late Comer', null, '[]', now(), now()),
              ('robot', 'default', 'app', 'Robot', null, '[]', now(), now())`,
    );
    const check = await http(stack.url, 'GET', '/api/license/check', { token: admin });
    // The app does not take a seat; the third person does.
    expect(check.body.data).toMatchObject({
      ok: false,
      reason: 'seat_limit_exceeded',
      seats: 2,
      seats_used: 3,
      seats_remaining: 0,
    });
    expect(check.body.data.message).toContain('3 people');
  });

  it('replaces the license with a bigger one; a stored license that expired checks not ok but keeps its details', async () => {
    const bigger = await activate(await license({ seats: 50, jti: 'lic-2' }));
    expect(bigger.body.data).toMatchObject({ replaced: true, license: { license_id: 'lic-2', expires_at: null } });
    expect((await http(stack.url, 'GET', '/api/license/check', { token: admin })).body.data.ok).toBe(true);

    // A license activated while valid whose expiry has since passed (written as an earlier activation would have).
    const lapsed = await license({ jti: 'lic-3', exp: now() - 1 });
    await query(stack.db.url, `update deployment_settings set value = $1::jsonb where key = 'license'`, [
      JSON.stringify({ token: lapsed, activated_at: new Date().toISOString(), activated_by: 'root' }),
    ]);
    const check = await http(stack.url, 'GET', '/api/license/check', { token: admin });
    expect(check.body.data).toMatchObject({ ok: false, reason: 'expired' });
    const status = await http(stack.url, 'GET', '/api/license/status', { token: admin });
    expect(status.body.data).toMatchObject({ activated: true, valid: false, problems: ['expired'] });
    expect(status.body.data.license.license_id).toBe('lic-3');

    // A stored token altered in the database no longer verifies.
    await query(stack.db.url, `update deployment_settings set value = $1::jsonb where key = 'license'`, [
      JSON.stringify({ token: tamper(await license()), activated_at: new Date().toISOString(), activated_by: 'root' }),
    ]);
    const altered = await http(stack.url, 'GET', '/api/license/check', { token: admin });
    expect(altered.body.data).toMatchObject({ ok: false, reason: 'license_invalid' });
  });

  it('deactivates (idempotently)', async () => {
    const first = await http(stack.url, 'POST', '/api/license/deactivate', { token: admin });
    expect(first.body.data).toEqual({ deactivated: true });
    expect(await stored()).toEqual([]);
    const again = await http(stack.url, 'POST', '/api/license/deactivate', { token: admin });
    expect(again.body.data).toEqual({ deactivated: false });
    const status = await http(stack.url, 'GET', '/api/license/status', { token: admin });
    expect(status.body.data.activated).toBe(false);
  });
});

describe('verification with an ES256 key given as a JWK', () => {
  it('accepts an ES256 license and refuses an EdDSA one', async () => {
    const es = await generateKeyPair('ES256', { extractable: true });
    const config = loadConfig({ PLATFORM_LICENSE_PUBLIC_KEY: JSON.stringify(await exportJWK(es.publicKey)) });
    const claims = await verifyLicense(config, await license({ seats: 3 }, es, 'ES256'));
    expect(claims).toMatchObject({ sub: 'cust-42', seats: 3 });
    await expect(verifyLicense(config, await license())).rejects.toMatchObject({
      payload: { reason: 'algorithm_not_allowed' },
    });
  });
});
