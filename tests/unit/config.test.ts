import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.js';

describe('loadConfig', () => {
  it('has working local defaults', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.auth.provider).toBe('none');
    expect(c.auth.rolesClaim).toBe('roles');
    expect(c.auth.deploymentTenant).toBe('default');
    expect(c.temporal).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'platform' });
    expect(c.limits.jsonBodyBytes).toBe(1024 * 1024);
  });

  it('reads every documented variable', () => {
    const c = loadConfig({
      PORT: '9000',
      AUTH_PROVIDER: 'oidc',
      AUTH_JWKS_URL: 'https://idp/jwks',
      AUTH_ISSUER: 'https://idp/',
      AUTH_AUDIENCE: 'api',
      AUTH_ROLES_CLAIM: 'realm_access.roles',
      PLATFORM_TENANT: 'acme',
      TEMPORAL_ADDRESS: 'temporal:7233',
      MAX_JSON_BODY_BYTES: '100',
      LOG_LEVEL: 'debug',
    });
    expect(c).toMatchObject({ port: 9000, logLevel: 'debug', limits: { jsonBodyBytes: 100 } });
    expect(c.auth).toMatchObject({ provider: 'oidc', rolesClaim: 'realm_access.roles', deploymentTenant: 'acme' });
  });

  it.each([
    [{ AUTH_PROVIDER: 'ldap' }, /AUTH_PROVIDER must be one of/],
    [{ AUTH_PROVIDER: 'oidc' }, /needs AUTH_JWKS_URL, AUTH_ISSUER and AUTH_AUDIENCE/],
    [{ PORT: 'eighty' }, /PORT: not a TCP port/],
    [{ MAX_JSON_BODY_BYTES: '-1' }, /MAX_JSON_BODY_BYTES must be a positive integer/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be/],
  ])('refuses %o naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
