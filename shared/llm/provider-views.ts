import type { AppConfig } from '../config.js';
import { envProviderFields } from './active-provider.js';
import {
  chatModelOf,
  embeddingModelOf,
  MASK,
  providerKey,
  SECRET_FIELDS,
  type ProviderKind,
} from './provider-kinds.js';
import type { LlmSettings, StoredProvider } from './provider-store.js';

export const PROVIDER_TITLES: Record<ProviderKind, string> = {
  openai: 'OpenAI',
  azure_openai: 'Azure-type OpenAI',
  anthropic: 'Anthropic-style messages',
  bedrock: 'Bedrock-type runtime',
  warehouse_ai: 'Warehouse AI',
  databricks: 'Databricks-type serving endpoints',
  other: 'OpenAI-compatible',
  proxy: 'Proxy',
};

const isActive = (p: StoredProvider, s: LlmSettings) =>
  s.activeKind === p.kind && s.activeSubProvider === p.subProvider;

/** One provider as the configuration panel reads it: settings, secrets masked, models, state. */
export function providerView(p: StoredProvider, s: LlmSettings) {
  const secrets: Record<string, string> = {};
  for (const field of SECRET_FIELDS[p.kind]) if (p.secretFields.includes(field)) secrets[field] = MASK;
  return {
    provider_kind: p.kind,
    sub_provider: p.subProvider || null,
    configured: p.configured,
    active: isActive(p, s),
    admission: p.admission,
    settings: p.settings,
    secrets,
    chat_model: chatModelOf(p.kind, p.settings) ?? null,
    embedding_model: embeddingModelOf(p.kind, p.settings) ?? null,
    assignments: s.assignments[providerKey(p.kind, p.subProvider)] ?? {},
    updated_at: p.updatedAt.toISOString(),
  };
}

/** The active chat provider in words: saved, the `PLATFORM_LLM_*` bootstrap default, or none. */
export function activeSummary(config: AppConfig, providers: StoredProvider[], s: LlmSettings) {
  const active = providers.find((p) => isActive(p, s));
  if (active)
    return {
      source: 'saved' as const,
      provider_kind: active.kind as string,
      sub_provider: active.subProvider || null,
      model:
        s.assignments[providerKey(active.kind, active.subProvider)]?.chat_model_name ??
        chatModelOf(active.kind, active.settings) ??
        null,
    };
  const env = envProviderFields(config);
  if (env)
    return {
      source: 'env' as const,
      provider_kind: 'other',
      sub_provider: null,
      model: s.assignments.env?.chat_model_name ?? (env.model_name as string | undefined) ?? null,
    };
  return { source: 'none' as const, provider_kind: null, sub_provider: null, model: null };
}

const hostOf = (url: unknown) => {
  try {
    return typeof url === 'string' ? new URL(url).host : null;
  } catch {
    return null;
  }
};

/** The read-only overview any signed-in user may see: titles and masked subtitles, never a secret. */
export function overviewRow(p: StoredProvider, s: LlmSettings) {
  const host = hostOf(p.settings.base_url ?? p.settings.llm_endpoint ?? p.settings.custom_endpoint_url);
  const model = chatModelOf(p.kind, p.settings);
  const hasSecret = SECRET_FIELDS[p.kind].some((f) => p.secretFields.includes(f));
  const subtitle = [model ?? 'no chat model', host, hasSecret ? `key ${MASK}` : null].filter(Boolean).join(' · ');
  return {
    provider_kind: p.kind,
    sub_provider: p.subProvider || null,
    title: p.subProvider ? `${PROVIDER_TITLES[p.kind]} (${p.subProvider})` : PROVIDER_TITLES[p.kind],
    subtitle,
    active: isActive(p, s),
    configured: p.configured,
    admission: p.admission,
  };
}
