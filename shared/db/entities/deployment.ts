import { EntitySchema } from '@mikro-orm/core';

/** One language-model call's spend, recorded by the metered client (shared/llm/metered.ts). */
export interface LlmUsage {
  id: string;
  tenant: string;
  provider: string;
  model: string;
  purpose: string;
  promptTokens: number;
  completionTokens: number;
  costUsd: string;
  threadId: string | null;
  occurredAt: Date;
}

export const LlmUsageEntity = new EntitySchema<LlmUsage>({
  name: 'LlmUsage',
  tableName: 'llm_usage',
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    tenant: { type: 'string' },
    provider: { type: 'string' },
    model: { type: 'string' },
    purpose: { type: 'string' },
    promptTokens: { type: 'integer' },
    completionTokens: { type: 'integer' },
    costUsd: { type: 'decimal', precision: 14, scale: 6 },
    threadId: { type: 'string', nullable: true },
    occurredAt: { type: 'Date' },
  },
});

/** A persisted deployment setting (for example the demo budget cap), keyed by its dotted name. */
export interface DeploymentSetting {
  key: string;
  value: unknown;
  updatedAt: Date;
  updatedBy: string;
}

export const DeploymentSettingEntity = new EntitySchema<DeploymentSetting>({
  name: 'DeploymentSetting',
  tableName: 'deployment_settings',
  properties: {
    key: { type: 'string', primary: true },
    value: { type: 'json' },
    updatedAt: { type: 'Date' },
    updatedBy: { type: 'string' },
  },
});
