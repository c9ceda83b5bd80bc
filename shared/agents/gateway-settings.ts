import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { DeploymentSettingEntity } from '../db/entities/index.js';
import type { DefaultAgentSettings, UnavailablePolicy } from './default-agent.js';
import { sql } from '../db/sql.js';

/** Gateway settings belong to one tenant: one tenant's administrator never changes another's default. */
const agentKey = (tenant: string) => `gateway.${tenant}.default_agent_id`;
const policyKey = (tenant: string) => `gateway.${tenant}.default_agent_unavailable_policy`;

export interface GatewaySettings {
  default_agent_id: string | null;
  default_agent_unavailable_policy: UnavailablePolicy | null;
}

/** The stored gateway settings (null when unset or cleared). */
export async function readGatewaySettings(em: EntityManager, tenant: string): Promise<GatewaySettings> {
  const [AGENT_KEY, POLICY_KEY] = [agentKey(tenant), policyKey(tenant)];
  const rows = await em.find(DeploymentSettingEntity, { key: { $in: [AGENT_KEY, POLICY_KEY] } });
  const value = (key: string) => (rows.find((r) => r.key === key)?.value ?? null) as string | null;
  return {
    default_agent_id: value(AGENT_KEY),
    default_agent_unavailable_policy: value(POLICY_KEY) as UnavailablePolicy | null,
  };
}

/** Applies a partial update; `null` clears a setting (falling back to the deployment's env). */
export async function writeGatewaySettings(
  em: EntityManager,
  tenant: string,
  patch: Partial<GatewaySettings>,
  updatedBy: string,
  now = new Date(),
): Promise<GatewaySettings> {
  for (const [key, value] of [
    [agentKey(tenant), patch.default_agent_id],
    [policyKey(tenant), patch.default_agent_unavailable_policy],
  ] as const) {
    if (value === undefined) continue;
    if (value === null) await sql(em, 'delete from deployment_settings where key = ?', [key]);
    else
      await sql(
        em,
        `insert into deployment_settings (key, value, updated_at, updated_by) values (?, ?::jsonb, ?, ?)
         on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
        [key, JSON.stringify(value), now, updatedBy],
      );
  }
  return readGatewaySettings(em, tenant);
}

/** Settings and env together, as `resolveDefaultAgent` takes them. */
export async function defaultAgentSettings(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
): Promise<DefaultAgentSettings> {
  const stored = await readGatewaySettings(em, tenant);
  return {
    settingAgentId: stored.default_agent_id,
    envAgentId: config.gateway.defaultAgentId ?? null,
    settingPolicy: stored.default_agent_unavailable_policy,
    envPolicy: config.gateway.defaultAgentUnavailablePolicy ?? null,
  };
}
