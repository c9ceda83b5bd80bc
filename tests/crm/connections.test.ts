import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  createJwtConnection,
  jwtConfig,
  POLICY,
  seedContacts,
  SURVIVOR,
  startCrmStack,
  type CrmStack,
} from './support.js';

let s: CrmStack;
const create = (body: Record<string, unknown>, token = s.admin) =>
  http(s.r.stack.url, 'POST', '/api/connections', { token, body: { type: 'crm', ...body } });
const count = async () =>
  (await query(s.r.stack.db.url, 'select count(*)::int as n from crm_connections'))[0]!.n as number;

beforeAll(async () => {
  s = await startCrmStack();
  seedContacts(s.crm);
});
afterAll(async () => s?.close());

describe('connection types', () => {
  it('lists the CRM type under Dev Tools with its modes and field tables', async () => {
    const res = await http(s.r.stack.url, 'GET', '/api/connections/types', { token: s.r.tokens.rita });
    expect(res.status).toBe(200);
    const crm = res.body.data.types[0];
    expect(crm).toMatchObject({
      type: 'crm',
      category: 'Dev Tools',
      auth_modes: ['user_oauth', 'jwt_bearer', 'refresh_token', 'client_credentials'],
    });
    expect(crm.mode_fields.user_oauth.find((f: { name: string }) => f.name === 'scopes')).toMatchObject({
      required: false,
      default: 'api refresh_token',
    });
    // The URL defaults are full URLs on the standard login host, as the spec's table shows.
    const field = (name: string) => crm.mode_fields.user_oauth.find((f: { name: string }) => f.name === name);
    expect(field('authorization_url')).toMatchObject({
      required: false,
      default: 'https://login.salesforce.com/services/oauth2/authorize',
    });
    expect(field('token_url')).toMatchObject({
      required: false,
      default: 'https://login.salesforce.com/services/oauth2/token',
    });
  });
});

describe('validation: 400 naming the field, nothing saved', () => {
  it.each([
    [
      'a missing required field',
      {
        auth_mode: 'jwt_bearer',
        config: { consumer_key: 'k', private_key: 'x', login_host: 'https://login.example.com' },
      },
      'body.config.username',
    ],
    ['an unknown mode', { auth_mode: 'password', config: {} }, 'body.auth_mode'],
    [
      'a malformed policy',
      {
        auth_mode: 'refresh_token',
        config: {
          client_id: 'c',
          client_secret: 's',
          refresh_token: 'r',
          login_host: 'https://login.example.com',
          merge_enabled: 'true',
          merge_survivorship_policy: '{not json',
        },
      },
      'body.config.merge_survivorship_policy',
    ],
    [
      'a policy rule outside the list',
      {
        auth_mode: 'refresh_token',
        config: {
          client_id: 'c',
          client_secret: 's',
          refresh_token: 'r',
          login_host: 'https://login.example.com',
          merge_enabled: 'true',
          merge_survivorship_policy: { ...POLICY, rules: { Email: 'prefer_longest' } },
        },
      },
      'body.config.merge_survivorship_policy.rules.Email',
    ],
    [
      'merge enabled without a policy',
      {
        auth_mode: 'refresh_token',
        config: {
          client_id: 'c',
          client_secret: 's',
          refresh_token: 'r',
          login_host: 'https://login.example.com',
          merge_enabled: 'true',
        },
      },
      'body.config.merge_survivorship_policy',
    ],
    [
      'a non-HTTPS host',
      {
        auth_mode: 'refresh_token',
        config: { client_id: 'c', client_secret: 's', refresh_token: 'r', login_host: 'http://login.example.com' },
      },
      'body.config.login_host',
    ],
    [
      'client credentials on the standard login host',
      {
        auth_mode: 'client_credentials',
        config: { client_id: 'c', client_secret: 's', login_host: 'login.salesforce.com' },
      },
      'body.config.login_host',
    ],
  ])('refuses %s', async (_what, body, field) => {
    const res = await create({ name: 'bad_one', ...body });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error_type).toBe('bad_request');
    expect(res.body.payload.fields.map((f: { field: string }) => f.field)).toContain(field);
    expect(await count()).toBe(0);
  });

  it('needs manage_all_connections to create', async () => {
    const res = await create({ name: 'x', auth_mode: 'jwt_bearer', config: jwtConfig(s) }, s.r.tokens.rita);
    expect(res.status).toBe(403);
    expect(res.body.payload.required_permission).toBe('manage_all_connections');
  });
});

describe('jwt_bearer', () => {
  it('saves sealed secrets, masks them, tests login and instance hosts, lists egress hosts', async () => {
    const data = await createJwtConnection(s, 'crm_jwt');
    expect(data.config.private_key).toBe('********');
    expect(data.connection_test).toMatchObject({ status: 'passed' });
    expect(data.connection_test.checks.map((c: { target: string; ok: boolean }) => [c.target, c.ok])).toEqual([
      ['login_host', true],
      ['instance_url', true],
    ]);
    expect(data.egress_hosts).toEqual([new URL(s.crm.url).host]);
    const [row] = await query(
      s.r.stack.db.url,
      `select secrets_sealed, tokens_sealed, settings::text as settings from crm_connections where name = 'crm_jwt'`,
    );
    expect(row!.secrets_sealed).toMatch(/^v1\./);
    expect(`${row!.secrets_sealed}${row!.tokens_sealed}${row!.settings}`).not.toContain('PRIVATE KEY');
    expect(s.crm.counts.token['urn:ietf:params:oauth:grant-type:jwt-bearer']).toBeGreaterThanOrEqual(1);
  });

  it('records a failing test when the CRM rejects the assertion (wrong user), with the fix', async () => {
    const res = await create({
      name: 'crm_jwt_bad',
      auth_mode: 'jwt_bearer',
      config: jwtConfig(s, { username: 'nobody@example.com' }),
    });
    expect(res.status).toBe(201);
    expect(res.body.data.connection_test.status).toBe('failed');
    expect(res.body.data.connection_test.checks[0].detail).toMatch(
      /invalid_grant.*hasn't approved this consumer.*Pre-authorize/,
    );
  });

  it('gets a new token when the CRM answers 401, through the crm_connector tool', async () => {
    s.crm.revokeAccessTokens();
    const res = await http(s.r.stack.url, 'POST', '/api/tool_call', {
      token: s.r.tokens.rita,
      body: {
        tool: 'crm_connector',
        arguments: {
          action: 'get_record',
          connection_name: 'crm_jwt',
          record_kind: 'Contact',
          record_id: SURVIVOR,
          fields: ['LastName'],
        },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(JSON.stringify(res.body)).toContain('Lovelace');
  });
});

describe('refresh_token and client_credentials', () => {
  it('refresh_token: a revoked token fails the test with the CRM pair', async () => {
    const ok = await create({
      name: 'crm_rt',
      auth_mode: 'refresh_token',
      config: {
        client_id: s.crm.app.clientId,
        client_secret: s.crm.app.clientSecret,
        refresh_token: s.crm.issueRefreshToken(),
        login_host: s.crm.url,
      },
    });
    expect(ok.body.data.connection_test.status).toBe('passed');
    const bad = await create({
      name: 'crm_rt2',
      auth_mode: 'refresh_token',
      config: {
        client_id: s.crm.app.clientId,
        client_secret: s.crm.app.clientSecret,
        refresh_token: 'revoked',
        login_host: s.crm.url,
      },
    });
    expect(bad.body.data.connection_test.checks[0].detail).toMatch(/expired access\/refresh token/);
  });

  it('client_credentials: refused by a standard login host with the custom-domain fix', async () => {
    s.crm.customDomain = false;
    const res = await create({
      name: 'crm_cc',
      auth_mode: 'client_credentials',
      config: { client_id: s.crm.app.clientId, client_secret: s.crm.app.clientSecret, login_host: s.crm.url },
    });
    s.crm.customDomain = true;
    expect(res.body.data.connection_test.checks[0].detail).toMatch(/not supported on this domain.*custom-domain host/);
  });
});

describe('user_oauth (authorization code with PKCE)', () => {
  it('authorizes through the displayed redirect URI; a mismatch is surfaced with the fix', async () => {
    const body = {
      name: 'crm_oauth_main',
      auth_mode: 'user_oauth',
      config: {
        login_host: s.crm.url,
        client_id: s.crm.app.clientId,
        client_secret: s.crm.app.clientSecret,
        scopes: 'api,refresh_token',
      },
    };
    const created = await create(body);
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      authorized: false,
      connection_test: { status: 'authorization_required' },
    });
    expect(created.body.data.redirect_uri).toBe(`${s.r.stack.url}/api/connections/crm_oauth_main/oauth/callback`);

    const follow = async () => {
      const start = await http(s.r.stack.url, 'GET', '/api/connections/crm_oauth_main/oauth/authorize', {
        token: s.admin,
      });
      expect(new URL(start.body.data.authorization_url).searchParams.get('code_challenge_method')).toBe('S256');
      const atCrm = await fetch(start.body.data.authorization_url, { redirect: 'manual' });
      return fetch(atCrm.headers.get('location')!);
    };
    s.crm.app.callbackUrl = 'https://elsewhere.example.com/callback';
    const mismatch = await follow();
    const refused = (await mismatch.json()) as { payload: Record<string, string> };
    expect(mismatch.status).toBe(400);
    expect(refused.payload).toMatchObject({
      code: 'redirect_uri_mismatch',
      redirect_uri: created.body.data.redirect_uri,
    });
    expect(refused.payload.fix).toMatch(/Re-copy the displayed redirect URI/);

    s.crm.app.callbackUrl = created.body.data.redirect_uri;
    // The org's instance answers on another host name than the login host: it must join the egress hosts.
    s.crm.instanceUrl = s.crm.url.replace('127.0.0.1', 'localhost');
    const refreshes = s.crm.counts.token.refresh_token ?? 0;
    s.crm.calls = [];
    const done = await follow();
    expect(done.status).toBe(200);
    const authorized = ((await done.json()) as { data: Record<string, any> }).data;
    // The callback re-runs the connection test with the new tokens: a refresh grant at the login
    // host and a REST call at the instance host, stored and returned.
    expect(authorized).toMatchObject({ authorized: true, connection_test: { status: 'passed' } });
    expect(authorized.connection_test.checks.map((c: Record<string, unknown>) => [c.target, c.ok, c.detail])).toEqual([
      ['login_host', true, 'token obtained'],
      ['instance_url', true, 'REST API answered'],
    ]);
    expect(s.crm.counts.token.refresh_token).toBe(refreshes + 1);
    expect(s.crm.calls).toEqual([{ method: 'GET', path: '/services/data/' }]);
    const stored = await http(s.r.stack.url, 'GET', '/api/connections/crm_oauth_main', { token: s.r.tokens.rita });
    expect(stored.body.data.connection_test).toEqual(authorized.connection_test);
    const loginHost = new URL(s.crm.url).host;
    expect(stored.body.data.egress_hosts).toEqual([loginHost, loginHost.replace('127.0.0.1', 'localhost')]);
    s.crm.instanceUrl = undefined;
  });
});
