import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { LlmError } from '../../shared/llm/client.js';
import { providerClient } from '../../shared/llm/providers.js';
import { query } from '../helpers/db.js';
import type { FakeLlm } from '../helpers/fake-llm.js';
import { startFakeOauthToken, type FakeOauthToken } from '../helpers/fake-oauth-token.js';
import { http, type Stack } from '../helpers/stack.js';
import { startLlmConfigStack, type LlmConfigStack } from './support.js';

let s: LlmConfigStack;
let llm: FakeLlm;
let oauth: FakeOauthToken;
let stack: Stack;
let admin: string;
let clientNo = 0;

beforeAll(async () => {
  oauth = await startFakeOauthToken('proxy-client', 'proxy-secret');
  s = await startLlmConfigStack();
  ({
    stack,
    llm,
    tokens: { admin },
  } = s);
});
afterAll(async () => {
  await s?.close();
  await oauth?.close();
});
beforeEach(() => {
  // A client of its own per test, so no test sees another's cached token.
  oauth.clientId = `proxy-client-${++clientNo}`;
  oauth.method = 'client_secret_basic';
  oauth.expiresIn = 3600;
  llm.apiKey = oauth.nextToken();
});
afterEach(() => {
  vi.useRealTimers();
});

const call = (method: string, path: string, body?: unknown) =>
  http(stack.url, method, path, { token: admin, ...(body === undefined ? {} : { body }) });
const proxyRows = () =>
  query<{ settings: Record<string, unknown>; secret_fields: string[] }>(
    stack.db.url,
    `select settings, secret_fields from llm_providers where provider_kind = 'proxy'`,
  );
const fields = (extra: Record<string, unknown> = {}) => ({
  base_url: llm.baseUrl,
  auth_mechanism: 'oauth_client_credentials',
  oauth_token_url: oauth.tokenUrl,
  oauth_client_id: oauth.clientId,
  oauth_client_secret: 'proxy-secret',
  model_name: 'fake-model',
  ...extra,
});
const client = (extra: Record<string, unknown> = {}) =>
  providerClient({ kind: 'proxy', fields: fields(extra), egress: stack.config.egress, timeoutMs: 5000 });
const ping = [{ role: 'user' as const, content: 'ping' }];
const chatCalls = () => llm.calls.filter((c) => c.path === '/v1/chat/completions');

describe('proxy provider, auth_mechanism oauth_client_credentials: saving', () => {
  it('needs the token endpoint, client id and client secret before writing anything', async () => {
    for (const [omit, says] of [
      ['oauth_token_url', /oauth_token_url is required when auth_mechanism is oauth_client_credentials/],
      ['oauth_client_id', /oauth_client_id is required when auth_mechanism is oauth_client_credentials/],
      ['oauth_client_secret', /oauth_client_secret is required when auth_mechanism is oauth_client_credentials/],
    ] as const) {
      const body: Record<string, unknown> = fields({ test_connection: true });
      delete body[omit];
      const res = await call('POST', '/api/config/llm-providers/proxy', body);
      expect([res.status, res.body.error_type]).toEqual([400, 'bad_request']);
      expect(res.body.error).toMatch(says);
    }
    const unknownMechanism = await call('POST', '/api/config/llm-providers/proxy', fields({ auth_mechanism: 'oauth' }));
    expect(unknownMechanism.status).toBe(400);
    expect(unknownMechanism.body.error_type).toBe('bad_request');
    expect(await proxyRows()).toEqual([]);
    expect(oauth.requests.filter((r) => r.clientId === oauth.clientId)).toEqual([]);
  });

  it('authenticates at the token endpoint as oauth_token_endpoint_auth_method says (Basic by default, or form fields), keeps the settings a PUT omits and masks the secret', async () => {
    // The endpoint takes only Basic: a client sending its credentials as form fields is refused, nothing saved.
    const posted = await call(
      'POST',
      '/api/config/llm-providers/proxy',
      fields({ oauth_token_endpoint_auth_method: 'client_secret_post', test_connection: true }),
    );
    expect(posted.status).toBe(200);
    expect(posted.body.success).toBe(false);
    expect(posted.body.message).toMatch(/token endpoint refused the OAuth client credentials.*Nothing was saved/);
    expect(posted.text).not.toMatch(/FAKE-IDP|invalid_client/);
    expect(oauth.requests.at(-1)).toMatchObject({
      method: 'client_secret_post',
      clientId: oauth.clientId,
      grantType: 'client_credentials',
    });
    expect(await proxyRows()).toEqual([]);

    const saved = await call('POST', '/api/config/llm-providers/proxy', fields({ test_connection: true }));
    expect(saved.body).toMatchObject({ success: true });
    expect(oauth.requests.at(-1)).toMatchObject({ method: 'client_secret_basic', clientId: oauth.clientId });
    const token = llm.apiKey;
    expect(llm.calls.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models', credential: token });

    // Now the endpoint takes only form fields: switching the method on PUT passes the test.
    oauth.method = 'client_secret_post';
    llm.apiKey = oauth.nextToken();
    const switched = await call('PUT', '/api/config/llm-providers/proxy', {
      oauth_token_endpoint_auth_method: 'client_secret_post',
      allow_user_oauth_fallback_for_non_interactive: true,
      test_connection: true,
    });
    expect(switched.body).toMatchObject({ success: true });
    expect(oauth.requests.at(-1)).toMatchObject({ method: 'client_secret_post', clientId: oauth.clientId });
    expect(llm.calls.at(-1)).toMatchObject({ path: '/v1/models', credential: llm.apiKey });

    expect((await call('PUT', '/api/config/llm-providers/proxy', { model_name: 'fake-embed' })).body.success).toBe(
      true,
    );
    const [row] = await proxyRows();
    expect(row!.settings).toMatchObject({
      auth_mechanism: 'oauth_client_credentials',
      transport: 'chat_completions',
      oauth_token_endpoint_auth_method: 'client_secret_post',
      allow_user_oauth_fallback_for_non_interactive: true,
      oauth_token_url: oauth.tokenUrl,
      oauth_client_id: oauth.clientId,
      model_name: 'fake-embed',
    });
    expect(row!.secret_fields).toContain('oauth_client_secret');
    expect(JSON.stringify(row)).not.toContain('proxy-secret');
    const info = await call('GET', '/api/config/llm-providers/info');
    expect(info.text).not.toContain('proxy-secret');
    const view = info.body.data.providers.find((p: { provider_kind: string }) => p.provider_kind === 'proxy');
    expect(view.secrets).toEqual({ oauth_client_secret: '********' });

    await call('DELETE', '/api/config/llm-providers/proxy', {});
  });
});

describe('proxy provider, auth_mechanism oauth_client_credentials: calls', () => {
  it('reuses one token for two calls and sends the configured scope', async () => {
    const proxy = client({ oauth_scope: 'models.read chat' });
    const before = oauth.issued;
    expect((await proxy.chat(ping, [])).content).toBe('ok');
    expect((await proxy.chat(ping, [])).content).toBe('ok');
    expect(oauth.issued).toBe(before + 1);
    expect(
      chatCalls()
        .slice(-2)
        .map((c) => c.credential),
    ).toEqual([llm.apiKey, llm.apiKey]);
    expect(oauth.requests.at(-1)).toMatchObject({ method: 'client_secret_basic', scope: 'models.read chat' });
  });

  it('gets a new token once the cached one is about to expire', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = new Date('2030-01-01T00:00:00Z').getTime();
    vi.setSystemTime(start);
    const proxy = client();
    const before = oauth.issued;
    const first = llm.apiKey;
    await proxy.chat(ping, []);
    vi.setSystemTime(start + 3000 * 1000);
    await proxy.chat(ping, []);
    expect(oauth.issued).toBe(before + 1);
    // Within the last minute of the token's hour it is renewed before use.
    vi.setSystemTime(start + 3570 * 1000);
    llm.apiKey = oauth.nextToken();
    await proxy.chat(ping, []);
    expect(oauth.issued).toBe(before + 2);
    expect(
      chatCalls()
        .slice(-3)
        .map((c) => c.credential),
    ).toEqual([first, first, llm.apiKey]);
  });

  it('on a 401 from the proxy renews the token and retries once', async () => {
    const proxy = client();
    await proxy.chat(ping, []);
    const before = oauth.issued;
    const old = llm.apiKey;
    // The proxy stops accepting the cached token (revoked): one renewal, one retry, success.
    llm.apiKey = oauth.nextToken();
    expect((await proxy.chat(ping, [])).content).toBe('ok');
    expect(oauth.issued).toBe(before + 1);
    expect(
      chatCalls()
        .slice(-2)
        .map((c) => c.credential),
    ).toEqual([old, llm.apiKey]);

    // A proxy refusing every token: exactly one retry, then the classified authentication failure.
    llm.apiKey = 'nothing-will-do';
    const attempts = chatCalls().length;
    const err = await proxy.chat(ping, []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect((err as LlmError).failure.kind).toBe('authentication');
    expect(chatCalls().length - attempts).toBe(2);
    expect(oauth.issued).toBe(before + 2);
  });

  it('a wrong client secret is a classified authentication failure without the provider text', async () => {
    const before = chatCalls().length;
    const err = await client({ oauth_client_secret: 'wrong-secret' })
      .chat(ping, [])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    const { failure, detailForLogs } = err as LlmError;
    expect(failure).toMatchObject({
      kind: 'authentication',
      message: "The proxy's token endpoint refused the OAuth client credentials.",
      error_id: expect.stringMatching(/^llm_[0-9a-f]{16}$/),
    });
    expect(failure.action).toMatch(/oauth_client_secret/);
    expect(JSON.stringify(failure)).not.toMatch(/FAKE-IDP|invalid_client|wrong-secret/);
    expect(detailForLogs).toMatch(/invalid_client/);
    expect(chatCalls().length).toBe(before);
  });
});
