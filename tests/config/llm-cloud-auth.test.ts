import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { iamStatus } from '../../shared/llm/iam-status.js';
import { loadConfig } from '../../shared/config.js';
import { providerClient } from '../../shared/llm/providers.js';
import { query } from '../helpers/db.js';
import { startFakeSts, type FakeAwsIdentity, type FakeSts } from '../helpers/fake-aws.js';
import { startFakeCortex, type FakeCortex } from '../helpers/fake-cortex.js';
import type { FakeLlm } from '../helpers/fake-llm.js';
import { http, type Stack } from '../helpers/stack.js';
import { startLlmConfigStack, type LlmConfigStack } from './support.js';

const IDENTITY: FakeAwsIdentity = {
  accessKeyId: 'AKIDPLATFORMTEST1234',
  secretAccessKey: 'platform/test/secret+KEY0123456789abcdefgh',
  sessionToken: 'session-token-for-tests',
  account: '123456789012',
  arn: 'arn:aws:sts::123456789012:assumed-role/platform/test',
};

let s: LlmConfigStack;
let llm: FakeLlm;
let sts: FakeSts;
let cortex: FakeCortex;
let stack: Stack;
let admin: string;
let member: string;

beforeAll(async () => {
  sts = await startFakeSts({ ...IDENTITY });
  cortex = await startFakeCortex({ account: 'myorg-acct', user: 'svc_user', pat: 'pat-good' });
  s = await startLlmConfigStack((model) => ({
    AWS_ACCESS_KEY_ID: IDENTITY.accessKeyId,
    AWS_SECRET_ACCESS_KEY: IDENTITY.secretAccessKey,
    AWS_SESSION_TOKEN: IDENTITY.sessionToken!,
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: model.origin,
    AWS_ENDPOINT_URL_STS: sts.url,
  }));
  ({
    stack,
    llm,
    tokens: { admin, member },
  } = s);
});
afterAll(async () => {
  await s?.close();
  await sts?.close();
  await cortex?.close();
});
beforeEach(() => {
  llm.aws = { identity: { ...IDENTITY }, region: 'eu-west-1' };
  sts.identity = { ...IDENTITY };
  sts.region = 'us-east-1';
});

const call = (method: string, path: string, body?: unknown, token = admin) =>
  http(stack.url, method, path, { token, ...(body === undefined ? {} : { body }) });
const bedrockRows = () => query(stack.db.url, `select settings from llm_providers where provider_kind = 'bedrock'`);

describe('Bedrock-type auth_mode iam_role (SigV4)', () => {
  const candidate = {
    auth_mode: 'iam_role',
    aws_region: 'eu-west-1',
    bedrock_chat_route_mode: 'converse',
    model_name: 'anthropic.claude-3-haiku-20240307-v1:0',
    test_connection: true,
  };

  it('refuses a wrong signature with InvalidSignatureException and an unknown key with UnrecognizedClientException, saving nothing', async () => {
    llm.aws!.identity.secretAccessKey = 'a-different-secret';
    const bad = await call('POST', '/api/config/llm-providers/bedrock', candidate);
    expect(bad.status).toBe(200);
    expect(bad.body.success).toBe(false);
    expect(bad.body.message).toMatch(/AWS refused the signed request \(InvalidSignatureException\)/);
    expect(bad.body.message).toMatch(/Nothing was saved/);
    expect(bad.text).not.toContain('does not match the signature');

    llm.aws = { identity: { ...IDENTITY, accessKeyId: 'AKIDSOMEONEELSE00000' }, region: 'eu-west-1' };
    const unknown = await call('POST', '/api/config/llm-providers/bedrock', candidate);
    expect(unknown.body.success).toBe(false);
    expect(unknown.body.message).toMatch(/UnrecognizedClientException/);

    llm.aws = { identity: { ...IDENTITY }, region: 'us-west-2' };
    const region = await call('POST', '/api/config/llm-providers/bedrock', candidate);
    expect(region.body.success).toBe(false);
    expect(region.body.message).toMatch(/InvalidSignatureException/);
    expect(await bedrockRows()).toEqual([]);
  });

  it('signs converse with the deployment credentials (service bedrock, region aws_region) and saves', async () => {
    const saved = await call('POST', '/api/config/llm-providers/bedrock', candidate);
    expect(saved.body).toMatchObject({ success: true });
    expect(saved.body.message).toMatch(/Connection test passed/);
    const last = llm.calls.at(-1)!;
    expect(last).toMatchObject({ method: 'POST', path: '/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse' });
    expect(last.credential).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDPLATFORMTEST1234\/\d{8}\/eu-west-1\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
    const [row] = await bedrockRows();
    expect(row!.settings).toMatchObject({ auth_mode: 'iam_role', endpoint_mode: 'default', aws_region: 'eu-west-1' });
    expect(JSON.stringify(row)).not.toContain(IDENTITY.secretAccessKey);
  });

  it('signs the invoke route too, and a chat through the activated provider', async () => {
    const test = await call('POST', '/api/config/bedrock/test-connection', { bedrock_chat_route_mode: 'invoke' });
    expect(test.body).toMatchObject({ success: true });
    expect(llm.calls.at(-1)!.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke');
    expect(llm.requests.at(-1)!.messages).toEqual([{ role: 'user', content: 'ping' }]);

    llm.aws!.identity.secretAccessKey = 'rotated-elsewhere';
    const refused = await call('POST', '/api/config/bedrock/test-connection', {});
    expect(refused.body.success).toBe(false);
    expect(refused.body.message).toMatch(/InvalidSignatureException/);
  });
});

describe('GET /api/config/{provider}/iam-status', () => {
  const status = (q = '', token = admin) => call('GET', `/api/config/bedrock/iam-status${q}`, undefined, token);

  it('reports the environment credentials masked, caches without refresh, verifies with STS on refresh', async () => {
    expect((await status('', member)).status).toBe(403);
    const first = await status();
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      provider: 'bedrock',
      region: 'us-east-1',
      applicable: true,
      credentials_available: true,
      source: 'environment',
      access_key_id: '****************1234',
      session_token: true,
      verified: null,
      cached: false,
    });
    expect(first.text).not.toContain(IDENTITY.secretAccessKey);
    expect(first.text).not.toContain(IDENTITY.sessionToken);
    expect((await status()).body.data.cached).toBe(true);

    const before = sts.calls;
    const verified = await status('?refresh=true');
    expect(verified.body.data).toMatchObject({
      verified: true,
      identity: { account: IDENTITY.account, arn: IDENTITY.arn },
      cached: false,
    });
    expect(sts.calls).toBe(before + 1);
    const again = await status();
    expect(again.body.data).toMatchObject({ verified: true, cached: true });
    expect(sts.calls).toBe(before + 1);
  });

  it('reports refused credentials with STS error codes (signature, unknown key, wrong region)', async () => {
    sts.identity.secretAccessKey = 'not-the-one';
    const wrong = await status('?refresh=true');
    expect(wrong.body.data).toMatchObject({ verified: false, identity: null });
    expect(wrong.body.data.message).toMatch(/SignatureDoesNotMatch/);
    expect((await status()).body.data).toMatchObject({ verified: false, cached: true });

    sts.identity = { ...IDENTITY, accessKeyId: 'AKIDUNKNOWN000000000' };
    expect((await status('?refresh=true')).body.data.message).toMatch(/InvalidClientTokenId/);

    sts.identity = { ...IDENTITY };
    const region = await status('?region=eu-west-1&refresh=true');
    expect(region.body.data).toMatchObject({ region: 'eu-west-1', verified: false });
    expect(region.body.data.message).toMatch(/SignatureDoesNotMatch/);
    sts.region = 'eu-west-1';
    expect((await status('?region=eu-west-1&refresh=true')).body.data.verified).toBe(true);
  });

  it('answers not applicable for other kinds, and no credentials when the deployment has none', async () => {
    const other = await call('GET', '/api/config/openai/iam-status');
    expect(other.body.data).toMatchObject({ applicable: false, credentials_available: false });
    const bare = await iamStatus(loadConfig({ AWS_ENDPOINT_URL_STS: sts.url }), 'us-east-1', true);
    expect(bare).toMatchObject({ credentials_available: false, source: null, verified: null });
    expect(bare.message).toMatch(/AWS_ACCESS_KEY_ID/);
  });

  it('refuses an invalid region as a bad query (400)', async () => {
    const res = await status('?region=Mars');
    expect(res.status).toBe(400);
    expect(res.body.error_type).toBe('bad_request');
  });
});

describe('warehouse-AI provider (PAT and key-pair JWT)', () => {
  const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = (k: ReturnType<typeof rsa>) => k.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const rows = () =>
    query<{ settings: Record<string, unknown>; secret_fields: string[] }>(
      stack.db.url,
      `select settings, secret_fields from llm_providers where provider_kind = 'warehouse_ai'`,
    );
  const pat = { base_url: '', auth_method: 'pat', model_name: 'claude-3-5-sonnet', test_connection: true };

  it('refuses a wrong access token (nothing saved), then saves with the right one as a PAT bearer', async () => {
    const bad = await call('POST', '/api/config/llm-providers/warehouse_ai', {
      ...pat,
      base_url: cortex.url,
      pat: 'pat-wrong',
    });
    expect(bad.body.success).toBe(false);
    expect(bad.body.message).toMatch(/refused the platform's credentials.*Nothing was saved/);
    expect(await rows()).toEqual([]);
    const pings = () =>
      query(stack.db.url, `select provider from llm_usage where purpose = 'connection_test' order by id`);
    const pinged = (await pings()).length;
    const good = await call('POST', '/api/config/llm-providers/warehouse_ai', {
      ...pat,
      base_url: cortex.url,
      pat: 'pat-good',
    });
    expect(good.body).toMatchObject({ success: true });
    // The connection test's ping is a model call like any other: metered (the refused one answered nothing).
    expect((await pings()).slice(pinged)).toEqual([{ provider: 'warehouse_ai' }]);
    expect(cortex.auths.at(-1)).toEqual({ tokenType: 'PROGRAMMATIC_ACCESS_TOKEN' });
    expect(cortex.completions.at(-1)).toMatchObject({
      model: 'claude-3-5-sonnet',
      stream: false,
      messages: [{ role: 'user', content: 'ping' }],
    });
  });

  it('refuses key-pair input it cannot use before writing anything', async () => {
    for (const [body, says] of [
      [{ auth_method: 'keypair', user: 'svc_user', private_key: 'not a key' }, /not a readable PEM private key/],
      [{ auth_method: 'keypair', user: 'svc_user', private_key: keyPem(rsa()) }, /account is required/],
    ] as const) {
      const before = await rows();
      const res = await call('PUT', '/api/config/llm-providers/warehouse_ai', body);
      expect([res.status, res.body.error_type]).toEqual([400, 'bad_request']);
      expect(res.body.error).toMatch(says);
      expect(await rows()).toEqual(before);
    }
  });

  it('signs a key-pair JWT the service verifies; a key it does not know restores the previous credentials', async () => {
    const registered = rsa();
    const other = rsa();
    cortex.publicKey = registered.publicKey;
    const keypair = {
      auth_method: 'keypair',
      account: 'myorg-acct',
      user: 'svc_user',
      test_connection: true,
    };
    const refused = await call('PUT', '/api/config/llm-providers/warehouse_ai', {
      ...keypair,
      private_key: keyPem(other),
    });
    expect(refused.body.success).toBe(false);
    expect(refused.body.message).toMatch(/previous credentials were restored/);
    expect((await rows())[0]!.settings.auth_method).toBe('pat');

    const accepted = await call('PUT', '/api/config/llm-providers/warehouse_ai', {
      ...keypair,
      private_key: keyPem(registered),
      force_activation: true,
    });
    expect(accepted.body).toMatchObject({ success: true });
    expect(accepted.body.message).toMatch(/now the active chat provider/);
    const auth = cortex.auths.at(-1)!;
    expect(auth.tokenType).toBe('KEYPAIR_JWT');
    expect(auth.claims).toMatchObject({ sub: 'MYORG-ACCT.SVC_USER' });
    expect(String(auth.claims!.iss)).toMatch(/^MYORG-ACCT\.SVC_USER\.SHA256:[A-Za-z0-9+/]{43}=$/);
    expect(Number(auth.claims!.exp) - Number(auth.claims!.iat)).toBeLessThanOrEqual(3600);
    const [row] = await rows();
    expect(row!.settings).toMatchObject({ auth_method: 'keypair', account: 'myorg-acct', user: 'svc_user' });
    expect(row!.settings).not.toHaveProperty('force_activation');
    expect(row!.secret_fields).toEqual(['pat', 'private_key']);

    const info = await call('GET', '/api/config/llm-providers/info');
    expect(info.text).not.toContain('PRIVATE KEY');
    expect(info.body.data.summary.active).toMatchObject({ source: 'saved', provider_kind: 'warehouse_ai' });
  });

  it('speaks tool calls and embeddings in the Cortex wire format', async () => {
    const fields = {
      base_url: cortex.url,
      auth_method: 'pat',
      pat: 'pat-good',
      model_name: 'claude-3-5-sonnet',
      embedding_model_name: 'snowflake-arctic-embed-m',
    };
    const client = providerClient({ kind: 'warehouse_ai', fields, egress: stack.config.egress, timeoutMs: 5000 });
    const tool = {
      type: 'function' as const,
      function: { name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: {} } },
    };
    cortex.toolCalls = [{ name: 'lookup', input: { q: 'x' } }];
    const first = await client.chat([{ role: 'user', content: 'find x' }], [tool]);
    expect(first.toolCalls).toEqual([
      { id: 'tooluse_0', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
    ]);
    expect(cortex.completions.at(-1)!.tools).toEqual([
      {
        tool_spec: {
          type: 'generic',
          name: 'lookup',
          description: 'Look up',
          input_schema: { type: 'object', properties: {} },
        },
      },
    ]);
    const second = await client.chat(
      [
        { role: 'user', content: 'find x' },
        { role: 'assistant', content: null, tool_calls: first.toolCalls },
        { role: 'tool', tool_call_id: 'tooluse_0', content: 'found' },
      ],
      [tool],
    );
    expect(second).toMatchObject({ content: 'pong', usage: { promptTokens: 5, completionTokens: 1 } });
    expect(cortex.completions.at(-1)!.messages.at(-1)).toEqual({
      role: 'user',
      content_list: [
        {
          type: 'tool_results',
          tool_results: { tool_use_id: 'tooluse_0', name: 'lookup', content: [{ type: 'text', text: 'found' }] },
        },
      ],
    });
    const embedded = await client.embed(['a', 'b']);
    expect(embedded).toEqual({
      vectors: [
        [0.5, 0.25],
        [0.5, 0.25],
      ],
      promptTokens: 2,
      model: 'snowflake-arctic-embed-m',
    });
  });
});

describe('Databricks-type OAuth mode (machine-to-machine)', () => {
  const rows = () => query(stack.db.url, `select settings from llm_providers where provider_kind = 'databricks'`);

  it('needs the connection name and client credentials, gets a token from /oidc/v1/token and caches it until expiry', async () => {
    llm.apiKey = 'dbx-access-1';
    llm.oauth = { clientId: 'sp-client', clientSecret: 'sp-secret', token: 'dbx-access-1', issued: 0 };
    try {
      const body = {
        auth_mode: 'oauth',
        oauth_connection_name: 'dbx_sp',
        llm_endpoint: llm.baseUrl,
        oauth_client_id: 'sp-client',
        model_name: 'fake-model',
        test_connection: true,
      };
      const missing = await call('POST', '/api/config/llm-providers/databricks', body);
      expect([missing.status, missing.body.error_type]).toEqual([400, 'bad_request']);
      expect(missing.body.error).toMatch(/oauth_client_secret is required/);
      const wrong = await call('POST', '/api/config/llm-providers/databricks', {
        ...body,
        oauth_client_secret: 'not-it',
      });
      expect(wrong.body.success).toBe(false);
      expect(wrong.body.message).toMatch(/refused the OAuth client credentials of dbx_sp.*Nothing was saved/);
      expect(wrong.text).not.toContain('invalid_client');
      expect(await rows()).toEqual([]);

      const saved = await call('POST', '/api/config/llm-providers/databricks', {
        ...body,
        oauth_client_secret: 'sp-secret',
      });
      expect(saved.body).toMatchObject({ success: true });
      expect(llm.oauth.issued).toBe(1);
      expect(llm.calls.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models', credential: 'dbx-access-1' });
      const again = await call('POST', '/api/config/databricks/test-connection', {});
      expect(again.body.success).toBe(true);
      expect(llm.oauth.issued).toBe(1);
      const info = await call('GET', '/api/config/llm-providers/info');
      expect(info.text).not.toContain('sp-secret');
      expect(JSON.stringify(await rows())).not.toContain('sp-secret');
    } finally {
      llm.apiKey = undefined;
      llm.oauth = undefined;
    }
  });
});
