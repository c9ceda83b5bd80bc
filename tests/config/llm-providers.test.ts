import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { secretBox } from '../../shared/secrets/secret-box.js';
import { query } from '../helpers/db.js';
import type { FakeLlm } from '../helpers/fake-llm.js';
import { http, type Stack } from '../helpers/stack.js';
import { startLlmConfigStack, type LlmConfigStack } from './support.js';

let s: LlmConfigStack;
let llm: FakeLlm;
let stack: Stack;
let admin: string;
let member: string;

beforeAll(async () => {
  s = await startLlmConfigStack();
  ({
    stack,
    llm,
    tokens: { admin, member },
  } = s);
});
afterAll(() => s?.close());
beforeEach(() => {
  llm.apiKey = undefined;
  llm.redirects = {};
  llm.embeddingsHang = false;
});

const call = (method: string, path: string, body?: unknown, token = admin) =>
  http(stack.url, method, path, { token, ...(body === undefined ? {} : { body }) });
const rows = (kind: string) =>
  query<{
    sub_provider: string;
    secrets_sealed: string | null;
    secret_fields: string[];
    settings: Record<string, unknown>;
    admission: string;
  }>(
    stack.db.url,
    'select sub_provider, secrets_sealed, secret_fields, settings, admission from llm_providers where provider_kind = $1 order by sub_provider',
    [kind],
  );
const storedSecret = async (kind: string, field: string, sub = '') =>
  (
    JSON.parse(
      secretBox(stack.config).open((await rows(kind)).find((r) => r.sub_provider === sub)!.secrets_sealed!),
    ) as Record<string, string>
  )[field];

describe('saving providers', () => {
  it('creates once; a second create answers success false and writes nothing', async () => {
    const body = { sub_provider: 'acme', base_url: llm.baseUrl, api_key: 'k1', model_name: 'fake-model' };
    const first = await call('POST', '/api/config/llm-providers/other', body);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true });
    const before = await rows('other');
    const again = await call('POST', '/api/config/llm-providers/other', { ...body, api_key: 'k-other' });
    expect(again.status).toBe(200);
    expect(again.body.success).toBe(false);
    expect(again.body.message).toMatch(/already exists \(use update/);
    expect(await rows('other')).toEqual(before);
    expect(await storedSecret('other', 'api_key', 'acme')).toBe('k1');
    // Sealed at rest: the stored column never holds the key. (As a JSON value: the sealed envelope is random
    // base64url, which now and then contains the two characters "k1" by chance.)
    expect(JSON.stringify(before)).not.toContain('"k1"');
    expect(before).toEqual([expect.objectContaining({ secrets_sealed: expect.stringMatching(/^v1\./) })]);
  });

  it('refuses undeclared fields with 422 and writes nothing', async () => {
    const res = await call('POST', '/api/config/llm-providers/openai', { api_key: 'x', colour: 'blue' });
    expect(res.status).toBe(422);
    expect(res.body.error_type).toBe('unprocessable_entity');
    expect(await rows('openai')).toEqual([]);
  });

  it('tests a replaced secret, and on failure restores the previous credential with the classified test error', async () => {
    llm.apiKey = 'k1';
    const res = await call('PUT', '/api/config/llm-providers/other', { sub_provider: 'acme', api_key: 'k2' });
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/refused the platform's credentials/);
    expect(res.body.message).toMatch(/previous credentials were restored/);
    expect(res.text).not.toContain('bad key');
    expect(await storedSecret('other', 'api_key', 'acme')).toBe('k1');
    const ok = await call('PUT', '/api/config/llm-providers/other', {
      sub_provider: 'acme',
      api_key: 'k1',
      test_connection: true,
    });
    expect(ok.body).toMatchObject({ success: true });
    expect(ok.body.message).toMatch(/Connection test passed/);
  });

  it('says the previous credentials must be re-entered when restoring fails', async () => {
    llm.apiKey = 'k1';
    await query(
      stack.db.url,
      `create or replace function refuse_rollback() returns trigger language plpgsql as $$
       begin raise exception 'restore refused'; end $$`,
    );
    await query(
      stack.db.url,
      `create trigger refuse_rollback before update on llm_providers for each row
       when (new.updated_by like '%:rollback') execute function refuse_rollback()`,
    );
    try {
      const res = await call('PUT', '/api/config/llm-providers/other', { sub_provider: 'acme', api_key: 'k3' });
      expect(res.body.success).toBe(false);
      expect(res.body.message).toMatch(/previous credentials must be re-entered/);
      expect(res.text).not.toContain('restore refused');
    } finally {
      await query(stack.db.url, 'drop trigger refuse_rollback on llm_providers');
    }
    // Put the working key back for the tests below.
    llm.apiKey = undefined;
    await call('PUT', '/api/config/llm-providers/other', { sub_provider: 'acme', api_key: 'k1' });
  });

  it('keeps stored proxy settings a PUT omits, and masks secrets on read', async () => {
    const created = await call('POST', '/api/config/llm-providers/proxy', {
      base_url: llm.baseUrl,
      api_key: 'proxy-key-123',
      transport: 'responses',
      oauth_token_endpoint_auth_method: 'client_secret_post',
      allow_user_oauth_fallback_for_non_interactive: true,
    });
    expect(created.body.success).toBe(true);
    expect((await call('PUT', '/api/config/llm-providers/proxy', { model_name: 'fake-model' })).body.success).toBe(
      true,
    );
    const [row] = await rows('proxy');
    expect(row!.settings).toMatchObject({
      transport: 'responses',
      auth_mechanism: 'api_key',
      oauth_token_endpoint_auth_method: 'client_secret_post',
      allow_user_oauth_fallback_for_non_interactive: true,
      model_name: 'fake-model',
    });
    const info = await call('GET', '/api/config/llm-providers/info');
    expect(info.status).toBe(200);
    expect(info.text).not.toContain('proxy-key-123');
    const proxy = info.body.data.providers.find((p: { provider_kind: string }) => p.provider_kind === 'proxy');
    expect(proxy.secrets).toEqual({ api_key: '********' });
  });

  it('applies the Bedrock-type and Databricks-type rules before writing anything', async () => {
    for (const [kind, body, says] of [
      [
        'bedrock',
        { auth_mode: 'iam_role', endpoint_mode: 'custom', custom_endpoint_url: llm.origin },
        /custom endpoints allow only auth_mode api_key/,
      ],
      ['bedrock', { aws_region: 'us-east-1' }, /aws_bearer_token is required/],
      ['bedrock', { aws_bearer_token: 't', endpoint_mode: 'custom' }, /custom_endpoint_url is required/],
      ['databricks', { auth_mode: 'oauth' }, /oauth_connection_name is required/],
      ['databricks', { api_key: 'x' }, /llm_endpoint is required/],
      ['warehouse_ai', { base_url: llm.origin, auth_method: 'keypair', user: 'u' }, /private_key is required/],
    ] as const) {
      const res = await call('POST', `/api/config/llm-providers/${kind}`, body);
      expect([res.status, res.body.error_type]).toEqual([400, 'bad_request']);
      expect(res.body.error).toMatch(says);
    }
    expect([...(await rows('bedrock')), ...(await rows('databricks')), ...(await rows('warehouse_ai'))]).toEqual([]);
  });

  it('tests a Bedrock-type candidate (converse, custom endpoint) before writing it', async () => {
    llm.apiKey = 'brt';
    const base = {
      endpoint_mode: 'custom',
      custom_endpoint_url: llm.origin,
      bedrock_chat_route_mode: 'converse',
      model_name: 'anthropic.claude-x',
      test_connection: true,
    };
    const bad = await call('POST', '/api/config/llm-providers/bedrock', { ...base, aws_bearer_token: 'wrong' });
    expect(bad.body.success).toBe(false);
    expect(bad.body.message).toMatch(/Nothing was saved/);
    expect(await rows('bedrock')).toEqual([]);
    const good = await call('POST', '/api/config/llm-providers/bedrock', { ...base, aws_bearer_token: 'brt' });
    expect(good.body.success).toBe(true);
    expect(llm.calls.at(-1)).toMatchObject({
      method: 'POST',
      path: '/model/anthropic.claude-x/converse',
      credential: 'brt',
    });
  });

  it('saves an Azure-type provider with the default api-version, and tests with a given one', async () => {
    const saved = await call('POST', '/api/config/llm-providers/azure_openai', {
      base_url: llm.origin,
      api_key: 'az-key',
      chat_deployment: 'fake-model',
      test_connection: true,
    });
    expect(saved.body.success).toBe(true);
    expect(llm.calls.at(-1)).toMatchObject({
      path: '/openai/deployments?api-version=2025-04-01-preview',
      credential: 'az-key',
    });
    const tested = await call('POST', '/api/config/azure_openai/test-connection', { api_version: '2024-10-21' });
    expect(tested.body.success).toBe(true);
    expect(llm.calls.at(-1)!.path).toBe('/openai/deployments?api-version=2024-10-21');
  });
});

describe('proxy /models discovery', () => {
  const test = () => call('POST', '/api/config/proxy/test-connection', {});

  it('follows up to two same-origin redirects to a /models path', async () => {
    llm.redirects = {
      '/v1/models': { status: 301, location: '/v1/a/models' },
      '/v1/a/models': { status: 308, location: `${llm.origin}/v1/b/models` },
    };
    const res = await test();
    expect(res.body).toMatchObject({ success: true });
  });

  it('refuses a third redirect, a cross-origin redirect and a target that does not end in /models', async () => {
    llm.redirects = {
      '/v1/models': { status: 302, location: '/v1/a/models' },
      '/v1/a/models': { status: 303, location: '/v1/b/models' },
      '/v1/b/models': { status: 307, location: '/v1/c/models' },
    };
    expect((await test()).body.message).toMatch(/redirected more than 2 times/);
    llm.redirects = {
      '/v1/models': { status: 302, location: llm.origin.replace('127.0.0.1', 'localhost') + '/v1/models' },
    };
    expect((await test()).body.message).toMatch(/another origin/);
    llm.redirects = { '/v1/models': { status: 302, location: '/v1/login' } };
    const res = await test();
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/does not end in \/models/);
  });
});

describe('activation, admission, assignments and the overview', () => {
  it('switches the active provider without rewriting saved assignments', async () => {
    expect(
      (await call('POST', '/api/config/llm-providers/other/activate', { sub_provider: 'acme' })).body.success,
    ).toBe(true);
    const assigned = await call('PUT', '/api/config/models/main/assignments', { chat_model_name: 'fake-model-large' });
    expect(assigned.body.data).toEqual({
      provider: 'other:acme',
      assignments: { chat_model_name: 'fake-model-large' },
    });
    await call('POST', '/api/config/llm-providers/anthropic', {
      base_url: llm.origin,
      api_key: 'ant',
      model_name: 'claude-fake',
    });
    const act = await call('POST', '/api/config/llm-providers/anthropic/activate', {});
    expect(act.body).toMatchObject({ success: true });
    const info = await call('GET', '/api/config/llm-providers/info');
    expect(info.body.data.summary.active).toEqual({
      source: 'saved',
      provider_kind: 'anthropic',
      sub_provider: null,
      model: 'claude-fake',
    });
    expect(info.body.data.summary.assignments['other:acme']).toEqual({ chat_model_name: 'fake-model-large' });
  });

  it('denies a provider: activation is refused, and the admission needs access_config_panel', async () => {
    expect((await call('PUT', '/api/config/llm-providers/proxy/admission', { admission: 'deny' }, member)).status).toBe(
      403,
    );
    const denied = await call('PUT', '/api/config/llm-providers/proxy/admission', { admission: 'deny' });
    expect(denied.body.success).toBe(true);
    expect((await rows('proxy'))[0]!.admission).toBe('deny');
    const act = await call('POST', '/api/config/llm-providers/proxy/activate', {});
    expect([act.status, act.body.error_type, act.body.payload.code]).toEqual([409, 'conflict', 'provider_denied']);
    expect(act.body.error).toMatch(/denied/);
    const info = await call('GET', '/api/config/llm-providers/info');
    expect(info.body.data.summary.active.provider_kind).toBe('anthropic');
  });

  it('refuses operations on a provider that is not saved, or not ready, with 4xx envelopes, changing nothing', async () => {
    // A secret alone saves a provider not yet marked configured (set-value, as a secret-only provider starts).
    const secret = await call('POST', '/api/config/secret-fields/llm_providers.warehouse_ai.pat/set-value', {
      value: 'pat-only',
    });
    expect(secret.body.success, secret.text).toBe(true);
    const settingsBefore = await query(stack.db.url, 'select * from llm_settings');
    const providersBefore = await query(stack.db.url, 'select provider_kind, sub_provider from llm_providers');
    for (const [method, path, body, status, errorType] of [
      ['DELETE', '/api/config/llm-providers/databricks', {}, 404, 'not_found'],
      ['PUT', '/api/config/llm-providers/databricks/admission', { admission: 'deny' }, 404, 'not_found'],
      ['POST', '/api/config/llm-providers/databricks/activate', {}, 404, 'not_found'],
      ['POST', '/api/config/llm-providers/warehouse_ai/activate', {}, 409, 'conflict'],
      ['POST', '/api/config/llm-providers/other/activate', {}, 400, 'bad_request'],
      ['DELETE', '/api/config/llm-providers/other', {}, 400, 'bad_request'],
    ] as const) {
      const res = await call(method, path, body);
      expect([res.status, res.body.error_type], `${method} ${path}`).toEqual([status, errorType]);
      expect(res.body).not.toHaveProperty('success');
    }
    expect(await query(stack.db.url, 'select * from llm_settings')).toEqual(settingsBefore);
    expect(await query(stack.db.url, 'select provider_kind, sub_provider from llm_providers')).toEqual(providersBefore);
  });

  it('shows every signed-in user a masked overview', async () => {
    const res = await call('GET', '/api/config/ai-providers/overview', undefined, member);
    expect(res.status).toBe(200);
    for (const secret of ['k1', 'proxy-key-123', 'az-key', 'ant', 'brt']) expect(res.text).not.toContain(`"${secret}"`);
    expect(res.text).not.toContain('proxy-key-123');
    const acme = res.body.data.providers.find((p: { sub_provider: string | null }) => p.sub_provider === 'acme');
    expect(acme.subtitle).toContain('key ********');
    expect(res.body.data.active.provider_kind).toBe('anthropic');
    expect((await call('GET', '/api/config/llm-providers/info', undefined, member)).status).toBe(403);
  });

  it('marks a secret-only provider configured after its secret is set, and tests a configured credential first', async () => {
    const early = await call('POST', '/api/config/llm-providers/mark-configured', { provider: 'openai' });
    expect([early.status, early.body.error_type]).toEqual([404, 'not_found']);
    expect(early.body.error).toMatch(/set its secret first/);
    const set = await call('POST', '/api/config/secret-fields/llm_providers.openai.api_key/set-value', {
      value: 'sk-only',
    });
    expect(set.body).toEqual({
      success: true,
      message: 'Secret llm_providers.openai.api_key is set.',
      field_path: 'llm_providers.openai.api_key',
    });
    expect((await call('POST', '/api/config/llm-providers/mark-configured', { provider: 'openai' })).body.success).toBe(
      true,
    );
    llm.apiKey = 'k1';
    const replaced = await call('POST', '/api/config/secret-fields/llm_providers.other.acme.api_key/set-value', {
      value: 'k-bad',
    });
    expect(replaced.body.success).toBe(false);
    expect(await storedSecret('other', 'api_key', 'acme')).toBe('k1');
  });
});

describe('embeddings', () => {
  it('reports health, unavailable when the provider hangs (bounded wait)', async () => {
    const set = await call('PUT', '/api/config/models/embeddings/config', {
      provider_kind: 'other',
      sub_provider: 'acme',
      model_name: 'fake-embed',
    });
    expect(set.body.success).toBe(true);
    const ok = await call('GET', '/api/config/ai-providers/embedding-health');
    expect(ok.body.data).toMatchObject({ status: 'ok', provider: 'other:acme', model: 'fake-embed', dimensions: 3 });
    llm.embeddingsHang = true;
    const slow = await call('GET', '/api/config/ai-providers/embedding-health');
    expect(slow.status).toBe(200);
    expect(slow.body.data).toMatchObject({ status: 'unavailable', dimensions: null });
  });

  it('marks indexes for re-embedding when the embedding identity changes', async () => {
    expect((await call('GET', '/api/config/models/embeddings/reindexing-status')).body.data.status).toBe('idle');
    await call('PUT', '/api/config/models/embeddings/config', { provider_kind: 'azure_openai', model_name: 'emb-2' });
    const status = await call('GET', '/api/config/models/embeddings/reindexing-status');
    expect(status.body.data).toMatchObject({
      status: 'pending',
      from: { provider_kind: 'other', sub_provider: 'acme', model_name: 'fake-embed' },
      to: { provider_kind: 'azure_openai', model_name: 'emb-2' },
    });
    const cfg = await call('GET', '/api/config/models/embeddings/config');
    expect(cfg.body.data).toEqual({
      source: 'saved',
      provider_kind: 'azure_openai',
      sub_provider: null,
      model_name: 'emb-2',
    });
  });
});
