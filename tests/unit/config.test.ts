import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type AppConfig } from '../../shared/config.js';
import { projectRoot } from '../../shared/project-root.js';

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

/** Every string in the config that names a file or folder (the keys the config resolves). */
function configuredPaths(c: AppConfig): Record<string, string | undefined> {
  return {
    dataDir: c.dataDir,
    skillsDir: c.skillsDir,
    'secrets.keyFile': c.secrets.keyFile,
    'managedSources.dir': c.managedSources.dir,
    'blueprints.dir': c.blueprints.dir,
    'mesh.authKeyFile': c.mesh.authKeyFile,
    ...Object.fromEntries(c.documentIndex.roots.map((r, i) => [`documentIndex.roots[${i}]`, r])),
  };
}

describe('configured paths', () => {
  const cwd = process.cwd();
  afterEach(() => process.chdir(cwd));

  it('are all absolute, under the project root, with PLATFORM_DATA_DIR unset', () => {
    const c = loadConfig({});
    expect(c.dataDir).toBe(path.join(projectRoot, '.data'));
    for (const [key, value] of Object.entries(configuredPaths(c))) {
      if (value === undefined || key === 'dataDir') continue;
      expect(path.isAbsolute(value), key).toBe(true);
      expect(value.startsWith(c.dataDir + path.sep), key).toBe(true);
    }
    expect(c.managedSources.dir).toBe(path.join(projectRoot, '.data', 'managed-sources'));
    expect(c.documentIndex.roots).toEqual([path.join(projectRoot, '.data', 'documents')]);
  });

  it('resolve relative values against the project root, whatever the current directory', () => {
    const env = {
      PLATFORM_DATA_DIR: 'state/',
      PLATFORM_SKILLS_DIR: './skills',
      PLATFORM_BLUEPRINTS_DIR: 'bp',
      PLATFORM_MESH_AUTH_KEY_FILE: 'keys/mesh.key',
      PLATFORM_DOCUMENT_INDEX_ROOTS: 'docs-a:/abs/docs-b',
    };
    process.chdir(os.tmpdir());
    const elsewhere = loadConfig(env);
    process.chdir(cwd);
    expect(loadConfig(env)).toEqual(elsewhere);
    for (const [key, value] of Object.entries(configuredPaths(elsewhere)))
      expect(path.isAbsolute(value!), key).toBe(true);
    expect(elsewhere).toMatchObject({
      dataDir: path.join(projectRoot, 'state'),
      skillsDir: path.join(projectRoot, 'skills'),
      secrets: { keyFile: path.join(projectRoot, 'state', 'secrets.key') },
      managedSources: { dir: path.join(projectRoot, 'state', 'managed-sources') },
      blueprints: { dir: path.join(projectRoot, 'bp') },
      mesh: { authKeyFile: path.join(projectRoot, 'keys', 'mesh.key') },
      documentIndex: { roots: [path.join(projectRoot, 'docs-a'), '/abs/docs-b'] },
    });
  });

  it('npm start uses the same data folder as the API and the worker', async () => {
    const { dataDir } = await import('../../scripts/lib/paths.js');
    expect(dataDir).toBe(loadConfig(process.env).dataDir);
    expect(path.isAbsolute(dataDir)).toBe(true);
  });
});
