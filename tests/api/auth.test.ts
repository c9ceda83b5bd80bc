import { once } from 'node:events';
import { connect } from 'node:net';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startApiSuiteStack } from './support.js';

let s: OidcStack<never>;
let idp: FakeIdp;
let stack: Stack;

beforeAll(async () => {
  s = await startApiSuiteStack<never>({
    tokens: {},
    env: { PLATFORM_SERVICE_TOKEN: 'service-secret', PLATFORM_INTERNAL_TOKEN: 'internal-secret' },
  });
  ({ stack, idp } = s);
});
afterAll(() => s?.close());

const me = (token?: string, headers?: Record<string, string>) =>
  http(stack.url, 'GET', '/api/auth/me', { token, headers });
const userCount = async () =>
  Number((await query<{ n: string }>(stack.db.url, 'select count(*)::text as n from users'))[0]!.n);

function expect401(res: { status: number; body: any; headers: Headers }, messagePart?: string) {
  expect(res.status).toBe(401);
  expect(res.body.error_type).toBe('authentication');
  expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  if (messagePart) expect(res.body.error).toContain(messagePart);
}

describe('identity-provider tokens', () => {
  it('accepts a valid token and resolves a person with roles and tenant', async () => {
    const token = await idp.sign({ sub: 'alice', name: 'Alice', roles: ['reviewer'], tenant: 'acme' });
    const res = await me(token);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      kind: 'person',
      id: 'alice',
      tenant: 'acme',
      display_name: 'Alice',
      roles: ['reviewer'],
      credential: 'idp_jwt',
    });
    expect(res.body.data.permissions).toContain('APPROVE_AGENT_ACTION');
    const rows = await query(stack.db.url, `select id, tenant, kind, roles from users where id = 'alice'`);
    expect(rows).toEqual([{ id: 'alice', tenant: 'acme', kind: 'person', roles: ['reviewer'] }]);
  });

  it('falls back to the deployment tenant when the token has none', async () => {
    const res = await me(await idp.sign({ sub: 'bob' }));
    expect(res.body.data).toMatchObject({ tenant: 'default', roles: [], permissions: [] });
  });

  it.each([
    ['gty client-credentials', { sub: 'svc-a', gty: 'client-credentials' }],
    ['sub equal to azp', { sub: 'client-b', azp: 'client-b' }],
    ['sub equal to client_id', { sub: 'client-c', client_id: 'client-c' }],
  ])('recognises an app-only token (%s)', async (_name, claims) => {
    const res = await me(await idp.sign(claims));
    expect(res.status).toBe(200);
    expect(res.body.data.kind).toBe('app');
  });

  it('names the provider and the accepted forms when no credential is sent', async () => {
    const res = await me();
    expect401(res, '"oidc" identity provider');
    expect(res.body.payload.provider).toBe('oidc');
    expect(res.body.payload.accepted).toEqual(expect.arrayContaining([expect.stringContaining('gp_')]));
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  describe('forged and stale tokens are refused and write nothing', () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const cases: Array<[string, () => Promise<string>, string]> = [
      [
        'alg none',
        async () =>
          `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'mallory', iss: idp.issuer, aud: idp.audience, exp: Math.floor(Date.now() / 1000) + 300 })}.`,
        'algorithm_not_allowed',
      ],
      ['wrong issuer', () => idp.sign({ sub: 'mallory' }, { issuer: 'https://evil.example/' }), 'claim_mismatch'],
      ['wrong audience', () => idp.sign({ sub: 'mallory' }, { audience: 'someone-else' }), 'claim_mismatch'],
      ['unknown kid', () => idp.sign({ sub: 'mallory' }, { kid: 'k-unknown', foreignKey: true }), 'unknown_key'],
      ['known kid, foreign key', () => idp.sign({ sub: 'mallory' }, { foreignKey: true }), 'invalid_token'],
      [
        'expired',
        () => idp.sign({ sub: 'mallory' }, { expiresIn: Math.floor(Date.now() / 1000) - 3600 }),
        'token_expired',
      ],
      [
        'HS256 signed with the public key',
        () =>
          new SignJWT({ sub: 'mallory' })
            .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
            .setIssuer(idp.issuer)
            .setAudience(idp.audience)
            .setExpirationTime('5m')
            .sign(new TextEncoder().encode(idp.publicKeyPem)),
        'algorithm_not_allowed',
      ],
      ['garbage', async () => 'not.a.jwt', 'invalid_token'],
      ['no expiry', () => idp.sign({ sub: 'mallory' }, { expiresIn: null }), 'missing_claim'],
    ];
    it.each(cases)('%s', async (_name, makeToken, reason) => {
      const before = await userCount();
      const res = await me(await makeToken());
      expect401(res);
      expect(res.body.payload.reason).toBe(reason);
      // Authentication rule 2: like a missing credential, the refusal names the provider and the accepted forms.
      expect(res.body.payload.provider).toBe('oidc');
      expect(res.body.payload.accepted).toContain('Authorization: Bearer <access token from the identity provider>');
      expect(res.body.error).toContain(
        '"oidc" identity provider; send one of: Authorization: Bearer <access token from the identity provider>',
      );
      expect(await userCount()).toBe(before);
    });
  });

  it('refuses a non-Bearer Authorization header', async () => {
    expect401(await me(undefined, { authorization: 'Basic YWxpY2U6cHc=' }), 'not a Bearer credential');
  });
});

describe('personal access tokens', () => {
  it('are minted once, listed without their value, used as their owner, and revoked', async () => {
    const idToken = await idp.sign({ sub: 'carol', name: 'Carol', roles: ['admin'] });
    const minted = await http(stack.url, 'POST', '/api/auth/pats', {
      token: idToken,
      body: { name: 'laptop', expires_in_days: 30 },
    });
    expect(minted.status).toBe(201);
    const pat = minted.body.data.token as string;
    expect(pat).toMatch(/^gp_[A-Za-z0-9_-]{43}$/);
    const stored = await query<{ token_hash: string }>(
      stack.db.url,
      'select token_hash from personal_access_tokens where id = $1',
      [minted.body.data.id],
    );
    expect(stored[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored[0]!.token_hash).not.toContain(pat.slice(3));

    const list = await http(stack.url, 'GET', '/api/auth/pats', { token: idToken });
    expect(list.body.data.tokens).toHaveLength(1);
    expect(list.body.data.tokens[0]).not.toHaveProperty('token');
    expect(list.text).not.toContain(pat);

    const asOwner = await me(pat);
    expect(asOwner.body.data).toMatchObject({
      kind: 'person',
      id: 'carol',
      display_name: 'Carol',
      roles: ['admin'],
      credential: 'pat',
    });

    const mintWithPat = await http(stack.url, 'POST', '/api/auth/pats', { token: pat, body: { name: 'nested' } });
    expect(mintWithPat.status).toBe(403);
    expect(mintWithPat.body.error_type).toBe('forbidden');

    const revoked = await http(stack.url, 'DELETE', `/api/auth/pats/${minted.body.data.id}`, { token: idToken });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.revoked_at).not.toBeNull();
    expect401(await me(pat), 'revoked');
  });

  it('refuses an unknown PAT and a PAT of someone else on revoke', async () => {
    expect401(await me('gp_' + 'A'.repeat(43)), 'not recognised');
    const dave = await idp.sign({ sub: 'dave' });
    const erin = await idp.sign({ sub: 'erin' });
    const minted = await http(stack.url, 'POST', '/api/auth/pats', { token: dave, body: { name: 'ci' } });
    const other = await http(stack.url, 'DELETE', `/api/auth/pats/${minted.body.data.id}`, { token: erin });
    expect(other.status).toBe(404);
    expect(other.body.error_type).toBe('not_found');
    expect(
      await query(stack.db.url, 'select revoked_at from personal_access_tokens where id = $1', [minted.body.data.id]),
    ).toEqual([{ revoked_at: null }]);
  });

  it('are refused to agents and app-only callers', async () => {
    const app = await idp.sign({ sub: 'svc', gty: 'client-credentials', roles: ['admin'] });
    const res = await http(stack.url, 'POST', '/api/auth/pats', { token: app, body: { name: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body.payload).toMatchObject({ principal_kind: 'app', required_principal_kinds: ['person'] });
  });
});

describe('service, sandbox and internal credentials', () => {
  it('resolves the service token to the system identity and refuses a wrong one', async () => {
    const ok = await me(undefined, { 'x-platform-service-token': 'service-secret' });
    expect(ok.body.data).toMatchObject({ kind: 'system', id: 'system', credential: 'service_token' });
    expect401(await me(undefined, { 'x-platform-service-token': 'nope' }), 'X-Platform-Service-Token');
  });

  it('resolves a sandbox thread token to its agent, bot and thread until it expires', async () => {
    const minted = await http(stack.url, 'POST', '/api/internal/sandbox-tokens', {
      headers: { 'x-platform-internal-token': 'internal-secret' },
      body: { bot_id: 'bot-7', thread_id: 'thread-9', ttl_seconds: 60 },
    });
    expect(minted.status).toBe(201);
    const gsk = minted.body.data.token as string;
    expect(gsk).toMatch(/^gsk_/);
    const res = await me(gsk);
    expect(res.body.data).toMatchObject({ kind: 'agent', id: 'bot-7', credential: 'sandbox_token', permissions: [] });
    await query(stack.db.url, `update sandbox_tokens set expires_at = now() - interval '1 second'`);
    expect401(await me(gsk), 'expired');
  });

  it('says whether the internal token was absent or unrecognised, ignoring bearer tokens', async () => {
    const admin = await idp.sign({ sub: 'root', roles: ['admin'] });
    const absent = await http(stack.url, 'GET', '/api/internal/demo-budget/aggregate', { token: admin });
    expect401(absent);
    expect(absent.body.payload.reason).toBe('internal_token_absent');
    const wrong = await http(stack.url, 'GET', '/api/internal/demo-budget/aggregate', {
      headers: { 'x-platform-internal-token': 'guess' },
    });
    expect401(wrong);
    expect(wrong.body.payload.reason).toBe('internal_token_unrecognised');
  });
});

describe('RBAC', () => {
  it('answers 403 with administrator guidance when a permission is missing', async () => {
    const res = await http(stack.url, 'GET', '/api/auth/roles', {
      token: await idp.sign({ sub: 'frank', roles: ['reviewer'] }),
    });
    expect(res.status).toBe(403);
    expect(res.body.error_type).toBe('forbidden');
    expect(res.body.error).toContain('"manage_users"');
    expect(res.body.error).toContain('administrator');
    expect(res.body.payload).toEqual({ required_permission: 'manage_users', roles: ['reviewer'] });
  });

  it('lets the admin role through (it holds every permission)', async () => {
    const res = await http(stack.url, 'GET', '/api/auth/roles', {
      token: await idp.sign({ sub: 'grace', roles: ['admin'] }),
    });
    expect(res.status).toBe(200);
    const admin = res.body.data.roles.find((r: { name: string }) => r.name === 'admin');
    expect(admin.permissions).toEqual(res.body.data.permissions);
  });
});

describe('a request body is read only after the guard', () => {
  const url = '/api/action-review/proposals/no-such-proposal/approve';
  const bodies: Array<[string, { raw: string; headers: Record<string, string> }]> = [
    [
      'a body that is not JSON (415 once past the guard)',
      { raw: 'execute', headers: { 'content-type': 'text/plain' } },
    ],
    ['malformed JSON (400)', { raw: '{"comment":', headers: { 'content-type': 'application/json' } }],
    [
      'a body over the size limit (413)',
      { raw: JSON.stringify({ comment: 'x'.repeat(1024 * 1024) }), headers: { 'content-type': 'application/json' } },
    ],
  ];

  it.each(bodies)('answers 401 to a caller without credentials for %s', async (_name, body) => {
    expect401(await http(stack.url, 'POST', url, body));
  });

  it.each(bodies)('answers 403 to a caller without the permission for %s', async (_name, body) => {
    const token = await idp.sign({ sub: 'heidi', roles: [] });
    const res = await http(stack.url, 'POST', url, {
      ...body,
      headers: { ...body.headers, authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(403);
    expect(res.body.payload).toMatchObject({ required_permission: 'APPROVE_AGENT_ACTION' });
  });

  it.each(bodies)('the MCP gateway checks its origin and credential first, for %s', async (_name, body) => {
    const mcp = (headers: Record<string, string>) =>
      http(stack.url, 'POST', '/mcp', {
        raw: body.raw,
        headers: { ...body.headers, accept: 'application/json, text/event-stream', ...headers },
      });
    const anonymous = await mcp({});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="http:\/\/.+\/mcp"$/);
    const foreign = await mcp({ origin: 'https://elsewhere.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.body.payload).toMatchObject({ reason: 'origin_not_allowed' });
    const token = await idp.sign({ sub: 'ivan', roles: ['reviewer'] });
    const signedIn = await mcp({ authorization: `Bearer ${token}` });
    expect(signedIn.status).toBe(body.raw.startsWith('execute') ? 415 : body.raw.length > 1024 ? 413 : 400);
  });

  it('closes the connection of a refused caller who keeps sending, once more than any route accepts has come', async () => {
    const { hostname, port } = new URL(stack.url);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    let response = '';
    socket.on('data', (d: Buffer) => (response += d.toString('latin1')));
    socket.on('error', () => undefined); // the reset of a write after the close
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const declared = 1024 * 1024 * 1024;
    socket.write(
      `POST ${url} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    let sent = 0;
    while (!socket.destroyed && sent < declared) {
      const more = socket.write(chunk);
      sent += chunk.length;
      if (!more) await Promise.race([once(socket, 'drain').catch(() => undefined), closed]);
    }
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 401 /);
    // Far short of the gigabyte it announced (the bound is the largest body a route takes, a blueprint archive of
    // 64 MiB and room for its fields; what was in flight adds some).
    expect(sent).toBeLessThan(declared / 2);
  });

  it('refuses the body itself once the caller may call the route', async () => {
    const token = await idp.sign({ sub: 'ivan', roles: ['reviewer'] });
    const headers = (type: string) => ({ 'content-type': type, authorization: `Bearer ${token}` });
    const text = await http(stack.url, 'POST', url, { raw: 'execute', headers: headers('text/plain') });
    expect(text.status).toBe(415);
    expect(text.body.error_type).toBe('unsupported_media_type');
    const malformed = await http(stack.url, 'POST', url, { raw: '{"comment":', headers: headers('application/json') });
    expect(malformed.status).toBe(400);
    expect(malformed.body.payload).toEqual({ reason: 'malformed_json' });
    const large = await http(stack.url, 'POST', url, {
      raw: JSON.stringify({ comment: 'x'.repeat(1024 * 1024) }),
      headers: headers('application/json'),
    });
    expect(large.status).toBe(413);
    expect(large.body.error_type).toBe('payload_too_large');
  });

  it('ignores a body sent to a route that declares none', async () => {
    const token = await idp.sign({ sub: 'ivan', roles: ['reviewer'] });
    const res = await http(stack.url, 'POST', '/api/action-review/proposals/no-such-proposal/execute', {
      raw: 'execute',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toContain('no-such-proposal'); // the route's answer, not an unknown path's
  });

  it('answers 404 for a path no route answers, whatever its body', async () => {
    const res = await http(stack.url, 'POST', '/api/no-such-route', {
      raw: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(404);
    expect(res.body.error_type).toBe('not_found');
  });
});
