import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintPat } from '../../shared/auth/store.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { callPlatform, connectMcp, rawMcpPost } from './support.js';

// Header/proxy auth (AUTH_PROVIDER=proxy, no issuer) behind a configured public URL.
let stack: Stack;
let pat: string;
const PUBLIC = 'https://platform.example.com';

beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: { AUTH_PROVIDER: 'proxy', PLATFORM_MCP_PUBLIC_URL: `${PUBLIC}/mcp/` },
  });
  const em = stack.api.deps.orm.em.fork();
  ({ token: pat } = await mintPat(em, {
    owner: { id: 'hana', tenant: 'default', kind: 'person', displayName: 'Hana', email: null, roles: ['admin'] },
    name: 'mcp',
    expiresAt: null,
  }));
});
afterAll(async () => {
  await stack?.close();
});

describe('header/proxy auth with a configured public URL', () => {
  it('the protected-resource document has no authorization server and says to use a PAT', async () => {
    const doc = await http(stack.url, 'GET', '/.well-known/oauth-protected-resource/mcp', {
      headers: { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'ignored.example' },
    });
    expect(doc.body).toEqual({
      resource: `${PUBLIC}/mcp`,
      scopes_supported: [],
      bearer_methods_supported: ['header'],
      resource_name: 'Data-agent platform MCP gateway',
      resource_documentation: `${PUBLIC}/docs`,
      platform_auth_mode: 'header',
      platform_auth_guidance: expect.stringContaining('personal access token'),
    });
  });

  it('the authorization-server document answers 404 naming header auth', async () => {
    const res = await http(stack.url, 'GET', '/.well-known/oauth-authorization-server');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      error_type: 'not_found',
      payload: { reason: 'no_authorization_server', platform_auth_mode: 'header' },
    });
  });

  it('the challenge uses the public URL', async () => {
    const res = await rawMcpPost(stack.url, '/mcp/v1/');
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource/mcp/v1"`,
    );
  });

  it('status over a PAT reports header auth with OIDC checks not applicable', async () => {
    const client = await connectMcp(stack.url, '/mcp/v2/', { Authorization: `Bearer ${pat}` });
    const { data } = await callPlatform(client, { action: 'status' });
    await client.close();
    expect(data.gateway.endpoint).toBe(`${PUBLIC}/mcp/v2/`);
    expect(data.auth).toMatchObject({ mode: 'header', provider: 'proxy', issuer: null, oidc_checks: 'not_applicable' });
    expect(data.caller).toMatchObject({ id: 'hana', credential: 'pat' });
  });

  it('admits the public origin and refuses others', async () => {
    const ok = await rawMcpPost(stack.url, '/mcp/', { origin: PUBLIC, authorization: `Bearer ${pat}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(PUBLIC);
    expect(ok.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
    const bad = await rawMcpPost(stack.url, '/mcp/', {
      origin: 'https://platform.example.com.evil.example',
      authorization: `Bearer ${pat}`,
    });
    expect(bad.status).toBe(403);
    const preflight = await fetch(`${stack.url}/mcp/`, { method: 'OPTIONS', headers: { origin: PUBLIC } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Mcp-Protocol-Version');
  });
});
