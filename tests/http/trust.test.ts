/**
 * Trust levels of outbound endpoints (shared/http/trust.ts): operator endpoints are reached as
 * configured and checked at start; administrator-saved ones follow PLATFORM_EGRESS_ALLOW_PRIVATE;
 * URLs supplied with a request never reach private or loopback addresses. The checks here use
 * literal addresses only: no DNS, no connection.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { assertEgressAllowed, EgressError } from '../../shared/http/egress.js';
import { refusedAtSave } from '../../shared/http/egress-policy.js';
import { crmEgress, egressFor } from '../../shared/http/trust.js';
import { startOidcStack, type OidcStack } from '../helpers/oidc-stack.js';
import { http } from '../helpers/stack.js';

const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The deployment defaults, over the shared stacks' allowance for their loopback fakes. */
const DEFAULT_EGRESS = { PLATFORM_EGRESS_ALLOW_PRIVATE: 'false', CRM_ALLOW_INSECURE_LOOPBACK: 'false' };

const refusal = async (url: string, policy: Parameters<typeof assertEgressAllowed>[1]) => {
  const err = await assertEgressAllowed(url, policy).then(
    () => null,
    (e: unknown) => e,
  );
  if (err !== null && !(err instanceof EgressError)) throw err;
  return err?.message ?? null;
};

describe('the policy each trust level gets', () => {
  const closed = loadConfig({});
  const open = loadConfig({ PLATFORM_EGRESS_ALLOW_PRIVATE: 'true', CRM_ALLOW_INSECURE_LOOPBACK: 'true' });

  it('operator endpoints reach loopback and private addresses without any flag; metadata never', async () => {
    const operator = egressFor(closed, 'operator');
    expect(await refusal('http://127.0.0.1:9/jwks', operator)).toBeNull();
    expect(await refusal('http://10.0.0.5/jwks', operator)).toBeNull();
    expect(await refusal('http://169.254.169.254/jwks', operator)).toMatch(/cloud metadata\); .* never allowed/);
  });

  it('administrator-saved endpoints reach loopback and private addresses only with PLATFORM_EGRESS_ALLOW_PRIVATE', async () => {
    expect(await refusal('http://127.0.0.1:9/', egressFor(closed, 'admin'))).toBe(
      'address 127.0.0.1 is loopback; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set',
    );
    expect(await refusal('http://10.0.0.5/', egressFor(closed, 'admin'))).toBe(
      'address 10.0.0.5 is private; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set',
    );
    expect(await refusal('http://127.0.0.1:9/', egressFor(open, 'admin'))).toBeNull();
    expect(await refusal('http://10.0.0.5/', egressFor(open, 'admin'))).toBeNull();
    // The CRM flag opens loopback for CRM hosts only, and only a CRM refusal names it.
    const crmOnly = loadConfig({ CRM_ALLOW_INSECURE_LOOPBACK: 'true' });
    expect(await refusal('http://127.0.0.1:9/', egressFor(crmOnly, 'admin'))).toMatch(
      /PLATFORM_EGRESS_ALLOW_PRIVATE is set$/,
    );
    expect(await refusal('http://127.0.0.1:9/', crmEgress(crmOnly))).toBeNull();
    expect(await refusal('http://127.0.0.1:9/', crmEgress(closed))).toBe(
      'address 127.0.0.1 is loopback; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE or CRM_ALLOW_INSECURE_LOOPBACK is set',
    );
  });

  it('URLs supplied with a request never reach private or loopback addresses, whatever the flags', async () => {
    const user = egressFor(open, 'user');
    for (const [url, address] of [
      ['http://127.0.0.1:9/', 'address 127.0.0.1 is loopback'],
      ['http://10.0.0.5/', 'address 10.0.0.5 is private'],
      ['http://[::ffff:192.168.1.1]/', 'address ::ffff:c0a8:101 is private'],
    ]) {
      expect(await refusal(url!, user)).toBe(
        `${address}; a URL supplied with a request never reaches private or loopback addresses`,
      );
    }
    expect(refusedAtSave('http://localhost:8080/x', user)?.message).toMatch(/^host localhost is loopback; /);
  });
});

describe('operator endpoints are checked at start', () => {
  it.each([
    ['AUTH_JWKS_URL', { AUTH_PROVIDER: 'oidc', AUTH_ISSUER: 'https://idp.example.com/', AUTH_AUDIENCE: 'a' }],
    ['TICKET_TRACKER_URL', {}],
    ['PLATFORM_LLM_BASE_URL', {}],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', {}],
  ] as const)('%s at a metadata address or not an http(s) URL stops loadConfig naming it', (name, rest) => {
    const load = (value: string) => () =>
      loadConfig({ AUTH_JWKS_URL: 'https://idp.example.com/jwks', ...rest, [name]: value });
    expect(load('http://169.254.169.254/x')).toThrow(ConfigError);
    expect(load('http://169.254.169.254/x')).toThrow(
      new RegExp(`^${name} is not allowed for outbound requests: address 169\\.254\\.169\\.254 is link-local`),
    );
    expect(load('http://metadata.google.internal/x')).toThrow(/is a cloud metadata endpoint/);
    expect(load('ftp://idp.example.com/x')).toThrow(new RegExp(`^${name} must be an http\\(s\\) URL`));
    expect(load('http://127.0.0.1:9/x')).not.toThrow();
  });

  it('AUTH_ISSUER is checked when it is a URL (its discovery is fetched) and must be one for the OAuth proxy', () => {
    expect(() => loadConfig({ AUTH_ISSUER: 'http://169.254.169.254/realm' })).toThrow(/^AUTH_ISSUER is not allowed/);
    expect(loadConfig({ AUTH_ISSUER: 'urn:example:issuer' }).auth.issuer).toBe('urn:example:issuer');
    expect(() =>
      loadConfig({ AUTH_ISSUER: 'urn:example:issuer', AUTH_CLIENT_ID: 'c', PLATFORM_OAUTH_PROXY_ENABLED: 'true' }),
    ).toThrow(/^AUTH_ISSUER must be an http\(s\) URL/);
    // The issuer is compared with tokens' `iss` exactly: kept as written, trailing slash included.
    expect(loadConfig({ AUTH_ISSUER: 'http://127.0.0.1:9/' }).auth.issuer).toBe('http://127.0.0.1:9/');
  });

  it('the API process exits non-zero with one line naming the variable and the reason', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
      cwd: projectRoot,
      env: {
        PATH: process.env.PATH,
        AUTH_PROVIDER: 'oidc',
        AUTH_JWKS_URL: 'http://169.254.169.254/latest/jwks',
        AUTH_ISSUER: 'https://idp.example.com/',
        AUTH_AUDIENCE: 'platform-api',
        PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      'AUTH_JWKS_URL is not allowed for outbound requests: address 169.254.169.254 is link-local (cloud metadata); outbound requests to it are never allowed (got "http://169.254.169.254/latest/jwks")',
    );
  }, 60_000);
});

describe('an identity provider on loopback, configured by the operator, on the default egress settings', () => {
  let env: OidcStack;
  beforeAll(async () => {
    env = await startOidcStack({ worker: false, dataDirPrefix: 'trust-idp-', env: DEFAULT_EGRESS });
  }, 60_000);
  afterAll(() => env?.close());

  it('authenticates requests (its keys are fetched), and refuses a bad token with 401, not 503', async () => {
    expect(env.stack.config.egress.allowPrivate).toBe(false);
    const token = await env.idp.sign({ sub: 'ada', roles: ['admin'] });
    const ok = await http(env.stack.url, 'GET', '/api/agents', { token });
    expect(ok.status, ok.text).toBe(200);
    const forged = await http(env.stack.url, 'GET', '/api/agents', { token: `${token.slice(0, -4)}AAAA` });
    expect(forged.status).toBe(401);
    expect(forged.body.error_type).toBe('authentication');
  });
});
