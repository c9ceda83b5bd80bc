import { z } from 'zod';
import { notConfigured, type ChatFn } from './client.js';
import { accountOf, privateKeyProblem } from './warehouse-auth.js';

/**
 * The language-model provider kinds an administrator can save (spec, "Configuration, secrets and
 * providers"): single-vendor kinds, the multi-vendor `other` (one row per `sub_provider`) and `proxy`.
 */
export const PROVIDER_KINDS = [
  'openai',
  'azure_openai',
  'anthropic',
  'bedrock',
  'warehouse_ai',
  'databricks',
  'other',
  'proxy',
] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** Secret fields per kind: sealed at rest, masked on every read. */
export const SECRET_FIELDS: Record<ProviderKind, readonly string[]> = {
  openai: ['api_key'],
  azure_openai: ['api_key'],
  anthropic: ['api_key'],
  bedrock: ['aws_bearer_token'],
  warehouse_ai: ['pat', 'private_key'],
  databricks: ['api_key', 'oauth_client_secret'],
  other: ['api_key'],
  proxy: ['api_key', 'oauth_client_secret'],
};

/** What a masked secret reads as; sending it back on PUT keeps the stored value. */
export const MASK = '********';

/** Spec, Versioning 6: the Azure-type API version when none is saved or given. */
export const DEFAULT_AZURE_API_VERSION = '2025-04-01-preview';

export const DEFAULT_BASE_URLS: Partial<Record<ProviderKind, string>> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

/** How the platform signs in to a `proxy` provider. */
export const PROXY_AUTH_MECHANISMS = ['api_key', 'none', 'oauth_client_credentials'] as const;

/** Proxy settings a `PUT` keeps when omitted (rule 6); every other kind keeps omitted fields too. */
export const PROXY_KEPT_FIELDS = [
  'auth_mechanism',
  'transport',
  'oauth_token_endpoint_auth_method',
  'allow_user_oauth_fallback_for_non_interactive',
] as const;

export const HttpUrl = z
  .string()
  .max(2000)
  .regex(/^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?(\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/)
  .describe('http(s) URL without query or fragment');
/** The fields of a provider body that hold an endpoint the platform sends requests to (HttpUrl). */
export const PROVIDER_URL_FIELDS = [
  'base_url',
  'oauth_token_url',
  'custom_endpoint_url',
  'llm_endpoint',
  'workspace_url',
] as const;
export const SubProvider = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/)
  .describe('Vendor behind the multi-vendor `other` kind (e.g. `mistral`, `groq`)');
const ModelName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/)
  .describe('Model or deployment name');
const Secret = z.string().min(1).max(8000).regex(/^\S+$/).describe(`Secret; \`${MASK}\` keeps the stored value`);
/** An OAuth client id: one token without white space. */
const OAuthClientId = z.string().min(1).max(500).regex(/^\S+$/);
const Price = z.number().min(0).max(100000).describe('USD per million tokens, for the spend each call records');

const common = {
  model_name: ModelName.optional().describe('Chat model (the default `main` assignment)'),
  embedding_model_name: ModelName.optional(),
  input_usd_per_mtok: Price.optional(),
  output_usd_per_mtok: Price.optional(),
  test_connection: z.boolean().optional().describe('Run the save-time connection test (rollback guard)'),
};
const keyed = { ...common, base_url: HttpUrl.optional(), api_key: Secret.optional() };

/** Body of `POST`/`PUT /api/config/llm-providers/{kind}` per kind (strict: undeclared fields answer 422). */
export const PROVIDER_BODIES = {
  openai: z.object(keyed).strict(),
  anthropic: z.object(keyed).strict(),
  other: z.object({ ...keyed, sub_provider: SubProvider }).strict(),
  proxy: z
    .object({
      ...keyed,
      auth_mechanism: z
        .enum(PROXY_AUTH_MECHANISMS)
        .optional()
        .describe(
          'How the platform signs in to the proxy. Default `api_key` (bearer `api_key`); `none` sends no credential; `oauth_client_credentials` gets a bearer token from `oauth_token_url` with the OAuth 2.0 client-credentials grant (RFC 6749 §4.4) for `oauth_client_id`/`oauth_client_secret`, cached until shortly before it expires and renewed once when the proxy answers 401',
        ),
      transport: z.enum(['chat_completions', 'responses']).optional().describe('Default `chat_completions`'),
      oauth_token_url: HttpUrl.optional().describe(
        "Token endpoint of the authorization server that issues the proxy's tokens; required with `oauth_client_credentials`",
      ),
      oauth_token_endpoint_auth_method: z
        .enum(['client_secret_basic', 'client_secret_post'])
        .optional()
        .describe(
          'How the client authenticates at `oauth_token_url` (RFC 6749 §2.3.1): `client_secret_basic` (HTTP Basic header, the default) or `client_secret_post` (`client_id` and `client_secret` form fields)',
        ),
      oauth_scope: z
        .string()
        .min(1)
        .max(1000)
        .regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/)
        .optional()
        .describe('Space-separated scopes requested with the client-credentials grant (none sent when omitted)'),
      allow_user_oauth_fallback_for_non_interactive: z
        .boolean()
        .optional()
        .describe(
          "Whether non-interactive calls (workflows, scheduled jobs) may fall back to a signed-in user's own OAuth token for the proxy. Stored and kept on PUT only: the platform has no per-user proxy sign-in yet, so every call uses the provider's own credential and this setting has no effect until per-user OAuth exists",
        ),
      oauth_client_id: OAuthClientId.optional().describe('OAuth client id (required with `oauth_client_credentials`)'),
      oauth_client_secret: Secret.optional().describe('OAuth client secret (required with `oauth_client_credentials`)'),
    })
    .strict(),
  azure_openai: z
    .object({
      ...keyed,
      api_version: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/)
        .optional()
        .describe(`Default \`${DEFAULT_AZURE_API_VERSION}\``),
      chat_deployment: ModelName.optional(),
      embedding_deployment: ModelName.optional(),
    })
    .strict(),
  bedrock: z
    .object({
      ...common,
      auth_mode: z.enum(['api_key', 'iam_role']).optional().describe('Default `api_key`'),
      endpoint_mode: z.enum(['default', 'custom']).optional().describe('Default `default`'),
      bedrock_chat_route_mode: z.enum(['invoke', 'converse']).optional().describe('Default `invoke`'),
      aws_bearer_token: Secret.optional(),
      aws_region: z
        .string()
        .regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/)
        .optional(),
      custom_endpoint_url: HttpUrl.optional(),
    })
    .strict(),
  warehouse_ai: z
    .object({
      ...common,
      base_url: HttpUrl.optional().describe('Account URL'),
      auth_method: z.enum(['pat', 'keypair']).optional().describe('Default `pat`'),
      account: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/)
        .optional()
        .describe(
          'Account identifier for key-pair JWTs; default: the first label of an <account>.snowflakecomputing.com base_url',
        ),
      user: z.string().min(1).max(255).regex(/^\S+$/).optional(),
      pat: Secret.optional(),
      private_key: z.string().min(1).max(8000).optional(),
      force_activation: z.boolean().optional().describe('Make the provider the active chat provider once saved'),
    })
    .strict(),
  databricks: z
    .object({
      ...common,
      auth_mode: z.enum(['pat', 'oauth']).optional().describe('Default `pat`'),
      llm_endpoint: HttpUrl.optional().describe('Serving-endpoints base URL (OpenAI-compatible)'),
      api_key: Secret.optional(),
      oauth_connection_name: z
        .string()
        .min(1)
        .max(200)
        .regex(/^\S+$/)
        .optional()
        .describe('Name of the OAuth machine-to-machine credential (service principal) the provider uses'),
      oauth_client_id: OAuthClientId.optional().describe('OAuth mode: service principal client id'),
      oauth_client_secret: Secret.optional().describe('OAuth mode: service principal secret'),
      workspace_url: HttpUrl.optional().describe(
        'OAuth mode: workspace whose /oidc/v1/token issues tokens; default: the origin of llm_endpoint',
      ),
    })
    .strict(),
} satisfies Record<ProviderKind, z.ZodObject>;

/** A saved provider: non-secret settings and opened secrets, as one flat record. */
export type ProviderFields = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Defaults the spec names, applied to a merged configuration. */
export function withDefaults(kind: ProviderKind, f: ProviderFields): ProviderFields {
  const out = { ...f };
  if (kind === 'bedrock') {
    out.auth_mode ??= 'api_key';
    out.endpoint_mode ??= 'default';
    out.bedrock_chat_route_mode ??= 'invoke';
  }
  if (kind === 'azure_openai') out.api_version ??= DEFAULT_AZURE_API_VERSION;
  if (kind === 'proxy') {
    out.auth_mechanism ??= 'api_key';
    out.transport ??= 'chat_completions';
  }
  if (kind === 'warehouse_ai') out.auth_method ??= 'pat';
  if (kind === 'databricks') out.auth_mode ??= 'pat';
  return out;
}

/**
 * The cross-field rules of a configuration after merging (spec rules 3 to 6); answers the first
 * broken rule in words, or null. Shapes are the zod bodies' job; these need the stored values too.
 */
export function brokenRule(kind: ProviderKind, f: ProviderFields): string | null {
  const need = (field: string, why: string) => (str(f[field]) ? null : `${field} is required ${why}`);
  const url = (field: string) => {
    const v = str(f[field]);
    if (!v) return null;
    try {
      new URL(v);
      return null;
    } catch {
      return `${field} is not a valid URL`;
    }
  };
  const first = (...checks: Array<string | null>) => checks.find((c) => c !== null) ?? null;
  switch (kind) {
    case 'openai':
    case 'anthropic':
      return first(need('api_key', `for the ${kind} provider`), url('base_url'));
    case 'other':
      return first(need('base_url', 'for an `other` provider'), url('base_url'));
    case 'proxy':
      return first(
        need('base_url', 'for the proxy provider'),
        url('base_url'),
        f.auth_mechanism === 'api_key' ? need('api_key', 'when auth_mechanism is api_key') : null,
        ...(f.auth_mechanism === 'oauth_client_credentials'
          ? [
              need('oauth_token_url', 'when auth_mechanism is oauth_client_credentials'),
              url('oauth_token_url'),
              need('oauth_client_id', 'when auth_mechanism is oauth_client_credentials'),
              need('oauth_client_secret', 'when auth_mechanism is oauth_client_credentials'),
            ]
          : []),
      );
    case 'azure_openai':
      return first(
        need('base_url', 'for the Azure-type provider (its endpoint)'),
        url('base_url'),
        need('api_key', 'for the Azure-type provider'),
      );
    case 'bedrock':
      if (f.endpoint_mode === 'custom' && f.auth_mode !== 'api_key')
        return 'custom endpoints allow only auth_mode api_key';
      return first(
        f.auth_mode === 'api_key' ? need('aws_bearer_token', 'when auth_mode is api_key') : null,
        f.endpoint_mode === 'default' ? need('aws_region', 'when endpoint_mode is default') : null,
        f.endpoint_mode === 'custom' ? need('custom_endpoint_url', 'when endpoint_mode is custom') : null,
        url('custom_endpoint_url'),
      );
    case 'warehouse_ai':
      return first(
        need('base_url', 'for the warehouse-AI provider (the account URL)'),
        url('base_url'),
        f.auth_method === 'pat' ? need('pat', 'when auth_method is pat') : null,
        f.auth_method === 'keypair' ? need('private_key', 'when auth_method is keypair') : null,
        f.auth_method === 'keypair' ? need('user', 'when auth_method is keypair') : null,
        f.auth_method === 'keypair' ? privateKeyProblem(f.private_key) : null,
        f.auth_method === 'keypair' && !accountOf(f)
          ? 'account is required when auth_method is keypair and base_url is not an <account>.snowflakecomputing.com URL'
          : null,
      );
    case 'databricks':
      return f.auth_mode === 'oauth'
        ? first(
            need('oauth_connection_name', 'when auth_mode is oauth'),
            need('llm_endpoint', 'when auth_mode is oauth'),
            url('llm_endpoint'),
            need('oauth_client_id', 'when auth_mode is oauth'),
            need('oauth_client_secret', 'when auth_mode is oauth'),
            url('workspace_url'),
          )
        : first(
            need('llm_endpoint', 'when auth_mode is pat'),
            url('llm_endpoint'),
            need('api_key', 'when auth_mode is pat'),
          );
  }
}

/** The chat model a configuration names (Azure-type: its chat deployment). */
export function chatModelOf(kind: ProviderKind, f: ProviderFields): string | undefined {
  return kind === 'azure_openai' ? (str(f.chat_deployment) ?? str(f.model_name)) : str(f.model_name);
}

/** The embedding model a configuration names (Azure-type: its embedding deployment). */
export function embeddingModelOf(kind: ProviderKind, f: ProviderFields): string | undefined {
  return kind === 'azure_openai'
    ? (str(f.embedding_deployment) ?? str(f.embedding_model_name))
    : str(f.embedding_model_name);
}

/** The models a configuration names: all that a provider without a model listing offers. */
export function configuredModels(kind: ProviderKind, f: ProviderFields): Promise<string[]> {
  return Promise.resolve([chatModelOf(kind, f), embeddingModelOf(kind, f)].filter((m): m is string => !!m));
}

/** The connection test of a provider without a cheaper probe: one `ping` turn with the configured chat model. */
export async function pingChatModel(chat: ChatFn, kind: ProviderKind, f: ProviderFields, label: string): Promise<void> {
  const model = chatModelOf(kind, f);
  if (!model) throw notConfigured(`Name a model_name to test the ${label} provider.`);
  await chat([{ role: 'user', content: 'ping' }], [], model);
}

/** `other` rows are keyed by their vendor; every other kind has one row (sub_provider ''). */
export const providerKey = (kind: string, subProvider: string) => (subProvider ? `${kind}:${subProvider}` : kind);

/** A secret as reads show it. */
export const masked = (value: unknown) => (typeof value === 'string' && value !== '' ? MASK : null);
