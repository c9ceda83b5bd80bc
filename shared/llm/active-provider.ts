import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { egressFor } from '../http/trust.js';
import { secretBox } from '../secrets/secret-box.js';
import { embeddingWindowWarning, type EmbeddingWindowWarning } from './embedding-windows.js';
import {
  llmFailure,
  notConfigured,
  type ChatMessage,
  type ChatOptions,
  type ChatResult,
  type ToolSpec,
} from './client.js';
import { meteredClient, type Meter, type MeteredProvider } from './metered.js';
import {
  chatModelOf,
  embeddingModelOf,
  providerKey,
  type ProviderFields,
  type ProviderKind,
} from './provider-kinds.js';
import { findProvider, openFields, readLlmSettings, readLlmVersion, type StoredProvider } from './provider-store.js';
import type { EmbeddingResult } from './providers.js';

/** Where the active provider came from: saved configuration, the `PLATFORM_LLM_*` bootstrap default, or nothing. */
export type ProviderSource = 'saved' | 'env' | 'none';

/** The tenant's active chat provider as one call sees it. */
export interface ActiveProvider {
  source: ProviderSource;
  kind: ProviderKind | null;
  subProvider: string;
  /** What spend rows name as the provider (`kind[:sub_provider]`, or the env base URL's host). */
  label: string;
  chatModel: string | undefined;
  admission: 'auto' | 'deny';
  /** Chat with tools through the provider, budgeted and recorded (`meter`); classified `LlmError` on any failure. */
  chat(meter: Meter, messages: ChatMessage[], tools: ToolSpec[], options?: ChatOptions): Promise<ChatResult>;
  client: MeteredProvider | null;
}

/** The `PLATFORM_LLM_*` variables as a provider configuration (an OpenAI-compatible endpoint), or null when unset. */
export function envProviderFields(config: AppConfig): ProviderFields | null {
  if (!config.llm.baseUrl) return null;
  return {
    base_url: config.llm.baseUrl,
    ...(config.llm.apiKey ? { api_key: config.llm.apiKey } : {}),
    ...(config.llm.model ? { model_name: config.llm.model } : {}),
    input_usd_per_mtok: config.llm.inputUsdPerMtok,
    output_usd_per_mtok: config.llm.outputUsdPerMtok,
  };
}

/** `PLATFORM_LLM_BASE_URL` is the operator's choice; a saved provider is an administrator's (shared/http/trust.ts). */
const providerEgress = (config: AppConfig, source: ProviderSource) =>
  egressFor(config, source === 'env' ? 'operator' : 'admin');

function activeOf(
  config: AppConfig,
  source: ProviderSource,
  kind: ProviderKind | null,
  subProvider: string,
  fields: ProviderFields | null,
  assignment: Record<string, string> | undefined,
  admission: 'auto' | 'deny',
  label: string,
): ActiveProvider {
  const client =
    kind && fields
      ? meteredClient(
          {
            kind,
            fields,
            egress: providerEgress(config, source),
            timeoutMs: config.llm.timeoutSeconds * 1000,
            aws: config.aws,
          },
          label,
        )
      : null;
  const chatModel = assignment?.chat_model_name ?? (kind && fields ? chatModelOf(kind, fields) : undefined);
  return {
    source,
    kind,
    subProvider,
    label,
    chatModel,
    admission,
    client,
    chat(meter, messages, tools, options) {
      if (admission === 'deny')
        return Promise.reject(
          llmFailure(
            'not_configured',
            'The active language-model provider is not admitted (its admission is deny).',
            'Ask an administrator to set its admission to auto or activate another provider.',
            false,
          ),
        );
      if (!client || !chatModel) return Promise.reject(notConfigured());
      return client.chat(meter, messages, tools, chatModel, options);
    },
  };
}

/**
 * Resolves the active provider of a tenant at call time. The resolution is cached per tenant and
 * tagged with the tenant's version (`llm_settings.version`, bumped by every provider or settings
 * write), so each call costs one indexed read and a switch takes effect on the next call, in the API
 * and the worker alike, without a restart.
 */
export class ActiveProviderResolver {
  private readonly cache = new Map<string, { version: number; active: ActiveProvider }>();

  constructor(private readonly config: AppConfig) {}

  async resolve(em: EntityManager, tenant: string): Promise<ActiveProvider> {
    const version = await readLlmVersion(em, tenant);
    const hit = this.cache.get(tenant);
    if (hit && hit.version === version) return hit.active;
    // Tagged with the version read before loading: a write in between only costs one more reload.
    const active = await this.load(em, tenant);
    this.cache.set(tenant, { version, active });
    return active;
  }

  private async load(em: EntityManager, tenant: string): Promise<ActiveProvider> {
    const settings = await readLlmSettings(em, tenant);
    if (settings.activeKind) {
      const stored = await findProvider(em, tenant, settings.activeKind, settings.activeSubProvider);
      if (stored)
        return savedActive(this.config, stored, settings.assignments[providerKey(stored.kind, stored.subProvider)]);
    }
    const env = envProviderFields(this.config);
    if (!env) return activeOf(this.config, 'none', null, '', null, undefined, 'auto', 'none');
    return activeOf(
      this.config,
      'env',
      'other',
      '',
      env,
      settings.assignments.env,
      'auto',
      new URL(env.base_url as string).host,
    );
  }
}

/** A saved provider as the active one (also used by the routes to describe it). */
export function savedActive(
  config: AppConfig,
  stored: StoredProvider,
  assignment: Record<string, string> | undefined,
): ActiveProvider {
  const fields = openFields(stored, secretBox(config));
  return activeOf(
    config,
    'saved',
    stored.kind,
    stored.subProvider,
    fields,
    assignment,
    stored.admission,
    providerKey(stored.kind, stored.subProvider),
  );
}

const resolvers = new WeakMap<AppConfig, ActiveProviderResolver>();

/** The process's resolver for a deployment configuration (one cache per process and config). */
export function activeProviders(config: AppConfig): ActiveProviderResolver {
  let r = resolvers.get(config);
  if (!r) resolvers.set(config, (r = new ActiveProviderResolver(config)));
  return r;
}

/** The embedding identity in use: the saved embeddings config, else the active chat provider's embedding model. */
export async function resolveEmbeddings(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
): Promise<EmbeddingTarget | null> {
  const settings = await readLlmSettings(em, tenant);
  const e = settings.embeddings;
  let stored: StoredProvider | null = null;
  if (e && typeof e.provider_kind === 'string')
    stored = await findProvider(em, tenant, e.provider_kind as ProviderKind, (e.sub_provider as string) ?? '');
  else if (settings.activeKind)
    stored = await findProvider(em, tenant, settings.activeKind, settings.activeSubProvider);
  let kind: ProviderKind;
  let fields: ProviderFields;
  let label: string;
  if (stored) {
    kind = stored.kind;
    fields = openFields(stored, secretBox(config));
    label = providerKey(stored.kind, stored.subProvider);
  } else {
    const env = envProviderFields(config);
    if (!env || e) return null;
    kind = 'other';
    fields = env;
    label = new URL(env.base_url as string).host;
  }
  const model = (typeof e?.model_name === 'string' ? e.model_name : undefined) ?? embeddingModelOf(kind, fields);
  if (!model) return null;
  const client = meteredClient(
    {
      kind,
      fields,
      egress: providerEgress(config, stored ? 'saved' : 'env'),
      timeoutMs: config.llm.timeoutSeconds * 1000,
      aws: config.aws,
    },
    label,
  );
  // Every embedding call is counted and budgeted against the tenant that resolved it.
  const meter: Meter = { em, tenant, purpose: 'embedding' };
  return {
    label,
    kind,
    subProvider: stored?.subProvider ?? '',
    model,
    async embed(texts) {
      // Spec Limits: inputs beyond the provider's window are sent whole, with a warning.
      const warning = embeddingWindowWarning(kind, texts);
      const result = await client.embed(meter, texts, model);
      return warning ? { ...result, windowWarning: warning } : result;
    },
  };
}

/** The embedding provider and model in use, as one call sees them. */
export interface EmbeddingTarget {
  label: string;
  kind: ProviderKind;
  subProvider: string;
  model: string;
  /** Embeds the texts whole (a metered call); `windowWarning` is set when some exceed the provider's input window. */
  embed(texts: string[]): Promise<EmbeddingResult & { windowWarning?: EmbeddingWindowWarning }>;
}
