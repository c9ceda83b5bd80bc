import { describe, expect, it } from 'vitest';
import { isAppOnlyToken } from '../../api/auth/authenticate.js';
import { BUILT_IN_ROLES, PERMISSIONS, permissionsFor } from '../../shared/auth/rbac.js';
import { hashToken, mintToken, secretsEqual } from '../../shared/auth/tokens.js';

describe('RBAC', () => {
  it('gives the built-in admin role every permission the spec names, and the presenter capability', () => {
    expect([...permissionsFor(['admin'])].sort()).toEqual([...PERMISSIONS].sort());
    // The 14 of Authentication item 7, plus `present_demos` (hosted demo presenter routes).
    expect(PERMISSIONS).toHaveLength(15);
    expect(PERMISSIONS).toContain('present_demos');
  });
  it('unions the permissions of several roles and ignores unknown roles', () => {
    const p = permissionsFor(['reviewer', 'member', 'no-such-role']);
    expect(p.has('APPROVE_AGENT_ACTION')).toBe(true);
    expect(p.has('view_git')).toBe(true);
    expect(p.has('manage_users')).toBe(false);
  });
  it('only grants known permissions', () => {
    for (const perms of Object.values(BUILT_IN_ROLES)) for (const p of perms) expect(PERMISSIONS).toContain(p);
  });
});

describe('app-only tokens', () => {
  it.each([
    [{ sub: 'x', gty: 'client-credentials' }, true],
    [{ sub: 'c1', azp: 'c1' }, true],
    [{ sub: 'c1', client_id: 'c1' }, true],
    [{ sub: 'sp-object-id', azp: 'app-id', idtyp: 'app' }, true],
    [{ sub: 'f3a1', azp: 'etl', preferred_username: 'service-account-etl' }, true],
    [{ sub: 'alice', azp: 'spa-client' }, false],
    [{ sub: 'alice', azp: 'spa-client', idtyp: 'user', preferred_username: 'alice' }, false],
    [{ sub: 'alice', gty: 'password' }, false],
  ])('%o → %s', (claims, expected) => {
    expect(isAppOnlyToken(claims)).toBe(expected);
  });
});

describe('opaque tokens', () => {
  it('mints prefixed, unguessable tokens and stores only a hash', () => {
    const a = mintToken('gp_');
    const b = mintToken('gp_');
    expect(a.token).toMatch(/^gp_[A-Za-z0-9_-]{43}$/);
    expect(a.token).not.toBe(b.token);
    expect(a.hash).toBe(hashToken(a.token));
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.displayPrefix).toBe(a.token.slice(0, 9));
  });
  it('compares secrets of different lengths safely', () => {
    expect(secretsEqual('abc', 'abc')).toBe(true);
    expect(secretsEqual('abc', 'abcd')).toBe(false);
  });
});
