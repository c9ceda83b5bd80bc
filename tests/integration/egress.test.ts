/**
 * Every integration refuses a cloud-metadata address and a private one with the classified egress
 * error, before any socket is opened (issue 9, section 3). The stacks allow loopback (their fakes
 * live there) but not private ranges. No request ever leaves loopback: every socket this process
 * opens during the file is recorded and checked.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startThread } from '../../api/threads/service.js';
import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { LlmFailureError } from '../../shared/errors.js';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-idp.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { path, propose, ticket } from '../action-review/support.js';
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
  let auth: Stack;
  let signer: FakeIdp;

  beforeAll(async () => {
    s = await startCrmStack({
      TICKET_TRACKER_URL: `http://${address}/tracker`,
      PLATFORM_LLM_BASE_URL: `http://${address}/v1`,
      PLATFORM_LLM_MODEL: 'm',
    });
    signer = await startFakeIdp();
    // Sign-in (JWKS) and the OAuth proxy's upstream discovery both point at the refused address.
    auth = await startStack({
      worker: false,
      env: {
        AUTH_PROVIDER: 'oidc',
        AUTH_JWKS_URL: `http://${address}/jwks`,
        AUTH_ISSUER: `http://${address}/realms/platform`,
        AUTH_AUDIENCE: signer.audience,
        AUTH_CLIENT_ID: 'platform-gateway',
        AUTH_CLIENT_SECRET: 'upstream-secret',
        PLATFORM_OAUTH_PROXY_ENABLED: 'true',
      },
    });
  });
  afterAll(async () => {
    await s?.close();
    await auth?.close();
    await signer?.close();
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

  it('language model: the call is refused as a non-retryable llm_error (egress_refused)', async () => {
    const em = s.r.stack.api.deps.orm.em.fork();
    const err = await startThread(s.r.stack.api.deps, em, person(`egress-${address}`), {
      initialPrompt: 'hello',
      origin: 'mcp_origin',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmFailureError);
    const failure = ((err as LlmFailureError).payload as { llm_failure: Record<string, string> }).llm_failure;
    expect(failure.kind).toBe('egress_refused');
    expect(failure.message).toMatch(policyMessage);
  });

  it('ticket tracker: the ticket is not_applied (egress_refused) and nothing was sent', async () => {
    const id = await propose(s.r.stack.url, s.r.tokens.rita, ticket('egress'));
    const approved = await http(s.r.stack.url, 'POST', path(id, '/approve'), { token: s.r.tokens.ravi, body: {} });
    expect(approved.status).toBe(200);
    const res = await http(s.r.stack.url, 'POST', path(id, '/execute'), { token: s.r.tokens.ravi });
    expect(res.body).toMatchObject({ final_status: 'not_applied', refusal_reason: 'egress_refused' });
    expect(res.body.refusal_detail).toMatch(/^The issue tracker's address is not allowed for outbound requests: /);
    expect(res.body.refusal_detail).toMatch(policyMessage);
  });

  it('identity provider: the JWKS fetch is refused; the request answers 503 naming the policy', async () => {
    const token = await signer.sign(
      { sub: 'ada', roles: ['admin'] },
      { expiresIn: '1h', issuer: `http://${address}/realms/platform` },
    );
    const res = await http(auth.url, 'GET', '/api/agents', { token });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error_type: 'service_unavailable' });
    expect(res.body.error).toMatch(
      /^The identity provider's signing keys \(AUTH_JWKS_URL\) are not allowed for outbound requests: /,
    );
    expect(res.body.error).toMatch(policyMessage);
  });

  it('OAuth proxy: upstream discovery is refused; /authorize answers 503 naming the policy', async () => {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'test-client',
      redirect_uri: 'http://127.0.0.1:9/callback',
      state: 'client-state',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const res = await http(auth.url, 'GET', `/authorize?${query}`);
    expect(res.status, res.text).toBe(503);
    expect(res.text).toMatch(/The identity provider's discovery document is not allowed for outbound requests: /);
    expect(res.text).toMatch(policyMessage);
  });
});
