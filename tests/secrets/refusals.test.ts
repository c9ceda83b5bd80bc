import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { query } from '../helpers/db.js';
import { http, type Stack } from '../helpers/stack.js';
import { startSecretsStack } from './support.js';

/** Outside container-service mode: who may call the secrets routes, and what answers 400 there. */
let s: OidcStack;
let stack: Stack;
let admin: string;
let member: string;

const ROUTES: Array<[string, string, unknown?]> = [
  ['GET', '/api/secrets/encryption-key/status'],
  ['POST', '/api/secrets/encryption-key/enable'],
  ['GET', '/api/secrets/encryption-key/verify-setup'],
  ['GET', '/api/secrets/mesh-auth-key/status'],
  ['GET', '/api/secrets/mesh-auth-key/setup'],
  ['GET', '/api/secrets/mesh-auth-key/verify-setup'],
  ['GET', '/api/secrets/mesh-auth-key/disable-template'],
  ['POST', '/api/secrets/mesh-auth-key/enable'],
  ['POST', '/api/secrets/mesh-auth-key/disable'],
  ['GET', '/api/secrets/mesh-auth-key/egress'],
  ['PUT', '/api/secrets/mesh-auth-key/egress', { entries: ['example.com:443'] }],
  ['GET', '/api/secrets/mesh-auth-key/advertise-tags'],
  ['PUT', '/api/secrets/mesh-auth-key/advertise-tags', { tags: ['tag:web'] }],
];

beforeAll(async () => {
  s = await startSecretsStack({
    env: { PLATFORM_SECRETS_KEY: 'refusals-secrets-key-of-at-least-32-bytes' },
    tokens: { admin: { sub: 'ada', roles: ['admin'] }, member: { sub: 'mo', roles: ['member'] } },
  });
  stack = s.stack;
  ({ admin, member } = s.tokens);
});
afterAll(() => s?.close());

describe('secrets routes outside container-service mode', () => {
  it('answer 401 without a credential and 403 without manage_secrets, on every route', async () => {
    for (const [method, path, body] of ROUTES) {
      const anon = await http(stack.url, method, path, { body });
      expect(anon.status, `${method} ${path}`).toBe(401);
      expect(anon.body.error_type).toBe('authentication');
      const denied = await http(stack.url, method, path, { body, token: member });
      expect(denied.status, `${method} ${path}`).toBe(403);
      expect(denied.body.error_type).toBe('forbidden');
    }
  });

  it('answer 400 container_service_mode_required everywhere but the key status, writing nothing', async () => {
    for (const [method, path, body] of ROUTES.slice(1)) {
      const res = await http(stack.url, method, path, { body, token: admin });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
      expect(res.body.payload.code).toBe('container_service_mode_required');
    }
    expect(await query(stack.db.url, 'select * from secret_keys')).toEqual([]);
    expect(await query(stack.db.url, 'select * from secret_rotations')).toEqual([]);
    expect(await query(stack.db.url, 'select * from mesh_settings')).toEqual([]);
  });

  it('reports the key status: missing while no managed key is enabled, with the root key fingerprint only', async () => {
    const res = await http(stack.url, 'GET', '/api/secrets/encryption-key/status', { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      status: 'missing',
      container_service_mode: false,
      root_key: { source: 'env' },
      active_key: null,
      rotation: null,
    });
    expect(res.body.data.root_key.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(res.text).not.toContain('refusals-secrets-key');
  });
});
