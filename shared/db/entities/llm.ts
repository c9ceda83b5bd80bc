import { EntitySchema } from '@mikro-orm/core';

/** A saved language-model provider of a tenant. `secretsSealed` holds every secret field as one sealed JSON object (`secretFields` names them); `settings` holds no secret. */
export interface LlmProviderRow {
  tenant: string;
  providerKind: string;
  /** The vendor behind the multi-vendor `other` kind; '' for every other kind. */
  subProvider: string;
  settings: Record<string, unknown>;
  secretsSealed: string | null;
  secretFields: string[];
  admission: 'auto' | 'deny';
  configured: boolean;
  createdAt: Date;
  updatedAt: Date;
  updatedBy: string;
}

export const LlmProviderEntity = new EntitySchema<LlmProviderRow>({
  name: 'LlmProviderRow',
  tableName: 'llm_providers',
  properties: {
    tenant: { type: 'string', primary: true },
    providerKind: { type: 'string', primary: true },
    subProvider: { type: 'string', primary: true },
    settings: { type: 'json' },
    secretsSealed: { type: 'text', nullable: true },
    secretFields: { type: 'json' },
    admission: { type: 'string' },
    configured: { type: 'boolean' },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
    updatedBy: { type: 'string' },
  },
});

/** Per tenant: the active chat provider, `main` assignments per provider, the embedding identity, and the cache version. */
export interface LlmSettingsRow {
  tenant: string;
  activeKind: string | null;
  activeSubProvider: string;
  assignments: Record<string, Record<string, string>>;
  embeddings: Record<string, unknown> | null;
  reindex: Record<string, unknown> | null;
  version: string;
  updatedAt: Date;
}

export const LlmSettingsEntity = new EntitySchema<LlmSettingsRow>({
  name: 'LlmSettingsRow',
  tableName: 'llm_settings',
  properties: {
    tenant: { type: 'string', primary: true },
    activeKind: { type: 'string', nullable: true },
    activeSubProvider: { type: 'string' },
    assignments: { type: 'json' },
    embeddings: { type: 'json', nullable: true },
    reindex: { type: 'json', nullable: true },
    version: { type: 'bigint' },
    updatedAt: { type: 'Date' },
  },
});
