/**
 * Hosted MCP in a container-service deployment (spec, Authentication item 3): the warehouse's ingress
 * authenticates MCP clients with the user's own warehouse credentials and names the login in
 * `Sf-Context-Current-User`. The gateway acts as that user (their recorded tenant and roles; a new login
 * is a person with no roles), reports the mode with OIDC checks not applicable, still takes a PAT, and
 * trusts the header nowhere else: not outside container-service mode, not on the REST API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintPat } from '../../shared/auth/store.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { callPlatform, connectMcp, rawMcpPost } from './support.js';

const HEADER = 'Sf-Context-Current-User';
let stack: Stack;
let plain: Stack;
let pat: string;

const users = (id: string) => query(stack.db.url, 'select id, tenant, kind, roles from users where id = $1', [id]);

beforeAll(async () => {
  [stack, plain] = await Promise.all([
    startStack({ worker: false, env: { AUTH_PROVIDER: 'proxy', PLATFORM_CONTAINER_SERVICE_MODE: 'true' } }),
    startStack({ worker: false, env: { AUTH_PROVIDER: 'proxy' } }),
  ]);
  const em = stack.api.deps.orm.em.fork();
  const owner = { id: 'ana', tenant: 'default', kind: 'person' as const, email: 'ANA@acme.example', roles: ['admin'] };
  ({ token: pat } = await mintPat(em, { owner: { ...owner, displayName: 'Ana' }, name: 'mcp', expiresAt: null }));
});
afterAll(async () => {
  await Promise.all([stack?.close(), plain?.close()]);
});

describe('hosted MCP behind a container-service ingress', () => {
  it('a warehouse login naming a platform user acts as that user, with OIDC checks not applicable', async () => {
    const client = await connectMcp(stack.url, '/mcp/v2/', { [HEADER]: 'ANA' });
    const { isError, data } = await callPlatform(client, { action: 'status' });
    await client.close();
    expect(isError).toBe(false);
    expect(data.caller).toMatchObject({ kind: 'person', id: 'ana', roles: ['admin'], credential: 'ingress' });
    expect(data.auth).toMatchObject({
      mode: 'ingress',
      provider: 'proxy',
      issuer: null,
      oidc_checks: 'not_applicable',
    });
    expect(data.auth.guidance).toContain('warehouse credentials');
  });

  it('a new login is recorded as a person of the deployment tenant with no roles', async () => {
    const client = await connectMcp(stack.url, '/mcp/v2/', { [HEADER]: 'NEW_ANALYST' });
    const { data } = await callPlatform(client, { action: 'status' });
    await client.close();
    expect(data.caller).toMatchObject({ kind: 'person', id: 'NEW_ANALYST', roles: [], credential: 'ingress' });
    expect(await users('NEW_ANALYST')).toEqual([{ id: 'NEW_ANALYST', tenant: 'default', kind: 'person', roles: [] }]);
  });

  it('without the header a PAT still works, and nothing at all is a 401 naming the ingress', async () => {
    const withPat = await rawMcpPost(stack.url, '/mcp/', { authorization: `Bearer ${pat}` });
    expect(withPat.status).toBe(200);
    const none = await rawMcpPost(stack.url, '/mcp/');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="/);
    const body = (await none.json()) as { error: string };
    expect(body).toMatchObject({ error_type: 'authentication' });
    expect(body.error).toContain('warehouse credentials');
  });

  it('a header longer than any warehouse login is refused and records nothing', async () => {
    const before = await query(stack.db.url, 'select count(*)::int as n from users');
    const res = await rawMcpPost(stack.url, '/mcp/', { [HEADER]: 'A'.repeat(256) });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(await res.json()).toMatchObject({ error_type: 'authentication' });
    expect(await query(stack.db.url, 'select count(*)::int as n from users')).toEqual(before);
  });

  it('the protected-resource document names the ingress mode', async () => {
    const doc = await http(stack.url, 'GET', '/.well-known/oauth-protected-resource/mcp');
    expect(doc.body).toMatchObject({ platform_auth_mode: 'ingress', scopes_supported: [] });
  });

  it('the header is trusted nowhere else: not on the REST API, not outside container-service mode', async () => {
    const rest = await http(stack.url, 'GET', '/api/auth/me', { headers: { [HEADER]: 'ANA' } });
    expect(rest.status).toBe(401);
    const elsewhere = await rawMcpPost(plain.url, '/mcp/', { [HEADER]: 'ANA' });
    expect(elsewhere.status).toBe(401);
    expect(await users('ANA')).toEqual([]);
  });
});
