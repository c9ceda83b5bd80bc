import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { iamStatus } from '../../api/llm/iam-status.js';
import { loadConfig } from '../../shared/config.js';
import { query } from '../helpers/db.js';
import { startFakeSts, type FakeAwsIdentity, type FakeSts } from '../helpers/fake-aws.js';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-idp.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

const IDENTITY: FakeAwsIdentity = {
  accessKeyId: 'AKIDPLATFORMTEST1234',
  secretAccessKey: 'platform/test/secret+KEY0123456789abcdefgh',
  sessionToken: 'session-token-for-tests',
  account: '123456789012',
  arn: 'arn:aws:sts::123456789012:assumed-role/platform/test',
};

let idp: FakeIdp;
let llm: FakeLlm;
let sts: FakeSts;
let stack: Stack;
let admin: string;
let member: string;

beforeAll(async () => {
  idp = await startFakeIdp();
  llm = await startFakeLlm();
  sts = await startFakeSts({ ...IDENTITY });
  stack = await startStack({
    worker: false,
    env: {
      AUTH_PROVIDER: 'oidc',
      AUTH_JWKS_URL: idp.jwksUrl,
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AWS_ACCESS_KEY_ID: IDENTITY.accessKeyId,
      AWS_SECRET_ACCESS_KEY: IDENTITY.secretAccessKey,
      AWS_SESSION_TOKEN: IDENTITY.sessionToken!,
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: llm.origin,
      AWS_ENDPOINT_URL_STS: sts.url,
    },
  });
  admin = await idp.sign({ sub: 'root', roles: ['admin'] });
  member = await idp.sign({ sub: 'ann', roles: ['member'] });
});
afterAll(async () => {
  await stack?.close();
  await sts?.close();
  await llm?.close();
  await idp?.close();
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
