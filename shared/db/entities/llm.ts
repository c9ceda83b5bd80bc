import { column, table, type Row } from './table.js';

/** A saved language-model provider of a tenant. `secretsSealed` holds every secret field as one sealed JSON object (`secretFields` names them); `settings` holds no secret. */
export const LlmProviderEntity = table('LlmProviderRow', 'llm_providers', {
  tenant: column.string().primary(),
  providerKind: column.string().primary(),
  /** The vendor behind the multi-vendor `other` kind; '' for every other kind. */
  subProvider: column.string().primary(),
  settings: column.json<Record<string, unknown>>(),
  secretsSealed: column.text().nullable(),
  secretFields: column.json<string[]>(),
  admission: column.string<'auto' | 'deny'>(),
  configured: column.boolean(),
  createdAt: column.date(),
  updatedAt: column.date(),
  updatedBy: column.string(),
});
export type LlmProviderRow = Row<typeof LlmProviderEntity>;

/** Per tenant: the active chat provider, `main` assignments per provider, the embedding identity, and the cache version. */
export const LlmSettingsEntity = table('LlmSettingsRow', 'llm_settings', {
  tenant: column.string().primary(),
  activeKind: column.string().nullable(),
  activeSubProvider: column.string(),
  assignments: column.json<Record<string, Record<string, string>>>(),
  embeddings: column.json<Record<string, unknown>>().nullable(),
  reindex: column.json<Record<string, unknown>>().nullable(),
  version: column.of<string>({ type: 'bigint' }),
  updatedAt: column.date(),
});
export type LlmSettingsRow = Row<typeof LlmSettingsEntity>;
