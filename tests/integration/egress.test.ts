/**
 * Every integration an administrator saves refuses a cloud-metadata address and a private one: when
 * saved (400 EGRESS_REFUSED, nothing written) and, for a host saved while the policy allowed it or
 * discovered later, at use with the classified egress error before any socket is opened (issue 9,
 * section 3; issue 28, item 9). The stacks allow loopback CRM hosts (their fakes live there) but not
 * private ranges. Operator endpoints (identity provider, tracker, bootstrap model) are checked at start
 * instead: tests/http/trust.test.ts; every family's save-time refusal on the default deployment:
 * tests/http/saved-endpoints.test.ts. No request ever leaves loopback: every socket this process opens
 * during the file is recorded and checked.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startThread } from '../../shared/threads/service.js';
import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { LlmFailureError } from '../../shared/errors.js';
import { http } from '../helpers/stack.js';
import { jwtConfig, startCrmStack, type CrmStack } from '../crm/support.js';

/** Every socket connect in this process (API, worker and test share it), by target host. */
const targets: string[] = [];
const originalConnect = net.Socket.prototype.connect;
beforeAll(() => {
  vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const host =
      typeof first === 'object' && first !== null
        ? ((first as { host?: string; path?: string }).host ?? (first as { path?: string }).path ?? 'localhost')
        : String(args[1] ?? 'localhost');
    targets.push(host);
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  });
});
afterAll(() => {
  vi.restoreAllMocks();
  expect(targets.length).toBeGreaterThan(0); // the watch saw the loopback traffic (database, fakes, API)
  // Loopback only: by address, or by the names a loopback fake is reached under.
  const outside = targets.filter((h) => !['127.0.0.1', '::1', 'localhost'].includes(h) && !h.startsWith('/'));
  expect(outside).toEqual([]);
});

// Built-in agents are seeded once per tenant per process: each stack gets a tenant of its own.
const person = (tenant: string): Principal => ({
  kind: 'person',
  id: 'local-admin',
  tenant,
  displayName: 'local-admin',
  roles: ['admin'],
  permissions: permissionsFor(['admin']),
  credential: 'idp_jwt',
});

const PRIVATE_REFUSED = /address 10\.0\.0\.1 is private; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set/;

describe.each([
  [
    'a cloud-metadata address',
    '169.254.169.254',
    /address 169\.254\.169\.254 is link-local \(cloud metadata\); outbound requests to it are never allowed/,
    null,
  ],
  ['a private address', '10.0.0.1', PRIVATE_REFUSED, 'PLATFORM_EGRESS_ALLOW_PRIVATE'],
])('egress to %s', (_label, address, policyMessage, allowedBy) => {
  let s: CrmStack;

  beforeAll(async () => {
    // The deployment's default for private ranges (the shared stacks open them for their fakes).
    s = await startCrmStack({ PLATFORM_EGRESS_ALLOW_PRIVATE: 'false' });
  });
  afterAll(async () => {
    await s?.close();
  });

  const save = (name: string, authMode: string, config: Record<string, unknown>) =>
    http(s.r.stack.url, 'POST', '/api/connections', {
      token: s.admin,
      body: { name, type: 'crm', auth_mode: authMode, config },
    });
  const connections = async () =>
    (await http(s.r.stack.url, 'GET', '/api/connections', { token: s.admin })).body.data.connections.map(
      (c: { name: string }) => c.name,
    ) as string[];

  it('CRM connection save: a login host, token URL or instance URL there is refused at save; nothing saved or sent', async () => {
    const before = await connections();
    const tokensBefore = { ...s.crm.counts.token };
    const oauth = { login_host: s.crm.url, client_id: s.crm.app.clientId, client_secret: s.crm.app.clientSecret };
    for (const [field, mode, config] of [
      ['login_host', 'jwt_bearer', jwtConfig(s, { login_host: `https://${address}` })],
      ['token_url', 'user_oauth', { ...oauth, token_url: `https://${address}/services/oauth2/token` }],
      ['instance_url', 'jwt_bearer', jwtConfig(s, { instance_url: `https://${address}` })],
    ] as const) {
      const res = await save(`crm_${field}`, mode, config);
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({
        error_type: 'bad_request',
        request_id: expect.any(String),
        payload: {
          code: 'EGRESS_REFUSED',
          host: address,
          allowed_by: allowedBy,
          fields: [{ field: `body.config.${field}` }],
        },
      });
      expect(res.body.error).toMatch(/^The CRM host \S+ is not allowed for outbound requests: /);
      expect(res.body.error).toMatch(policyMessage);
    }
    expect(await connections()).toEqual(before);
    expect(s.crm.counts.token).toEqual(tokensBefore);
  });

  it('CRM instance host discovered from the token response there is refused with the tokens (checked at use)', async () => {
    s.crm.calls = [];
    // The instance URL a token response names is discovered, not configured: the same policy applies.
    s.crm.instanceUrl = `https://${address}`;
    try {
      const discovered = await save(`crm_disc_${address.replace(/\./g, '_')}`, 'jwt_bearer', jwtConfig(s));
      expect(discovered.status, discovered.text).toBe(201);
      const check = discovered.body.data.connection_test.checks[0];
      expect(check).toMatchObject({ target: 'login_host', ok: false });
      expect(check.detail).toMatch(/^The CRM instance \(instance_url from the token response\) host is not allowed: /);
      expect(check.detail).toMatch(policyMessage);
      // The refused tokens were not kept: the instance host never became an egress host.
      expect(discovered.body.data.egress_hosts).toEqual([new URL(s.crm.url).host]);
    } finally {
      s.crm.instanceUrl = undefined;
    }
    expect(s.crm.calls).toEqual([]);
  });

  it('language model: a provider there is refused at save (EGRESS_REFUSED); nothing saved', async () => {
    const tenant = `egress-save-${address.replace(/\./g, '-')}`;
    const admin = await s.r.idp.sign({ sub: 'ada', roles: ['admin'], tenant }, { expiresIn: '1h' });
    const provider = { sub_provider: 'egress', base_url: `http://${address}/v1`, api_key: 'k', model_name: 'm' };
    const saved = await http(s.r.stack.url, 'POST', '/api/config/llm-providers/other', {
      token: admin,
      body: provider,
    });
    expect(saved.status, saved.text).toBe(400);
    expect(saved.body.payload).toEqual({
      code: 'EGRESS_REFUSED',
      host: address,
      allowed_by: allowedBy,
      fields: [{ field: 'body.base_url', message: expect.stringMatching(policyMessage) }],
    });
    const info = await http(s.r.stack.url, 'GET', '/api/config/llm-providers/info', { token: admin });
    expect(info.body.data.providers).toEqual([]);
  });
});

describe('a private host saved while PLATFORM_EGRESS_ALLOW_PRIVATE was set, used after it is removed', () => {
  let s: CrmStack;
  beforeAll(async () => {
    s = await startCrmStack({ PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' });
  });
  afterAll(async () => {
    await s?.close();
  });
  /** The deployment restarted without the flag (the API reads this configuration object at each request). */
  const withoutFlag = async (run: () => Promise<void>) => {
    s.r.stack.config.egress.allowPrivate = false;
    try {
      await run();
    } finally {
      s.r.stack.config.egress.allowPrivate = true;
    }
  };

  it('CRM OAuth token: a token URL there is refused at the authorization callback; no tokens are kept', async () => {
    const name = 'crm_token_private';
    const created = await http(s.r.stack.url, 'POST', '/api/connections', {
      token: s.admin,
      body: {
        name,
        type: 'crm',
        auth_mode: 'user_oauth',
        config: {
          login_host: s.crm.url,
          token_url: 'https://10.0.0.1/services/oauth2/token',
          client_id: s.crm.app.clientId,
          client_secret: s.crm.app.clientSecret,
        },
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.connection_test.status).toBe('authorization_required');
    s.crm.app.callbackUrl = created.body.data.redirect_uri;
    await withoutFlag(async () => {
      const start = await http(s.r.stack.url, 'GET', `/api/connections/${name}/oauth/authorize`, { token: s.admin });
      const atCrm = await fetch(start.body.data.authorization_url, { redirect: 'manual' });
      const codesBefore = s.crm.counts.token.authorization_code ?? 0;
      const back = await fetch(atCrm.headers.get('location')!);
      const body = (await back.json()) as { error: string; error_type: string };
      expect(back.status).toBe(400);
      expect(body.error_type).toBe('bad_request');
      expect(body.error).toMatch(/^The CRM host is not allowed: /);
      expect(body.error).toMatch(PRIVATE_REFUSED);
      expect(s.crm.counts.token.authorization_code ?? 0).toBe(codesBefore);
    });
    const stored = await http(s.r.stack.url, 'GET', `/api/connections/${name}`, { token: s.admin });
    expect(stored.body.data.authorized).toBe(false);
  });

  it('language model: a saved provider there is refused as a non-retryable llm_error (egress_refused)', async () => {
    // Built-in agents are seeded once per tenant per process: this test uses a tenant of its own.
    const tenant = 'egress-at-use';
    const admin = await s.r.idp.sign({ sub: 'ada', roles: ['admin'], tenant }, { expiresIn: '1h' });
    const provider = { sub_provider: 'egress', base_url: 'http://10.0.0.1/v1', api_key: 'k', model_name: 'm' };
    const saved = await http(s.r.stack.url, 'POST', '/api/config/llm-providers/other', {
      token: admin,
      body: provider,
    });
    expect(saved.body, saved.text).toMatchObject({ success: true });
    const active = await http(s.r.stack.url, 'POST', '/api/config/llm-providers/other/activate', {
      token: admin,
      body: { sub_provider: 'egress' },
    });
    expect(active.body, active.text).toMatchObject({ success: true });
    await withoutFlag(async () => {
      const em = s.r.stack.api.deps.orm.em.fork();
      const err = await startThread(s.r.stack.api.deps, em, person(tenant), {
        initialPrompt: 'hello',
        origin: 'mcp_origin',
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LlmFailureError);
      const failure = ((err as LlmFailureError).payload as { llm_failure: Record<string, string> }).llm_failure;
      expect(failure.kind).toBe('egress_refused');
      expect(failure.message).toMatch(PRIVATE_REFUSED);
    });
  });
});
