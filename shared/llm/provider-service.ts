import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { BadRequestError } from '../errors.js';
import type { Logger } from '../log.js';
import { LlmError } from './client.js';
import {
  brokenRule,
  chatModelOf,
  embeddingModelOf,
  MASK,
  PROVIDER_URL_FIELDS,
  providerKey,
  SECRET_FIELDS,
  withDefaults,
  type ProviderFields,
  type ProviderKind,
} from './provider-kinds.js';
import {
  deleteProvider,
  findProvider,
  openFields,
  readLlmSettings,
  splitFields,
  writeLlmSettings,
  writeProvider,
  type StoredProvider,
} from './provider-store.js';
import { meteredClient } from './metered.js';
import { checkSavedEndpoint, EGRESS_REFUSED, egressFor } from '../http/trust.js';
import { secretBox } from '../secrets/secret-box.js';

/** Spec, "Other named resources": the provider save response. */
export interface LlmOperationResult {
  success: boolean;
  message: string;
  embedding_adoption?: { adopted: boolean; provider_kind: string; sub_provider: string | null; model_name: string };
  warning_message?: string;
}

export interface ServiceCtx {
  em: EntityManager;
  config: AppConfig;
  principal: Principal;
  log: Logger;
}

/** The save-time test never waits longer than this, whatever the deployment's model timeout. */
const TEST_TIMEOUT_MS = 30_000;

export const labelOf = (kind: ProviderKind, sub: string) => `${providerKey(kind, sub)}`;

/** Where a connection test runs: a test that pings the model is a metered call of this tenant. */
export interface TestCtx {
  em: EntityManager;
  config: AppConfig;
  tenant: string;
}

/** Runs the provider's connection test on a flat configuration; answers the classified message of a failure, or null. */
export async function testFields(
  ctx: TestCtx,
  kind: ProviderKind,
  sub: string,
  fields: ProviderFields,
): Promise<{ ok: true; message: string } | { ok: false; message: string; errorId: string }> {
  const { config } = ctx;
  try {
    const message = await meteredClient(
      {
        kind,
        fields,
        egress: config.egress,
        timeoutMs: Math.min(TEST_TIMEOUT_MS, config.llm.timeoutSeconds * 1000),
        aws: config.aws,
      },
      labelOf(kind, sub),
    ).test({ em: ctx.em, tenant: ctx.tenant, purpose: 'connection_test' });
    return { ok: true, message };
  } catch (err) {
    if (!(err instanceof LlmError)) throw err;
    return { ok: false, message: err.failure.message, errorId: err.failure.error_id };
  }
}

/** Incoming fields without the save switch, and without masks sent back (a mask keeps the stored secret). */
function incomingFields(kind: ProviderKind, body: Record<string, unknown>): ProviderFields {
  const out: ProviderFields = {};
  for (const [k, v] of Object.entries(body)) {
    if (v === undefined || k === 'test_connection' || k === 'sub_provider' || k === 'force_activation') continue;
    if (SECRET_FIELDS[kind].includes(k) && v === MASK) continue;
    out[k] = v;
  }
  return out;
}

/**
 * `POST`/`PUT /api/config/llm-providers/{kind}` (provider-route rules 1, 2, 6): the duplicate check
 * first on create, the merged configuration's rules, then the write under a rollback guard.
 */
export async function saveProvider(
  ctx: ServiceCtx,
  kind: ProviderKind,
  body: Record<string, unknown>,
  mode: 'create' | 'update',
): Promise<LlmOperationResult> {
  const { em, config, principal, log } = ctx;
  const sub = kind === 'other' ? String(body.sub_provider ?? '') : '';
  const label = labelOf(kind, sub);
  let existing: StoredProvider | null = null;
  if (mode === 'create') {
    try {
      existing = await findProvider(em, principal.tenant, kind, sub);
    } catch (err) {
      // Rule 1: a failing duplicate check does not stop the creation.
      log.warn('provider duplicate check failed; creating anyway', { provider: label, error: String(err) });
    }
    if (existing)
      return {
        success: false,
        message: `Configuration for the provider ${label} already exists (use update: PUT /api/config/llm-providers/${kind}).`,
      };
  } else existing = await findProvider(em, principal.tenant, kind, sub);

  const box = secretBox(config);
  const previous = existing ? openFields(existing, box) : {};
  const incoming = incomingFields(kind, body);
  // Omitted fields keep their stored values (rule 6 names the proxy's; every kind behaves the same).
  const merged = withDefaults(kind, { ...previous, ...incoming });
  const rule = brokenRule(kind, merged);
  if (rule) throw new BadRequestError(`Not saved: ${rule}.`, { reason: 'provider_rule', rule });
  checkProviderHosts(config, incoming);

  const replacedSecret = SECRET_FIELDS[kind].some(
    (k) => incoming[k] !== undefined && previous[k] !== undefined && incoming[k] !== previous[k],
  );
  const runTest = body.test_connection === true || replacedSecret;
  const row = {
    tenant: principal.tenant,
    kind,
    subProvider: sub,
    ...splitFields(kind, merged, box),
    admission: existing?.admission ?? ('auto' as const),
    configured: true,
  };

  // Bedrock-type candidates are tested before anything is written.
  if (runTest && kind === 'bedrock') {
    const test = await testFields({ em, config, tenant: principal.tenant }, kind, sub, merged);
    if (!test.ok) return { success: false, message: `Connection test failed: ${test.message} Nothing was saved.` };
  }
  await writeProvider(em, row, principal.id);
  if (runTest && kind !== 'bedrock') {
    const test = await testFields({ em, config, tenant: principal.tenant }, kind, sub, merged);
    if (!test.ok) return { success: false, message: await rollBack(ctx, existing, kind, sub, test.message) };
  }

  const result: LlmOperationResult = {
    success: true,
    message: `Saved the ${label} provider.${runTest ? ' Connection test passed.' : ''}`,
  };
  if (!chatModelOf(kind, merged))
    result.warning_message = 'No chat model is named (model_name); calls through this provider need one.';
  // Rule 4: the warehouse-AI provider's `force_activation` makes it the active chat provider once saved.
  if (kind === 'warehouse_ai' && body.force_activation === true) {
    if (row.admission === 'deny')
      result.warning_message = 'Not activated: the provider is denied (admission deny); admit it before activating.';
    else {
      await writeLlmSettings(em, principal.tenant, { activeKind: kind, activeSubProvider: sub });
      result.message += ' It is now the active chat provider (force_activation).';
    }
  }
  const adoption = await adoptEmbeddings(em, principal.tenant, kind, sub, merged);
  if (adoption) result.embedding_adoption = adoption;
  return result;
}

/**
 * A provider address the egress policy never allows is refused before anything is written (400
 * EGRESS_REFUSED naming the field and the flag); only the addresses this request gives, as a
 * managed source's PATCH does. Every call checks the saved address again.
 */
function checkProviderHosts(config: AppConfig, incoming: ProviderFields): void {
  for (const field of PROVIDER_URL_FIELDS) {
    const value = incoming[field];
    if (typeof value !== 'string') continue;
    checkSavedEndpoint(value, egressFor(config, 'admin'), {
      field: `body.${field}`,
      code: EGRESS_REFUSED,
      what: 'The model provider host',
    });
  }
}

/** Restores what was stored before a failed save (or removes a new row); says so in the message. */
async function rollBack(
  ctx: ServiceCtx,
  existing: StoredProvider | null,
  kind: ProviderKind,
  sub: string,
  testMessage: string,
): Promise<string> {
  try {
    if (existing)
      await writeProvider(
        ctx.em,
        {
          tenant: existing.tenant,
          kind,
          subProvider: sub,
          settings: existing.settings,
          secretsSealed: existing.secretsSealed,
          secretFields: existing.secretFields,
          admission: existing.admission,
          configured: existing.configured,
        },
        `${ctx.principal.id}:rollback`,
      );
    else await deleteProvider(ctx.em, ctx.principal.tenant, kind, sub);
  } catch (err) {
    ctx.log.error('provider rollback failed', { provider: labelOf(kind, sub), error: String(err) });
    return `Connection test failed: ${testMessage} Restoring the previous configuration failed: the previous credentials must be re-entered.`;
  }
  return existing
    ? `Connection test failed: ${testMessage} The previous credentials were restored.`
    : `Connection test failed: ${testMessage} Nothing was saved.`;
}

/** A provider naming an embedding model becomes the embedding identity when none is saved yet. */
async function adoptEmbeddings(
  em: EntityManager,
  tenant: string,
  kind: ProviderKind,
  sub: string,
  fields: ProviderFields,
): Promise<LlmOperationResult['embedding_adoption'] | undefined> {
  const model = embeddingModelOf(kind, fields);
  if (!model) return undefined;
  const settings = await readLlmSettings(em, tenant);
  if (settings.embeddings) return undefined;
  await writeLlmSettings(em, tenant, { embeddings: { provider_kind: kind, sub_provider: sub, model_name: model } });
  return { adopted: true, provider_kind: kind, sub_provider: sub || null, model_name: model };
}
