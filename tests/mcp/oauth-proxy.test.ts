import { createHash, randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { callPlatform, connectMcp } from './support.js';

let idp: FakeOidc;
let stack: Stack;
const clients: Client[] = [];
const CLIENT_CALLBACK = 'http://127.0.0.1:9/callback';

beforeAll(async () => {
  idp = await startFakeOidc({ subject: 'olivia', roles: ['admin'] });
  stack = await startStack({
    worker: false,
    env: {
      AUTH_PROVIDER: 'oidc',
      AUTH_JWKS_URL: idp.jwksUrl,
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AUTH_CLIENT_ID: idp.clientId,
      AUTH_CLIENT_SECRET: idp.clientSecret,
      PLATFORM_OAUTH_PROXY_ENABLED: 'true',
      AUTH_MCP_CLIENT_REDIRECT_URIS: 'https://tools.example.com/cb, myapp://done',
    },
  });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await stack?.close();
  await idp?.close();
});

const get = (url: string) => fetch(url, { redirect: 'manual' });
const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};
const authorizeUrl = (params: Record<string, string>) => `${stack.url}/authorize?${new URLSearchParams(params)}`;
const token = (form: Record<string, string>) =>
  http(stack.url, 'POST', '/oauth/token', {
    raw: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

/** /authorize → the provider (signs in at once) → /oauth/callback; returns each hop's Location. */
async function signIn(challenge: string, redirectUri = CLIENT_CALLBACK) {
  const start = await get(
    authorizeUrl({
      response_type: 'code',
      client_id: 'test-client',
      redirect_uri: redirectUri,
      state: 'client-state',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  );
  expect(start.status).toBe(302);
  const upstream = new URL(start.headers.get('location')!);
  const atProvider = await get(upstream.toString());
  const callback = atProvider.headers.get('location')!;
  const back = await get(callback);
  expect(back.status).toBe(302);
  return { upstream, callback, client: new URL(back.headers.get('location')!) };
}

describe('OAuth proxy, end to end against a local OIDC provider', () => {
  it('authorize → callback → token, and the token works on /mcp', async () => {
    const { verifier, challenge } = pkce();
    const { upstream, client } = await signIn(challenge);
    // Upstream sees the platform's own client, callback and state, and the client's challenge.
    expect(upstream.origin + upstream.pathname).toBe(`${idp.issuer}/authorize`);
    expect(upstream.searchParams.get('tenant_hint')).toBe('acme');
    expect(Object.fromEntries(upstream.searchParams)).toMatchObject({
      client_id: idp.clientId,
      redirect_uri: `${stack.url}/oauth/callback`,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      response_type: 'code',
    });
    expect(upstream.searchParams.get('state')).not.toBe('client-state');
    // The client gets its own state back, a platform code and the platform as issuer.
    expect(client.origin + client.pathname).toBe(CLIENT_CALLBACK);
    expect(client.searchParams.get('state')).toBe('client-state');
    expect(client.searchParams.get('iss')).toBe(stack.url);
    const code = client.searchParams.get('code')!;
    expect(code).not.toBe(idp.tokenRequests.at(-1)?.get('code'));

    const res = await token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CLIENT_CALLBACK,
      client_id: 'test-client',
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      access_token: expect.any(String),
      token_type: 'Bearer',
      refresh_token: 'refresh-1',
    });
    const forwarded = idp.tokenRequests.at(-1)!;
    expect(forwarded.get('code_verifier')).toBe(verifier);
    expect(forwarded.get('redirect_uri')).toBe(`${stack.url}/oauth/callback`);

    const mcp = await connectMcp(stack.url, '/mcp/', { Authorization: `Bearer ${res.body.access_token}` });
    clients.push(mcp);
    const status = await callPlatform(mcp, { action: 'status' });
    expect(status.data.caller).toMatchObject({ id: 'olivia', credential: 'idp_jwt' });
    expect(status.data.auth).toMatchObject({ mode: 'oauth_proxy', oauth_proxy_enabled: true });

    // The platform code is single use.
    const again = await token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CLIENT_CALLBACK,
      client_id: 'test-client',
      code_verifier: verifier,
    });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({
      error: 'invalid_grant',
      error_type: 'bad_request',
      request_id: expect.any(String),
    });
  });

  it('the callback state is single use', async () => {
    const { callback } = await signIn(pkce().challenge);
    const replay = await http(
      callback.replace(/\/oauth\/callback.*$/, ''),
      'GET',
      callback.slice(callback.indexOf('/oauth/callback')),
    );
    expect(replay.status).toBe(410);
    expect(replay.body).toMatchObject({ error_type: 'gone', payload: { reason: 'state_used' } });
    const unknown = await http(stack.url, 'GET', '/oauth/callback?state=nope&code=x');
    expect(unknown.status).toBe(400);
  });

  it('a sign-in older than 10 minutes is refused at the callback', async () => {
    const start = await get(
      authorizeUrl({
        response_type: 'code',
        client_id: 'c',
        redirect_uri: CLIENT_CALLBACK,
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      }),
    );
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    await query(
      stack.db.url,
      `update mcp_oauth_authorizations set expires_at = now() - interval '1 second' where id = $1`,
      [state],
    );
    const res = await http(stack.url, 'GET', `/oauth/callback?state=${state}&code=upstream-code`);
    expect(res.status).toBe(410);
    expect(res.body.payload.reason).toBe('state_expired');
  });

  it('refuses a PKCE verifier that does not match, without asking the provider', async () => {
    const { client } = await signIn(pkce().challenge);
    const before = idp.tokenRequests.length;
    const res = await token({
      grant_type: 'authorization_code',
      code: client.searchParams.get('code')!,
      redirect_uri: CLIENT_CALLBACK,
      client_id: 'test-client',
      code_verifier: pkce().verifier,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('PKCE') });
    expect(idp.tokenRequests.length).toBe(before);
  });

  it('refuses a different redirect_uri or client_id at the token endpoint', async () => {
    const { verifier, challenge } = pkce();
    const { client } = await signIn(challenge);
    const res = await token({
      grant_type: 'authorization_code',
      code: client.searchParams.get('code')!,
      redirect_uri: 'http://127.0.0.1:10/other',
      client_id: 'test-client',
      code_verifier: verifier,
    });
    expect(res.body.error).toBe('invalid_grant');
  });

  it('answers a request that fails validation with an RFC 6749 body, never the envelope alone', async () => {
    const res = await token({ grant_type: 'refresh_token', refresh_token: 'refresh\u0000-1' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: 'invalid_request',
      error_type: 'bad_request',
      request_id: res.headers.get('x-request-id'),
    });
    expect(res.body.error_description).toContain('body.refresh_token');
  });

  it('passes refresh tokens through and names unsupported grants', async () => {
    const ok = await token({ grant_type: 'refresh_token', refresh_token: 'refresh-1' });
    expect(ok.status).toBe(200);
    expect(ok.body.access_token).toEqual(expect.any(String));
    const bad = await token({ grant_type: 'password' });
    expect(bad.body.error).toBe('unsupported_grant_type');
  });

  it('accepts built-in and listed callbacks', async () => {
    for (const uri of ['https://claude.ai/api/mcp/auth_callback', 'https://tools.example.com/cb', 'myapp://done']) {
      const res = await get(
        authorizeUrl({
          response_type: 'code',
          client_id: 'c',
          redirect_uri: uri,
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
        }),
      );
      expect(res.status).toBe(302);
    }
  });

  it.each([
    ['https://evil.example/cb', 'redirect_uri_not_listed'],
    ['http://evil.example/cb', 'redirect_uri_not_https'],
    ['javascript:alert(1)', 'redirect_uri_unsafe_scheme'],
    ['data:text/html,x', 'redirect_uri_unsafe_scheme'],
  ])('refuses %s before any redirect', async (uri, reason) => {
    const rows = async () =>
      Number(
        (await query<{ n: string }>(stack.db.url, 'select count(*)::text as n from mcp_oauth_authorizations'))[0]!.n,
      );
    const before = await rows();
    const upstreamBefore = idp.authorizeRequests.length;
    const res = await get(
      authorizeUrl({
        response_type: 'code',
        client_id: 'c',
        redirect_uri: uri,
        state: 's',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      }),
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(((await res.json()) as any).payload).toMatchObject({ oauth_error: 'invalid_request', reason });
    expect(await rows()).toBe(before);
    expect(idp.authorizeRequests.length).toBe(upstreamBefore);
  });

  it('requires PKCE S256', async () => {
    const plain = await get(
      authorizeUrl({
        response_type: 'code',
        client_id: 'c',
        redirect_uri: CLIENT_CALLBACK,
        code_challenge: pkce().challenge,
        code_challenge_method: 'plain',
      }),
    );
    expect(plain.status).toBe(400);
    const missing = await get(authorizeUrl({ response_type: 'code', client_id: 'c', redirect_uri: CLIENT_CALLBACK }));
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as any).payload.fields.map((f: { field: string }) => f.field)).toEqual(
      expect.arrayContaining(['query.code_challenge', 'query.code_challenge_method']),
    );
  });
});

describe('metadata with the OAuth proxy', () => {
  it('the platform is the authorization server', async () => {
    const resource = await http(stack.url, 'GET', '/.well-known/oauth-protected-resource/mcp/v2');
    expect(resource.body).toMatchObject({
      resource: `${stack.url}/mcp/v2`,
      authorization_servers: [stack.url],
      platform_auth_mode: 'oauth_proxy',
    });
    const server = await http(stack.url, 'GET', '/.well-known/oauth-authorization-server');
    expect(server.body).toEqual({
      issuer: stack.url,
      authorization_endpoint: `${stack.url}/authorize`,
      token_endpoint: `${stack.url}/oauth/token`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    });
  });

  it('follows X-Forwarded-* when no public URL is configured', async () => {
    const server = await http(stack.url, 'GET', '/.well-known/oauth-authorization-server', {
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gw.example.com' },
    });
    expect(server.body).toMatchObject({
      issuer: 'https://gw.example.com',
      token_endpoint: 'https://gw.example.com/oauth/token',
    });
  });
});
