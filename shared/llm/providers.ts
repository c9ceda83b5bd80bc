import { awsCredentialsOf, bedrockRuntimeEndpoint, sigV4Signer } from '../aws/credentials.js';
import {
  answerJson,
  chatResultOf,
  llmFailure,
  notConfigured,
  providerCall,
  type ChatOptions,
  type ChatResult,
  type ProviderRequest,
} from './client.js';
import { ChatStreamReader } from './chat-stream.js';
import {
  anthropicResultOf,
  converseResultOf,
  toAnthropicMessages,
  toAnthropicTools,
  toConverseBody,
} from './messages-wire.js';
import {
  clientCredentialsToken,
  forgetClientCredentialsToken,
  type ClientCredentialsGrant,
  type TokenEndpointAuthMethod,
} from './oauth-client-credentials.js';
import { responsesResultOf, toResponsesBody } from './responses-wire.js';
import { warehouseAi } from './warehouse-ai.js';
import type { EmbeddingResult, LlmProvider, ProviderTarget } from './provider-types.js';
import {
  chatModelOf,
  configuredModels,
  DEFAULT_AZURE_API_VERSION,
  DEFAULT_BASE_URLS,
  embeddingModelOf,
  pingChatModel,
} from './provider-kinds.js';

export type { EmbeddingResult, LlmProvider, ProviderTarget } from './provider-types.js';

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Rule 6: `/models` discovery follows at most this many redirects. */
export const MAX_DISCOVERY_REDIRECTS = 2;
const MAX_TOKENS = 4096;

const s = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const trim = (url: string) => url.replace(/\/+$/, '');

const unsupported = (message: string, action: string) => llmFailure('unsupported', message, action, false);
const discoveryRefused = (message: string, detail: string) =>
  llmFailure('bad_response', message, "Point the proxy provider's base URL at the proxy's API root.", false, detail);

function modelIds(answer: Parameters<typeof answerJson>[0]): string[] {
  const body = answerJson<{ data?: Array<{ id?: unknown }>; models?: Array<{ id?: unknown; name?: unknown }> }>(
    answer,
    'a model list',
  );
  const list = body.data ?? body.models ?? [];
  return list.map((m) => s(m.id) ?? s((m as { name?: unknown }).name)).filter((id): id is string => !!id);
}

/** The test every listing provider shares: the listing works, and names the configured chat model when it lists any. */
async function listingTest(p: LlmProvider, model: string | undefined): Promise<string> {
  const models = await p.listModels();
  if (model && models.length && !models.includes(model))
    throw llmFailure(
      'model_not_found',
      `The provider does not list the configured model ${model}.`,
      'Pick one of the models the provider lists.',
      false,
    );
  return `Connection test passed (${models.length} model${models.length === 1 ? '' : 's'} listed).`;
}

/** A wire format that does not stream here: the caller following the call sees the whole text at once. */
function wholeAnswer(result: ChatResult, options: ChatOptions | undefined): ChatResult {
  if (result.content) options?.onDelta?.(result.content);
  return result;
}

function needModel(model: string | undefined): string {
  if (!model) throw notConfigured('The active language-model provider names no chat model.');
  return model;
}

/**
 * How a provider's requests are authenticated: fixed headers, or headers carrying an OAuth access
 * token that `renew` discards, so a 401 answered with it is retried once with a fresh token.
 */
interface ProviderAuth {
  headers(): Promise<Record<string, string>>;
  renew?: () => void;
}

const fixedAuth = (headers: Record<string, string>): ProviderAuth => ({ headers: () => Promise.resolve(headers) });

/** Bearer-token auth from an OAuth client-credentials grant (cached token; renewed once on a 401). */
const grantAuth = (grant: () => ClientCredentialsGrant): ProviderAuth => ({
  headers: async () => ({ authorization: `Bearer ${await clientCredentialsToken(grant())}` }),
  renew: () => forgetClientCredentialsToken(grant()),
});

/** One provider exchange with the auth's headers; a 401 with a renewable token is retried once with a new one. */
async function authedCall(auth: ProviderAuth, url: string, req: Omit<ProviderRequest, 'headers'>) {
  const answer = await providerCall(url, { ...req, headers: await auth.headers() });
  if (answer.status !== 401 || !auth.renew) return answer;
  auth.renew();
  return providerCall(url, { ...req, headers: await auth.headers() });
}

/** OpenAI-compatible providers: `openai`, `other`, `proxy`, and Databricks-type serving endpoints. */
function openAiCompatible(t: ProviderTarget, baseUrl: string, auth: ProviderAuth, discovery: boolean): LlmProvider {
  const base = trim(baseUrl);
  const call = (path: string, body?: unknown, onChunk?: (chunk: Buffer) => void) =>
    authedCall(auth, `${base}${path}`, {
      egress: t.egress,
      body,
      timeoutMs: t.timeoutMs,
      ...(onChunk ? { onChunk } : {}),
    });
  const provider: LlmProvider = {
    async chat(messages, tools, model, options) {
      const m = needModel(model ?? chatModelOf(t.kind, t.fields));
      // The proxy kind may speak the Responses format instead of chat completions (`transport`).
      if (t.fields.transport === 'responses')
        return wholeAnswer(
          responsesResultOf(await call('/responses', toResponsesBody(messages, tools, m)), m),
          options,
        );
      const body = { model: m, messages, ...(tools.length ? { tools, tool_choice: 'auto' } : {}) };
      if (!options?.onDelta) return chatResultOf(await call('/chat/completions', body), m);
      // A followed call streams: its text reaches the caller as the provider sends it.
      const reader = new ChatStreamReader(options.onDelta);
      const streamed = { ...body, stream: true, stream_options: { include_usage: true } };
      return reader.result(await call('/chat/completions', streamed, (chunk) => reader.push(chunk)), m);
    },
    async embed(texts, model) {
      const m = model ?? embeddingModelOf(t.kind, t.fields);
      if (!m) throw notConfigured('The embedding provider names no embedding model.');
      return embeddingsOf(await call('/embeddings', { model: m, input: texts }), m);
    },
    async listModels() {
      if (!discovery) return modelIds(await call('/models'));
      // Rule 6: at most two same-origin redirects, each to a path ending in /models.
      const origin = new URL(base).origin;
      let url = `${base}/models`;
      for (let hop = 0; ; hop++) {
        const answer = await authedCall(auth, url, { egress: t.egress, timeoutMs: t.timeoutMs, redirect: 'manual' });
        if (!REDIRECTS.has(answer.status)) return modelIds(answer);
        const location = answer.headers.get('location');
        if (hop >= MAX_DISCOVERY_REDIRECTS)
          throw discoveryRefused(`Model discovery was redirected more than ${MAX_DISCOVERY_REDIRECTS} times.`, url);
        if (!location) throw discoveryRefused('Model discovery was redirected without a target.', url);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw discoveryRefused('Model discovery was redirected to an invalid URL.', location);
        }
        if (next.origin !== origin)
          throw discoveryRefused(`Model discovery was redirected to another origin (${next.origin}).`, next.href);
        if (!trim(next.pathname).endsWith('/models'))
          throw discoveryRefused('Model discovery was redirected to a path that does not end in /models.', next.href);
        url = next.href;
      }
    },
    test: () => listingTest(provider, chatModelOf(t.kind, t.fields)),
  };
  return provider;
}

function embeddingsOf(answer: Parameters<typeof answerJson>[0], model: string): EmbeddingResult {
  const body = answerJson<{
    data?: Array<{ embedding?: number[]; index?: number }>;
    usage?: { prompt_tokens?: number };
  }>(answer, 'an embeddings answer');
  if (!Array.isArray(body.data) || body.data.some((d) => !Array.isArray(d.embedding)))
    throw llmFailure(
      'bad_response',
      'The embedding provider answered without vectors.',
      'Check the embedding model of the provider.',
      false,
      answer.text.slice(0, 500),
    );
  const ordered = [...body.data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  return { vectors: ordered.map((d) => d.embedding!), promptTokens: body.usage?.prompt_tokens ?? 0, model };
}

/** Azure-type: deployments under `/openai/deployments/{name}`, `api-version` on every call, `api-key` header. */
function azure(t: ProviderTarget): LlmProvider {
  const base = trim(s(t.fields.base_url) ?? '');
  const version = encodeURIComponent(s(t.fields.api_version) ?? DEFAULT_AZURE_API_VERSION);
  const headers = { 'api-key': s(t.fields.api_key) ?? '' };
  const deploymentCall = (deployment: string, op: string, body: unknown) =>
    providerCall(`${base}/openai/deployments/${encodeURIComponent(deployment)}/${op}?api-version=${version}`, {
      egress: t.egress,
      headers,
      body,
      timeoutMs: t.timeoutMs,
    });
  const provider: LlmProvider = {
    async chat(messages, tools, model) {
      const d = needModel(model ?? chatModelOf(t.kind, t.fields));
      const answer = await deploymentCall(d, 'chat/completions', {
        messages,
        ...(tools.length ? { tools, tool_choice: 'auto' } : {}),
      });
      return chatResultOf(answer, d);
    },
    async embed(texts, model) {
      const d = model ?? embeddingModelOf(t.kind, t.fields);
      if (!d) throw notConfigured('The Azure-type provider names no embedding deployment.');
      return embeddingsOf(await deploymentCall(d, 'embeddings', { input: texts }), d);
    },
    async listModels() {
      return modelIds(
        await providerCall(`${base}/openai/deployments?api-version=${version}`, {
          egress: t.egress,
          headers,
          timeoutMs: t.timeoutMs,
        }),
      );
    },
    test: () => listingTest(provider, chatModelOf(t.kind, t.fields)),
  };
  return provider;
}

/** Anthropic messages: `/v1/messages` with `x-api-key` and `anthropic-version`. */
function anthropic(t: ProviderTarget): LlmProvider {
  const base = trim(s(t.fields.base_url) ?? DEFAULT_BASE_URLS.anthropic!);
  const headers = { 'x-api-key': s(t.fields.api_key) ?? '', 'anthropic-version': '2023-06-01' };
  const provider: LlmProvider = {
    async chat(messages, tools, model) {
      const m = needModel(model ?? chatModelOf(t.kind, t.fields));
      const { system, messages: turns } = toAnthropicMessages(messages);
      const answer = await providerCall(`${base}/v1/messages`, {
        egress: t.egress,
        headers,
        timeoutMs: t.timeoutMs,
        body: {
          model: m,
          max_tokens: MAX_TOKENS,
          ...(system ? { system } : {}),
          messages: turns,
          ...(tools.length ? { tools: toAnthropicTools(tools) } : {}),
        },
      });
      return anthropicResultOf(answer, m);
    },
    embed() {
      return Promise.reject(
        unsupported(
          'The Anthropic-style provider offers no embeddings.',
          'Choose another provider for embeddings (PUT /api/config/models/embeddings/config).',
        ),
      );
    },
    async listModels() {
      return modelIds(await providerCall(`${base}/v1/models`, { egress: t.egress, headers, timeoutMs: t.timeoutMs }));
    },
    test: () => listingTest(provider, chatModelOf(t.kind, t.fields)),
  };
  return provider;
}

/**
 * Bedrock-type runtime: `invoke` (Anthropic body) or `converse`, authenticated with an API key
 * (bearer token) or, in `iam_role` mode, SigV4-signed (service `bedrock`, region `aws_region`) with
 * the deployment's AWS credentials.
 */
function bedrock(t: ProviderTarget): LlmProvider {
  const f = t.fields;
  const region = s(f.aws_region) ?? 'us-east-1';
  const iam = f.auth_mode === 'iam_role';
  const endpoint =
    f.endpoint_mode === 'custom' ? trim(s(f.custom_endpoint_url) ?? '') : trim(bedrockRuntimeEndpoint(t.aws, region));
  const auth = (): Pick<ProviderRequest, 'headers' | 'sign'> => {
    if (!iam) return { headers: { authorization: `Bearer ${s(f.aws_bearer_token) ?? ''}` } };
    const credentials = awsCredentialsOf(t.aws);
    if (!credentials)
      throw notConfigured(
        'The Bedrock-type provider uses auth_mode iam_role, but no AWS credentials are available to this deployment.',
      );
    return { sign: sigV4Signer(credentials, region, 'bedrock') };
  };
  const modelCall = async (model: string, op: 'invoke' | 'converse', body: unknown) => {
    const answer = await providerCall(`${endpoint}/model/${encodeURIComponent(model)}/${op}`, {
      egress: t.egress,
      ...auth(),
      body,
      timeoutMs: t.timeoutMs,
    });
    if (iam && (answer.status === 401 || answer.status === 403))
      throw llmFailure(
        'authentication',
        `AWS refused the signed request (${answer.headers.get('x-amzn-errortype')?.split(':')[0] ?? `HTTP ${answer.status}`}).`,
        'Check the AWS credentials of the deployment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), their Bedrock permissions and aws_region (GET /api/config/bedrock/iam-status?refresh=true verifies them).',
        false,
        answer.text.slice(0, 500),
      );
    return answer;
  };
  const provider: LlmProvider = {
    async chat(messages, tools, model) {
      const m = needModel(model ?? chatModelOf(t.kind, f));
      if (f.bedrock_chat_route_mode === 'converse')
        return converseResultOf(await modelCall(m, 'converse', toConverseBody(messages, tools, MAX_TOKENS)), m);
      const { system, messages: turns } = toAnthropicMessages(messages);
      const answer = await modelCall(m, 'invoke', {
        anthropic_version: 'bedrock-2023-05-31',
        max_tokens: MAX_TOKENS,
        ...(system ? { system } : {}),
        messages: turns,
        ...(tools.length ? { tools: toAnthropicTools(tools) } : {}),
      });
      return anthropicResultOf(answer, m);
    },
    async embed(texts, model) {
      const m = model ?? embeddingModelOf(t.kind, f);
      if (!m) throw notConfigured('The Bedrock-type provider names no embedding model.');
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (const text of texts) {
        const body = answerJson<{ embedding?: number[]; inputTextTokenCount?: number }>(
          await modelCall(m, 'invoke', { inputText: text }),
          'an embedding',
        );
        if (!Array.isArray(body.embedding))
          throw llmFailure(
            'bad_response',
            'The embedding provider answered without a vector.',
            'Check the embedding model.',
            false,
          );
        vectors.push(body.embedding);
        promptTokens += body.inputTextTokenCount ?? 0;
      }
      return { vectors, promptTokens, model: m };
    },
    // The runtime endpoint has no listing: the configured models are what this provider offers.
    listModels: () => configuredModels(t.kind, f),
    async test(chat) {
      await pingChatModel(chat, t.kind, f, 'Bedrock-type');
      return `Connection test passed (${f.bedrock_chat_route_mode} route answered).`;
    },
  };
  return provider;
}

/** Databricks-type OAuth mode: client credentials against the workspace's `/oidc/v1/token` (HTTP Basic, scope `all-apis`). */
function databricksGrant(t: ProviderTarget): ClientCredentialsGrant {
  const f = t.fields;
  const workspace = trim(s(f.workspace_url) ?? new URL(s(f.llm_endpoint) ?? '').origin);
  return {
    tokenUrl: `${workspace}/oidc/v1/token`,
    clientId: s(f.oauth_client_id) ?? '',
    clientSecret: s(f.oauth_client_secret) ?? '',
    authMethod: 'client_secret_basic',
    scope: 'all-apis',
    egress: t.egress,
    timeoutMs: t.timeoutMs,
    refusal: {
      message: `The workspace refused the OAuth client credentials of ${s(f.oauth_connection_name) ?? 'the provider'}.`,
      action: 'Check oauth_client_id and oauth_client_secret of the Databricks-type provider.',
    },
    addressSetting: 'the Databricks-type workspace_url (or llm_endpoint)',
  };
}

/** Proxy `auth_mechanism` `oauth_client_credentials`: the saved client at the saved token endpoint. */
function proxyGrant(t: ProviderTarget): ClientCredentialsGrant {
  const f = t.fields;
  return {
    tokenUrl: s(f.oauth_token_url) ?? '',
    clientId: s(f.oauth_client_id) ?? '',
    clientSecret: s(f.oauth_client_secret) ?? '',
    authMethod: (s(f.oauth_token_endpoint_auth_method) ?? 'client_secret_basic') as TokenEndpointAuthMethod,
    scope: s(f.oauth_scope),
    egress: t.egress,
    timeoutMs: t.timeoutMs,
    refusal: {
      message: "The proxy's token endpoint refused the OAuth client credentials.",
      action:
        'Check oauth_client_id, oauth_client_secret, oauth_token_endpoint_auth_method and oauth_scope of the proxy provider.',
    },
    addressSetting: "the proxy provider's oauth_token_url",
  };
}

/** The client for a saved (or bootstrap) provider configuration. */
export function providerClient(t: ProviderTarget): LlmProvider {
  const f = t.fields;
  const bearer = (key: unknown) => fixedAuth(s(key) ? { authorization: `Bearer ${s(key)}` } : {});
  switch (t.kind) {
    case 'openai':
      return openAiCompatible(t, s(f.base_url) ?? DEFAULT_BASE_URLS.openai!, bearer(f.api_key), false);
    case 'other':
      return openAiCompatible(t, s(f.base_url) ?? '', bearer(f.api_key), false);
    case 'proxy': {
      const auth =
        f.auth_mechanism === 'oauth_client_credentials'
          ? grantAuth(() => proxyGrant(t))
          : f.auth_mechanism === 'none'
            ? fixedAuth({})
            : bearer(f.api_key);
      return openAiCompatible(t, s(f.base_url) ?? '', auth, true);
    }
    case 'databricks':
      return f.auth_mode === 'oauth'
        ? openAiCompatible(
            t,
            s(f.llm_endpoint) ?? '',
            grantAuth(() => databricksGrant(t)),
            false,
          )
        : openAiCompatible(t, s(f.llm_endpoint) ?? '', bearer(f.api_key), false);
    case 'azure_openai':
      return unstreamed(azure(t));
    case 'anthropic':
      return unstreamed(anthropic(t));
    case 'bedrock':
      return unstreamed(bedrock(t));
    case 'warehouse_ai':
      return unstreamed(warehouseAi(t));
  }
}

/** A wire format read whole here: a followed call sees its text in one piece when the answer is in. */
function unstreamed(p: LlmProvider): LlmProvider {
  return {
    ...p,
    chat: async (messages, tools, model, options) => wholeAnswer(await p.chat(messages, tools, model), options),
  };
}
