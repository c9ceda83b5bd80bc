import type { EntityManager } from '@mikro-orm/postgresql';
import { DeploymentSettingEntity, LlmUsageEntity } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import { sql } from '../db/sql.js';
import type { LlmPurpose } from '../llm/purposes.js';

export const DEMO_BUDGET_CAP_KEY = 'demo_budget.cap_usd';

export interface LlmCall {
  tenant: string;
  provider: string;
  model: string;
  /** What started the call. */
  purpose: LlmPurpose;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  threadId?: string | null;
  occurredAt?: Date;
}

/** Records one language-model call's spend; called by the metered client (shared/llm/metered.ts) alone. */
export async function recordLlmUsage(em: EntityManager, call: LlmCall): Promise<void> {
  await em.insert(LlmUsageEntity, {
    tenant: call.tenant,
    provider: call.provider,
    model: call.model,
    purpose: call.purpose,
    promptTokens: call.promptTokens,
    completionTokens: call.completionTokens,
    costUsd: call.costUsd.toFixed(6),
    threadId: call.threadId ?? null,
    occurredAt: call.occurredAt ?? new Date(),
  });
}

export interface DemoBudgetAggregate {
  spend_usd: number;
  cap_usd: number | null;
  remaining_usd: number | null;
  exhausted: boolean;
  llm_call_count: number;
  latest_llm_call_at: string | null;
  latest_sign_in_at: string | null;
}

/** Deployment spend versus cap; the latest-activity times are null when they cannot be read. */
export async function demoBudgetAggregate(em: EntityManager): Promise<DemoBudgetAggregate> {
  const [spend] = await sql<{ spend: string; calls: string }>(
    em,
    'select coalesce(sum(cost_usd), 0)::text as spend, count(*)::text as calls from llm_usage',
  );
  const capSetting = await em.findOne(DeploymentSettingEntity, { key: DEMO_BUDGET_CAP_KEY });
  const spendUsd = Number(spend?.spend ?? 0);
  const cap = typeof capSetting?.value === 'number' ? capSetting.value : null;
  const latest = async (query: string): Promise<string | null> => {
    try {
      const [row] = await sql<{ at: Date | null }>(em, query);
      return toIso(row?.at);
    } catch {
      return null;
    }
  };
  return {
    spend_usd: spendUsd,
    cap_usd: cap,
    remaining_usd: cap === null ? null : Math.max(0, Number((cap - spendUsd).toFixed(6))),
    exhausted: cap !== null && spendUsd >= cap,
    llm_call_count: Number(spend?.calls ?? 0),
    latest_llm_call_at: await latest('select max(occurred_at) as at from llm_usage'),
    latest_sign_in_at: await latest(`select max(last_sign_in_at) as at from users where kind = 'person'`),
  };
}

/** Sets the effective cap immediately (upsert); returns what is now stored. */
export async function setDemoBudgetCap(em: EntityManager, capUsd: number, updatedBy: string, now = new Date()) {
  await sql(
    em,
    `insert into deployment_settings (key, value, updated_at, updated_by) values (?, ?::jsonb, ?, ?)
     on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
    [DEMO_BUDGET_CAP_KEY, JSON.stringify(capUsd), now, updatedBy],
  );
  return { cap_usd: capUsd, updated_at: now.toISOString() };
}

/** True when a cap is set and spend has reached it; without a cap this is one key lookup. */
export async function demoBudgetExhausted(em: EntityManager): Promise<boolean> {
  const cap = await em.findOne(DeploymentSettingEntity, { key: DEMO_BUDGET_CAP_KEY });
  if (typeof cap?.value !== 'number') return false;
  const [row] = await sql<{ spend: string }>(em, 'select coalesce(sum(cost_usd), 0)::text as spend from llm_usage');
  return Number(row?.spend ?? 0) >= cap.value;
}
