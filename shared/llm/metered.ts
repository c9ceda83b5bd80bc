/**
 * The one door to a language model. Every chat or embedding call, whatever starts it (a thread turn,
 * `ASK`, the blueprint wizard, a skill run, document embeddings, a connection test), goes through
 * `meteredClient`: it refuses the call once the demo budget is used up, and records the answered call's
 * tokens and spend (`llm_usage`, which `platform_llm_calls_total` and `platform_llm_spend_usd_total`
 * count). The raw provider clients (`providers.ts`) are imported by this module alone
 * (tests/unit/llm-metering.test.ts holds that), so no caller can reach a model unmetered.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { demoBudgetExhausted, recordLlmUsage } from '../deployment/demo-budget.js';
import { llmFailure, type ChatMessage, type ChatOptions, type ChatResult, type ToolSpec } from './client.js';
import type { ProviderFields } from './provider-kinds.js';
import type { LlmPurpose } from './purposes.js';
import { providerClient, type EmbeddingResult, type ProviderTarget } from './providers.js';

/** Who pays for one model call: where its spend row is written and what it is counted as. */
export interface Meter {
  em: EntityManager;
  tenant: string;
  purpose: LlmPurpose;
  /** The thread whose turn made the call (scope `thread` of the metrics). */
  threadId?: string | null;
}

export interface Prices {
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** A provider configuration's prices per million tokens (`input_usd_per_mtok`, `output_usd_per_mtok`; 0 when unset). */
export const pricesOf = (fields: ProviderFields | null): Prices => ({
  inputUsdPerMtok: num(fields?.input_usd_per_mtok),
  outputUsdPerMtok: num(fields?.output_usd_per_mtok),
});

/** The language-model cost formula: tokens times the provider's price per million, in US dollars. */
export const callCostUsd = (usage: TokenUsage, prices: Prices) =>
  (usage.promptTokens * prices.inputUsdPerMtok + usage.completionTokens * prices.outputUsdPerMtok) / 1_000_000;

/** The refusal every caller gets once a hosted demo's cap is reached (`PUT /api/internal/demo-budget/cap`). */
export const budgetExhausted = () =>
  llmFailure(
    'budget_exhausted',
    'This deployment has used its language-model budget.',
    'Ask the deployment owner to raise the cap.',
    false,
  );

/** A provider client whose every model call is budgeted and recorded; listing models is no model call. */
export interface MeteredProvider {
  chat(
    meter: Meter,
    messages: ChatMessage[],
    tools: ToolSpec[],
    model?: string,
    options?: ChatOptions,
  ): Promise<ChatResult>;
  embed(meter: Meter, texts: string[], model?: string): Promise<EmbeddingResult>;
  listModels(): Promise<string[]>;
  /** The save-time connection test; a test that pings the model is metered like any call. */
  test(meter: Meter): Promise<string>;
}

/** The client of one provider configuration; `label` is what its spend rows name as the provider. */
export function meteredClient(target: ProviderTarget, label: string): MeteredProvider {
  const raw = providerClient(target);
  const prices = pricesOf(target.fields);
  async function metered<T>(meter: Meter, call: () => Promise<T>, usage: (r: T) => TokenUsage & { model: string }) {
    if (await demoBudgetExhausted(meter.em)) throw budgetExhausted();
    const result = await call();
    const u = usage(result);
    await recordLlmUsage(meter.em, {
      tenant: meter.tenant,
      provider: label,
      model: u.model,
      purpose: meter.purpose,
      promptTokens: u.promptTokens,
      completionTokens: u.completionTokens,
      costUsd: callCostUsd(u, prices),
      threadId: meter.threadId ?? null,
    });
    return result;
  }
  const client: MeteredProvider = {
    chat: (meter, messages, tools, model, options) =>
      metered(
        meter,
        () => raw.chat(messages, tools, model, options),
        (r) => ({ model: r.model, ...r.usage }),
      ),
    embed: (meter, texts, model) =>
      metered(
        meter,
        () => raw.embed(texts, model),
        (r) => ({ model: r.model, promptTokens: r.promptTokens, completionTokens: 0 }),
      ),
    listModels: () => raw.listModels(),
    test: (meter) => raw.test((messages, tools, model) => client.chat(meter, messages, tools, model)),
  };
  return client;
}
