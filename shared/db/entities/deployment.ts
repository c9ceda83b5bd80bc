import { column, table, type Row } from './table.js';

/** One language-model call's spend, recorded by the metered client (shared/llm/metered.ts). */
export const LlmUsageEntity = table('LlmUsage', 'llm_usage', {
  id: column.of<string>({ type: 'bigint', primary: true, autoincrement: true }),
  tenant: column.string(),
  provider: column.string(),
  model: column.string(),
  purpose: column.string(),
  promptTokens: column.integer(),
  completionTokens: column.integer(),
  costUsd: column.of<string>({ type: 'decimal', precision: 14, scale: 6 }),
  threadId: column.string().nullable(),
  occurredAt: column.date(),
});
export type LlmUsage = Row<typeof LlmUsageEntity>;

/** A persisted deployment setting (for example the demo budget cap), keyed by its dotted name. */
export const DeploymentSettingEntity = table('DeploymentSetting', 'deployment_settings', {
  key: column.string().primary(),
  value: column.json<unknown>(),
  updatedAt: column.date(),
  updatedBy: column.string(),
});
export type DeploymentSetting = Row<typeof DeploymentSettingEntity>;
