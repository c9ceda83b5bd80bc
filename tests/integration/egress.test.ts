/**
 * Every integration an administrator saves refuses a cloud-metadata address and a private one with
 * the classified egress error, before any socket is opened (issue 9, section 3). The stacks allow
 * loopback CRM hosts (their fakes live there) but not private ranges. Operator endpoints (identity
 * provider, tracker, bootstrap model) are checked at start instead: tests/http/trust.test.ts. No
 * request ever leaves loopback: every socket this process opens during the file is recorded and checked.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startThread } from '../../api/threads/service.js';
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

describe.each([
  [
    'a cloud-metadata address',
    '169.254.169.254',
    /address 169\.254\.169\.254 is link-local \(cloud metadata\); outbound requests to it are never allowed/,
  ],
  [
    'a private address',
    '10.0.0.1',
    /address 10\.0\.0\.1 is private; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set/,
  ],
])('egress to %s', (_label, address, policyMessage) => {
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

  it('CRM connection save: a login host there fails the connection test with the classified refusal', async () => {
    const tokensBefore = { ...s.crm.counts.token };
    const res = await save(
      `crm_login_${address.replace(/\./g, '_')}`,
      'jwt_bearer',
      jwtConfig(s, { login_host: `https://${address}` }),
    );
    expect(res.status, res.text).toBe(201);
    const test = res.body.data.connection_test;
    expect(test.status).toBe('failed');
    expect(test.checks[0]).toMatchObject({ target: 'login_host', ok: false });
    expect(test.checks[0].detail).toMatch(/^The CRM host is not allowed: /);
    expect(test.checks[0].detail).toMatch(policyMessage);
    expect(s.crm.counts.token).toEqual(tokensBefore);
  });

  it('CRM OAuth token: a token URL there is refused at the authorization callback; no tokens are kept', async () => {
    const name = `crm_token_${address.replace(/\./g, '_')}`;
    const created = await save(name, 'user_oauth', {
      login_host: s.crm.url,
      token_url: `https://${address}/services/oauth2/token`,
      client_id: s.crm.app.clientId,
      client_secret: s.crm.app.clientSecret,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.connection_test.status).toBe('authorization_required');
    s.crm.app.callbackUrl = created.body.data.redirect_uri;
    const start = await http(s.r.stack.url, 'GET', `/api/connections/${name}/oauth/authorize`, { token: s.admin });
    const atCrm = await fetch(start.body.data.authorization_url, { redirect: 'manual' });
    const codesBefore = s.crm.counts.token.authorization_code ?? 0;
    const back = await fetch(atCrm.headers.get('location')!);
    const body = (await back.json()) as { error: string; error_type: string };
    expect(back.status).toBe(400);
    expect(body.error_type).toBe('bad_request');
    expect(body.error).toMatch(/^The CRM host is not allowed: /);
    expect(body.error).toMatch(policyMessage);
    expect(s.crm.counts.token.authorization_code ?? 0).toBe(codesBefore);
    const stored = await http(s.r.stack.url, 'GET', `/api/connections/${name}`, { token: s.admin });
    expect(stored.body.data.authorized).toBe(false);
  });

  it('CRM instance host: a configured one there fails the REST check; a discovered one there is refused with the tokens', async () => {
    s.crm.calls = [];
    const configured = await save(
      `crm_inst_${address.replace(/\./g, '_')}`,
      'jwt_bearer',
      jwtConfig(s, { instance_url: `https://${address}` }),
    );
    expect(configured.status, configured.text).toBe(201);
    expect(
      configured.body.data.connection_test.checks.map((c: { target: string; ok: boolean }) => [c.target, c.ok]),
    ).toEqual([
      ['login_host', true],
      ['instance_url', false],
    ]);
    expect(configured.body.data.connection_test.checks[1].detail).toMatch(policyMessage);

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

  it('language model: a saved provider there is refused as a non-retryable llm_error (egress_refused)', async () => {
    // Built-in agents are seeded once per tenant per process: each row uses a tenant of its own.
    const tenant = `egress-${address.replace(/\./g, '-')}`;
    const admin = await s.r.idp.sign({ sub: 'ada', roles: ['admin'], tenant }, { expiresIn: '1h' });
    const provider = { sub_provider: 'egress', base_url: `http://${address}/v1`, api_key: 'k', model_name: 'm' };
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
    const em = s.r.stack.api.deps.orm.em.fork();
    const err = await startThread(s.r.stack.api.deps, em, person(tenant), {
      initialPrompt: 'hello',
      origin: 'mcp_origin',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmFailureError);
    const failure = ((err as LlmFailureError).payload as { llm_failure: Record<string, string> }).llm_failure;
    expect(failure.kind).toBe('egress_refused');
    expect(failure.message).toMatch(policyMessage);
  });
});
