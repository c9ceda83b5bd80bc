/**
 * Hosted identity (spec, Hosted identity; Authentication 4): assertions verified against issuer,
 * audience, JWKS, tenant and installation, then an ACTIVE explicit identity link; the initial admin
 * bootstrap (once, even under concurrency), invitations, revoke (idempotent by operation_id).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { claims, INSTALLATION, startHostedStack, startOidcTwin, TENANT } from './support.js';

let s: OidcStack<never>;
let twin: OidcStack<never>;
let idp: FakeIdp;
let stack: Stack;
let oidc: Stack;
const management = (scope: string) => idp.sign(claims('control-plane', { scope }));
const user = (sub: string, extra: Record<string, unknown> = {}) => idp.sign(claims(sub, extra));
const me = (token: string) => http(stack.url, 'GET', '/api/auth/me', { token });
const post = (path: string, body: unknown, token?: string) => http(stack.url, 'POST', path, { token, body });
const countBindings = async (where: string) =>
  Number(
    (
      (await stack.api.deps.orm.em
        .getConnection()
        .execute(`select count(*)::int as n from hosted_identity_bindings where ${where}`)) as { n: number }[]
    )[0]!.n,
  );

function expectAuthRefusal(res: { status: number; body: Record<string, any> }, reason?: string) {
  expect(res.status).toBe(401);
  expect(res.body.error_type).toBe('authentication');
  expect(typeof res.body.request_id).toBe('string');
  expect(res.body.error).toMatch(/hosted/);
  if (reason) expect(res.body.payload.reason).toBe(reason);
}

beforeAll(async () => {
  s = await startHostedStack();
  twin = await startOidcTwin(s.idp);
  ({ stack, idp } = s);
  oidc = twin.stack;
});
afterAll(async () => {
  await twin?.close();
  await s?.close();
});

describe('hosted identity', () => {
  let adminBinding: string;
  let memberBinding: string;

  it('refuses an assertion without a link, and the bootstrap without the bootstrap scope', async () => {
    expectAuthRefusal(await me(await user('alice')), 'identity_link_missing');
    const noToken = await post('/api/hosted-identities/initial-admin', { subject: 'alice' });
    expect(noToken.status).toBe(401);
    const wrongScope = await post(
      '/api/hosted-identities/initial-admin',
      { subject: 'alice' },
      await management('hosted.identity.emergency_revoke'),
    );
    expect(wrongScope.status).toBe(403);
    expect(wrongScope.body.payload.required_scope).toBe('hosted.identity.bootstrap');
    // A management assertion for another installation does not verify.
    const foreign = await post(
      '/api/hosted-identities/initial-admin',
      { subject: 'alice' },
      await idp.sign({ ...claims('control-plane', { scope: 'hosted.identity.bootstrap' }), installation: 'inst-2' }),
    );
    expect(foreign.status).toBe(401);
    expect(await countBindings('true')).toBe(0);
  });

  it('refuses undeclared fields (422) and writes nothing', async () => {
    const res = await post(
      '/api/hosted-identities/initial-admin',
      { subject: 'alice', role: 'admin' },
      await management('hosted.identity.bootstrap'),
    );
    expect(res.status).toBe(422);
    expect(await countBindings('true')).toBe(0);
  });

  it('creates exactly one initial admin under concurrent bootstrap calls', async () => {
    const token = await management('hosted.identity.bootstrap');
    const subjects = ['alice', 'alice2', 'alice3', 'alice4', 'alice5'];
    const results = await Promise.all(
      subjects.map((subject, i) =>
        post('/api/hosted-identities/initial-admin', { subject, operation_id: `boot-${i}` }, token),
      ),
    );
    const created = results.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body.payload.code).toBe('HOSTED_INITIAL_ADMIN_EXISTS');
    }
    expect(await countBindings('initial_admin')).toBe(1);
    expect(Object.keys(created[0]!.body.data).sort()).toEqual(['binding_id', 'state']);
    expect(created[0]!.body.data.state).toBe('active');
    adminBinding = created[0]!.body.data.binding_id;
    const winner = subjects[results.indexOf(created[0]!)]!;
    // The same operation again answers the same binding; a new one is refused.
    const again = await post(
      '/api/hosted-identities/initial-admin',
      { subject: winner, operation_id: `boot-${subjects.indexOf(winner)}` },
      token,
    );
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ binding_id: adminBinding, state: 'active' });
    const later = await post('/api/hosted-identities/initial-admin', { subject: 'zed', operation_id: 'boot-x' }, token);
    expect(later.status).toBe(409);
    expect(await countBindings('true')).toBe(1);
    // Use the winner as "alice" from here on.
    const res = await me(await user(winner, { roles: [] }));
    expect(res.status).toBe(200);
    expect(res.body.data.roles).toContain('admin');
    aliceSub = winner;
  });

  let aliceSub = 'alice';

  it('refuses an assertion failing each check in turn', async () => {
    const base = claims(aliceSub);
    expect((await me(await idp.sign(base))).status).toBe(200);
    expectAuthRefusal(await me(await idp.sign(base, { issuer: 'https://other-issuer.example/' })), 'claim_mismatch');
    expectAuthRefusal(await me(await idp.sign(base, { audience: 'other-api' })), 'claim_mismatch');
    expectAuthRefusal(await me(await idp.sign(base, { foreignKey: true })));
    expectAuthRefusal(await me(await idp.sign(base, { kid: 'unknown-kid' })), 'unknown_key');
    expectAuthRefusal(await me(await idp.sign({ ...base, tenant: 'other-tenant' })), 'tenant_mismatch');
    expectAuthRefusal(await me(await idp.sign({ sub: aliceSub, installation: INSTALLATION })), 'tenant_mismatch');
    expectAuthRefusal(await me(await idp.sign({ ...base, installation: 'inst-2' })), 'installation_mismatch');
    expectAuthRefusal(await me(await idp.sign({ sub: aliceSub, tenant: TENANT })), 'installation_mismatch');
    expectAuthRefusal(await me(await user('nobody')), 'identity_link_missing');
  });

  it('invites one ordinary binding (manage_users), idempotent by operation_id', async () => {
    const admin = await user(aliceSub);
    const res = await post('/api/hosted-identities/invitations', { subject: 'bob', operation_id: 'inv-1' }, admin);
    expect(res.status).toBe(201);
    expect(Object.keys(res.body.data).sort()).toEqual(['binding_id', 'state']);
    memberBinding = res.body.data.binding_id;
    const again = await post('/api/hosted-identities/invitations', { subject: 'bob', operation_id: 'inv-1' }, admin);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ binding_id: memberBinding, state: 'active' });
    const dup = await post('/api/hosted-identities/invitations', { subject: 'bob', operation_id: 'inv-2' }, admin);
    expect(dup.status).toBe(409);
    expect(dup.body.payload.code).toBe('HOSTED_IDENTITY_ALREADY_BOUND');
    const reused = await post('/api/hosted-identities/invitations', { subject: 'carl', operation_id: 'inv-1' }, admin);
    expect(reused.status).toBe(409);
    expect(reused.body.payload.code).toBe('HOSTED_IDENTITY_OPERATION_REUSED');
    expect(await countBindings(`subject = 'bob'`)).toBe(1);
    // Bob now signs in, as an ordinary member: no manage_users.
    const bob = await user('bob');
    const bobMe = await me(bob);
    expect(bobMe.status).toBe(200);
    expect(bobMe.body.data.roles).not.toContain('admin');
    const denied = await post('/api/hosted-identities/invitations', { subject: 'carol' }, bob);
    expect(denied.status).toBe(403);
    expect(denied.body.error_type).toBe('forbidden');
    expect(await countBindings(`subject = 'carol'`)).toBe(0);
    // A management assertion is not a user: it has no link, so it cannot invite.
    const mgmt = await post(
      '/api/hosted-identities/invitations',
      { subject: 'carol' },
      await management('hosted.identity.bootstrap'),
    );
    expect(mgmt.status).toBe(401);
  });

  it('revokes a link: the next request is refused; idempotent by operation_id', async () => {
    const admin = await user(aliceSub);
    const bob = await user('bob');
    expect((await me(bob)).status).toBe(200);
    const minted = await post('/api/auth/pats', { name: 'bob laptop' }, bob);
    expect(minted.status).toBe(201);
    const pat = minted.body.data.token as string;
    expect((await me(pat)).status).toBe(200);
    const res = await post(`/api/hosted-identities/${memberBinding}/revoke`, { operation_id: 'rev-1' }, admin);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ binding_id: memberBinding, state: 'revoked' });
    // The same (still unexpired) assertion stops working on the next request; so does Bob's PAT.
    expectAuthRefusal(await me(bob), 'identity_link_revoked');
    expectAuthRefusal(await me(pat), 'identity_link_revoked');
    const again = await post(`/api/hosted-identities/${memberBinding}/revoke`, { operation_id: 'rev-1' }, admin);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ binding_id: memberBinding, state: 'revoked' });
    const reused = await post(`/api/hosted-identities/${adminBinding}/revoke`, { operation_id: 'rev-1' }, admin);
    expect(reused.status).toBe(409);
    expect(reused.body.payload.code).toBe('HOSTED_IDENTITY_OPERATION_REUSED');
    const unknown = await post('/api/hosted-identities/hib_000/revoke', { operation_id: 'rev-2' }, admin);
    expect(unknown.status).toBe(404);
    const extra = await post(
      `/api/hosted-identities/${adminBinding}/revoke`,
      { operation_id: 'rev-3', reason: 'x' },
      admin,
    );
    expect(extra.status).toBe(422);
    expect((await me(admin)).status).toBe(200);
    // Re-inviting a revoked subject makes a new link.
    const back = await post('/api/hosted-identities/invitations', { subject: 'bob', operation_id: 'inv-3' }, admin);
    expect(back.status).toBe(201);
    expect(back.body.data.binding_id).not.toBe(memberBinding);
    expect((await me(bob)).status).toBe(200);
    expect((await me(pat)).status).toBe(200);
  });

  it('lets a management assertion with the emergency scope revoke, and nothing else', async () => {
    const admin = await user(aliceSub);
    const bootstrapOnly = await post(
      `/api/hosted-identities/${adminBinding}/revoke`,
      { operation_id: 'em-1' },
      await management('hosted.identity.bootstrap'),
    );
    expect(bootstrapOnly.status).toBe(401);
    expect((await me(admin)).status).toBe(200);
    const res = await post(
      `/api/hosted-identities/${adminBinding}/revoke`,
      { operation_id: 'em-1' },
      await management('hosted.identity.emergency_revoke'),
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ binding_id: adminBinding, state: 'revoked' });
    expectAuthRefusal(await me(admin), 'identity_link_revoked');
  });

  it('answers 404 outside hosted mode', async () => {
    const token = await idp.sign({ sub: 'ann', roles: ['admin'] });
    for (const [path, body] of [
      ['/api/hosted-identities/initial-admin', { subject: 'x' }],
      ['/api/hosted-identities/invitations', { subject: 'x' }],
      ['/api/hosted-identities/hib_1/revoke', { operation_id: 'o' }],
    ] as const) {
      const res = await http(oidc.url, 'POST', path, { token, body });
      expect(res.status).toBe(404);
      expect(res.body.payload.reason).toBe('not_hosted_mode');
    }
  });
});
