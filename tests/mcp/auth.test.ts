import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { callPlatform, connectMcp, rawMcpPost } from './support.js';

// Sign-in through the identity provider directly (no OAuth proxy, no configured public URL).
let idp: FakeOidc;
let stack: Stack;
let pat: string;
const clients: Client[] = [];

beforeAll(async () => {
  idp = await startFakeOidc();
  stack = await startStack({
    worker: false,
    env: { AUTH_PROVIDER: 'oidc', AUTH_JWKS_URL: idp.jwksUrl, AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: idp.audience },
  });
  const minted = await http(stack.url, 'POST', '/api/auth/pats', {
    token: await idp.sign({ sub: 'paula', name: 'Paula', roles: ['admin'] }),
    body: { name: 'mcp' },
  });
  expect(minted.status).toBe(201);
  pat = minted.body.data.token;
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await stack?.close();
  await idp?.close();
});

const metadataUrl = (mount: string) => `${stack.url}/.well-known/oauth-protected-resource${mount}`;

describe('401 challenge', () => {
  it.each([
    ['/mcp', '/mcp'],
    ['/mcp/', '/mcp'],
    ['/mcp/v2/', '/mcp/v2'],
    ['/mcp/v1', '/mcp/v1'],
  ])('%s without a credential names its resource metadata', async (path, mount) => {
    const res = await rawMcpPost(stack.url, path);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl(mount)}"`);
    const body = (await res.json()) as Record<string, any>;
    expect(body).toMatchObject({ error_type: 'authentication', request_id: res.headers.get('x-request-id') });
    expect(body.error).toContain('personal access token');
  });

  it.each([
    ['a forged JWT', async () => idp.sign({ sub: 'mallory' }, { foreignKey: true })],
    ['an unknown PAT', async () => 'gp_' + 'x'.repeat(40)],
    ['a JWT for another audience', async () => idp.sign({ sub: 'mallory' }, { audience: 'other' })],
  ])('%s adds error="invalid_token"', async (_name, token) => {
    const res = await rawMcpPost(stack.url, '/mcp/v2/', { authorization: `Bearer ${await token()}` });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${metadataUrl('/mcp/v2')}", error="invalid_token"`,
    );
  });

  it('builds the challenge from X-Forwarded-Proto and X-Forwarded-Host', async () => {
    const res = await rawMcpPost(stack.url, '/mcp/v2/', {
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'gw.example.com',
    });
    expect(res.headers.get('www-authenticate')).toBe(
      'Bearer resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp/v2"',
    );
  });

  it('leaves the plain challenge on the rest of the API', async () => {
    const res = await http(stack.url, 'GET', '/api/auth/me');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });
});

describe('authenticated clients', () => {
  it('a PAT works with the SDK client; status reports the caller and oidc mode', async () => {
    const client = await connectMcp(stack.url, '/mcp/v2/', { Authorization: `Bearer ${pat}` });
    clients.push(client);
    const { isError, data } = await callPlatform(client, { action: 'status' });
    expect(isError).toBe(false);
    expect(data.caller).toMatchObject({ kind: 'person', id: 'paula', display_name: 'Paula', credential: 'pat' });
    expect(data.auth).toMatchObject({
      mode: 'oidc',
      provider: 'oidc',
      issuer: idp.issuer,
      oidc_checks: 'applicable',
      resource_metadata: metadataUrl('/mcp/v2'),
    });
  });

  it('an identity-provider token works; v1 login points at the issuer and logout at the PAT route', async () => {
    const client = await connectMcp(stack.url, '/mcp/v1/', {
      Authorization: `Bearer ${await idp.sign({ sub: 'ivan', name: 'Ivan' })}`,
    });
    clients.push(client);
    const login = await callPlatform(client, { action: 'login' });
    expect(login.data).toMatchObject({ mode: 'oidc', sign_in_url: idp.issuer });
    const status = await callPlatform(client, { action: 'login_status' });
    expect(status.data).toMatchObject({
      authenticated: true,
      sign_in_required: true,
      caller: { id: 'ivan', credential: 'idp_jwt' },
    });
  });

  it('logout names the current PAT to revoke', async () => {
    const client = await connectMcp(stack.url, '/mcp/v1', { Authorization: `Bearer ${pat}` });
    clients.push(client);
    const { data } = await callPlatform(client, { action: 'logout' });
    expect(data.revoke_current_token).toMatch(new RegExp(`^DELETE ${stack.url}/api/auth/pats/[0-9a-f-]{36}$`));
  });
});

describe('metadata without the OAuth proxy', () => {
  it('protected-resource documents point at the upstream issuer, one per mounted path', async () => {
    const root = await http(stack.url, 'GET', '/.well-known/oauth-protected-resource');
    expect(root.status).toBe(200);
    expect(root.headers.get('access-control-allow-origin')).toBe('*');
    expect(root.body).toMatchObject({
      resource: stack.url,
      authorization_servers: [idp.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: expect.arrayContaining(['openid']),
      resource_name: expect.any(String),
      platform_auth_mode: 'oidc',
    });
    for (const mount of ['/mcp', '/mcp/v1', '/mcp/v2']) {
      const doc = await http(stack.url, 'GET', `/.well-known/oauth-protected-resource${mount}`);
      expect(doc.body.resource).toBe(`${stack.url}${mount}`);
    }
  });

  it('authorization-server metadata mirrors the upstream provider', async () => {
    const doc = await http(stack.url, 'GET', '/.well-known/oauth-authorization-server');
    expect(doc.status).toBe(200);
    expect(doc.headers.get('access-control-allow-origin')).toBe('*');
    expect(doc.body).toMatchObject({
      issuer: idp.issuer,
      authorization_endpoint: `${idp.issuer}/authorize?tenant_hint=acme`,
      token_endpoint: `${idp.issuer}/token`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['client_secret_post'],
      code_challenge_methods_supported: ['S256'],
    });
  });

  it('honours X-Forwarded-Proto and X-Forwarded-Host', async () => {
    const doc = await http(stack.url, 'GET', '/.well-known/oauth-protected-resource/mcp/v2', {
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gw.example.com' },
    });
    expect(doc.body.resource).toBe('https://gw.example.com/mcp/v2');
  });

  it('the OAuth proxy routes answer 404 with the envelope', async () => {
    for (const [method, path] of [
      ['GET', '/authorize?client_id=x'],
      ['GET', '/oauth/callback?state=x'],
    ] as const) {
      const res = await http(stack.url, method, path);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error_type: 'not_found', payload: { reason: 'oauth_proxy_disabled' } });
    }
    const token = await http(stack.url, 'POST', '/oauth/token', {
      raw: 'grant_type=authorization_code&code=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(token.status).toBe(404);
    expect(token.body.payload.reason).toBe('oauth_proxy_disabled');
  });

  it('form bodies stay refused on JSON routes', async () => {
    const res = await http(stack.url, 'POST', '/api/auth/pats', {
      raw: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      token: pat,
    });
    expect(res.status).toBe(415);
  });
});
