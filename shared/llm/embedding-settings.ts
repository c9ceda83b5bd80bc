/**
 * The embedding identity and model assignments of the configuration panel
 * (`/api/config/ai-providers/embedding-health`, `/api/config/models/…`): the health probe, the saved
 * identity and its change (which marks indexes for re-embedding and starts the tenant's re-embedding
 * workflow), the re-embedding progress, and a provider's model assignments.
 */
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { AppDeps } from '../app-deps.js';
import { documentIndexConsumer } from '../document-index/consumer.js';
import type { EmbeddingIdentity } from '../embeddings/consumers.js';
import { readReindexProgress } from '../embeddings/reindex.js';
import { NotFoundError } from '../errors.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { embeddingReindexWorkflowId } from '../../workflows/embedding-reindex-definitions.js';
import { resolveEmbeddings } from './active-provider.js';
import { LlmError } from './client.js';
import { providerKey, type ProviderKind } from './provider-kinds.js';
import type { LlmOperationResult } from './provider-service.js';
import { findProvider, readLlmSettings, writeLlmSettings } from './provider-store.js';

/** Spec: embedding-health waits at most 5 seconds. */
export const EMBEDDING_HEALTH_WAIT_MS = 5_000;

/** Starts the tenant's re-embedding for a recorded identity change (`llm_settings.reindex`). */
async function startReindex(
  deps: AppDeps,
  tenant: string,
  runId: string,
  reindex: Record<string, unknown>,
  conflict: WorkflowIdConflictPolicy,
): Promise<void> {
  const identity = (v: unknown): EmbeddingIdentity | null => {
    const o = v as Record<string, unknown> | null | undefined;
    if (!o || typeof o.provider_kind !== 'string' || typeof o.model_name !== 'string') return null;
    return {
      provider_kind: o.provider_kind,
      sub_provider: typeof o.sub_provider === 'string' ? o.sub_provider : '',
      model_name: o.model_name,
    };
  };
  const to = identity(reindex.to);
  if (!to) return;
  await deps.temporal.workflow.start(workflowRef('embeddingReindexWorkflow'), {
    workflowId: embeddingReindexWorkflowId(tenant),
    taskQueue: deps.config.temporal.taskQueue,
    workflowIdConflictPolicy: conflict,
    args: [
      { tenant, runId, identity: to, previous: identity(reindex.from), batchSize: deps.config.llm.reindexBatchSize },
    ],
    typedSearchAttributes: lifecycleSearchAttributes('embeddingReindexWorkflow', {
      tenant: tenant,
      resourceId: runId,
      status: 'running',
    }),
  });
}

/** One embedding call against the embedding provider, waiting at most 5 s (`unavailable` when slow or down). */
export async function embeddingHealth(c: { deps: AppDeps; em: EntityManager; principal: { tenant: string } }) {
  const startup_smoke_tests = c.deps.embeddingSmoke?.forTenant(c.principal.tenant) ?? [];
  const checked_at = new Date().toISOString();
  const config = {
    ...c.deps.config,
    llm: { ...c.deps.config.llm, timeoutSeconds: EMBEDDING_HEALTH_WAIT_MS / 1000 },
  };
  const target = await resolveEmbeddings(c.em, config, c.principal.tenant);
  if (!target)
    return {
      success: true,
      data: {
        status: 'not_configured',
        provider: null,
        model: null,
        dimensions: null,
        message: 'No embedding provider and model are configured.',
        checked_at,
        startup_smoke_tests,
      },
    };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), EMBEDDING_HEALTH_WAIT_MS)));
  try {
    const result = await Promise.race([target.embed(['embedding health check']), late]);
    const base = { provider: target.label, model: target.model, checked_at, startup_smoke_tests };
    if (result === 'late')
      return {
        success: true,
        data: {
          ...base,
          status: 'unavailable',
          dimensions: null,
          message: 'The embedding provider did not answer within 5 seconds.',
        },
      };
    return {
      success: true,
      data: {
        ...base,
        status: 'ok',
        dimensions: result.vectors[0]?.length ?? null,
        message: 'The embedding provider answered.',
      },
    };
  } catch (err) {
    if (!(err instanceof LlmError)) throw err;
    return {
      success: true,
      data: {
        provider: target.label,
        model: target.model,
        checked_at,
        startup_smoke_tests,
        status: 'unavailable',
        dimensions: null,
        message: err.failure.message,
      },
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The embedding identity: saved, else the active provider's embedding model, else none. */
export async function embeddingsConfig(c: { em: EntityManager; principal: { tenant: string } }) {
  const s = await readLlmSettings(c.em, c.principal.tenant);
  if (s.embeddings)
    return {
      success: true,
      data: {
        source: 'saved',
        provider_kind: s.embeddings.provider_kind as string,
        sub_provider: (s.embeddings.sub_provider as string) || null,
        model_name: s.embeddings.model_name as string,
      },
    };
  const active = s.activeKind ? await findProvider(c.em, c.principal.tenant, s.activeKind, s.activeSubProvider) : null;
  const model = (active?.settings.embedding_deployment ?? active?.settings.embedding_model_name) as string | undefined;
  return {
    success: true,
    data:
      active && model
        ? {
            source: 'active_provider',
            provider_kind: active.kind,
            sub_provider: active.subProvider || null,
            model_name: model,
          }
        : { source: 'none', provider_kind: null, sub_provider: null, model_name: null },
  };
}

/** Sets the embedding identity; a change marks indexes for re-embedding and starts it. */
export async function setEmbeddingsConfig(c: {
  deps: AppDeps;
  em: EntityManager;
  principal: { tenant: string };
  body: { provider_kind: ProviderKind; sub_provider?: string; model_name: string };
}): Promise<LlmOperationResult> {
  const kind: ProviderKind = c.body.provider_kind;
  const sub = kind === 'other' ? (c.body.sub_provider ?? '') : '';
  const p = await findProvider(c.em, c.principal.tenant, kind, sub);
  if (!p)
    throw new NotFoundError(`No configuration for the provider ${providerKey(kind, sub)} exists; save it first.`, {
      reason: 'provider_not_saved',
    });
  const s = await readLlmSettings(c.em, c.principal.tenant);
  const next = { provider_kind: kind, sub_provider: sub, model_name: c.body.model_name };
  const before = s.embeddings;
  const changed =
    !before ||
    before.provider_kind !== next.provider_kind ||
    (before.sub_provider ?? '') !== next.sub_provider ||
    before.model_name !== next.model_name;
  if (!changed) {
    // A re-embedding whose start was lost (Temporal down at the change) starts on the next save.
    const runId = s.reindex?.run_id;
    if (typeof runId === 'string' && (await readReindexProgress(c.em, c.principal.tenant))?.runId !== runId) {
      await startReindex(c.deps, c.principal.tenant, runId, s.reindex!, WorkflowIdConflictPolicy.USE_EXISTING);
      return { success: true, message: 'The embedding identity is unchanged; its re-embedding has started.' };
    }
    return { success: true, message: 'The embedding identity is unchanged.' };
  }
  // Vectors of another identity are not comparable: indexes built before must be re-embedded.
  // A first identity also re-embeds when document indexes hold vectors of another (the local default).
  const stranded = before ? 0 : await documentIndexConsumer.count(c.em, c.principal.tenant, next);
  const reindex =
    before || stranded > 0
      ? {
          status: 'pending',
          run_id: randomUUID(),
          requested_at: new Date().toISOString(),
          from: before ?? null,
          to: next,
        }
      : null;
  await writeLlmSettings(c.em, c.principal.tenant, { embeddings: next, ...(reindex ? { reindex } : {}) });
  // A newer change supersedes a running re-embedding: its work is for an identity no longer wanted.
  if (reindex)
    await startReindex(
      c.deps,
      c.principal.tenant,
      reindex.run_id,
      reindex,
      WorkflowIdConflictPolicy.TERMINATE_EXISTING,
    );
  return {
    success: true,
    message: reindex
      ? `Embedding identity ${before ? 'changed' : 'set'}; indexes are marked for re-embedding.`
      : 'Embedding identity set.',
  };
}

/** Progress of the latest requested re-embedding (`idle` when none was requested). */
export async function reindexingStatus(c: { em: EntityManager; principal: { tenant: string } }) {
  const r = (await readLlmSettings(c.em, c.principal.tenant)).reindex;
  const run = await readReindexProgress(c.em, c.principal.tenant);
  // The progress row of the latest requested run; none yet: the workflow has not begun (or its start was lost).
  const p = run && r?.run_id === run.runId ? run : null;
  return {
    success: true,
    data: {
      status: p ? p.status : r ? 'pending' : 'idle',
      run_id: (r?.run_id as string | undefined) ?? null,
      requested_at: (r?.requested_at as string | undefined) ?? null,
      from: (r?.from as Record<string, unknown> | undefined) ?? null,
      to: (r?.to as Record<string, unknown> | undefined) ?? null,
      indexes: p?.consumers ?? [],
      indexes_total: p?.consumers.length ?? 0,
      indexes_done: p?.consumersDone ?? 0,
      total: p?.total ?? 0,
      done: p?.done ?? 0,
      failed: p?.failed ?? 0,
      over_input_window: p?.overWindow ?? 0,
      error: p?.error ?? null,
      started_at: p?.startedAt.toISOString() ?? null,
      finished_at: p?.finishedAt?.toISOString() ?? null,
    },
  };
}

/** Stores a provider's model assignments (default: the active provider); `use_defaults` returns to its own models. */
export async function setMainModelAssignments(c: {
  em: EntityManager;
  principal: { tenant: string };
  body: {
    provider_kind?: ProviderKind;
    sub_provider?: string;
    use_defaults?: boolean;
    chat_model_name?: string;
    fast_model_name?: string;
  };
}) {
  const s = await readLlmSettings(c.em, c.principal.tenant);
  const kind = c.body.provider_kind ?? s.activeKind;
  const key = kind
    ? providerKey(
        kind,
        kind === 'other' ? (c.body.sub_provider ?? (c.body.provider_kind ? '' : s.activeSubProvider)) : '',
      )
    : 'env';
  const current = c.body.use_defaults ? {} : { ...(s.assignments[key] ?? {}) };
  if (c.body.chat_model_name) current.chat_model_name = c.body.chat_model_name;
  if (c.body.fast_model_name) current.fast_model_name = c.body.fast_model_name;
  const assignments = { ...s.assignments, [key]: current };
  await writeLlmSettings(c.em, c.principal.tenant, { assignments });
  return { success: true, data: { provider: key, assignments: current } };
}
