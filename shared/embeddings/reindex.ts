import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { resolveEmbeddings } from '../llm/active-provider.js';
import { LlmError, type LlmFailure } from '../llm/client.js';
import { readLlmSettings } from '../llm/provider-store.js';
import { sameIdentity, type EmbeddingConsumerRegistry, type EmbeddingIdentity } from './consumers.js';
import { sql } from '../db/sql.js';

type Row = Record<string, unknown>;

export type ReindexStatus = 'running' | 'completed' | 'failed' | 'superseded';

export interface ReindexProgress {
  runId: string;
  status: ReindexStatus;
  identity: EmbeddingIdentity;
  previous: EmbeddingIdentity | null;
  consumers: string[];
  consumersDone: number;
  total: number;
  done: number;
  failed: number;
  overWindow: number;
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** Failures of one text (the rest of the batch can still be embedded); any other kind concerns the provider. */
const ITEM_FAILURES: ReadonlySet<LlmFailure['kind']> = new Set(['context_too_long', 'content_refused', 'bad_request']);

/** The tenant's saved embedding identity (null when none is saved). */
async function savedIdentity(em: EntityManager, tenant: string): Promise<EmbeddingIdentity | null> {
  const e = (await readLlmSettings(em, tenant)).embeddings;
  if (!e || typeof e.provider_kind !== 'string' || typeof e.model_name !== 'string') return null;
  return {
    provider_kind: e.provider_kind,
    sub_provider: typeof e.sub_provider === 'string' ? e.sub_provider : '',
    model_name: e.model_name,
  };
}

const progressOf = (r: Row): ReindexProgress => ({
  runId: r.run_id as string,
  status: r.status as ReindexStatus,
  identity: r.identity as EmbeddingIdentity,
  previous: (r.previous as EmbeddingIdentity | null) ?? null,
  consumers: r.consumers as string[],
  consumersDone: Number(r.consumers_done),
  total: Number(r.total),
  done: Number(r.done),
  failed: Number(r.failed),
  overWindow: Number(r.over_window),
  error: (r.error as string | null) ?? null,
  startedAt: new Date(r.started_at as string),
  finishedAt: r.finished_at ? new Date(r.finished_at as string) : null,
});

export async function readReindexProgress(em: EntityManager, tenant: string): Promise<ReindexProgress | null> {
  const rows: Row[] = await sql(em, 'select * from embedding_reindex_runs where tenant = ?', [tenant]);
  return rows[0] ? progressOf(rows[0]) : null;
}

/**
 * Starts (or, on a retried activity, finds) the run's progress row: counts what each consumer must
 * re-embed for the identity. A run whose identity is no longer the saved one is superseded and writes
 * nothing (the newer change started its own run).
 */
export async function beginReindex(
  em: EntityManager,
  registry: EmbeddingConsumerRegistry,
  input: { tenant: string; runId: string; identity: EmbeddingIdentity; previous: EmbeddingIdentity | null },
): Promise<{ status: 'running' | 'superseded'; consumers: string[] }> {
  const current = await savedIdentity(em, input.tenant);
  if (!current || !sameIdentity(current, input.identity)) return { status: 'superseded', consumers: [] };
  const existing = await readReindexProgress(em, input.tenant);
  if (existing?.runId === input.runId)
    return { status: existing.status === 'superseded' ? 'superseded' : 'running', consumers: existing.consumers };
  const consumers = registry.names();
  let total = 0;
  for (const name of consumers) total += await registry.get(name)!.count(em, input.tenant, input.identity);
  const now = new Date();
  await sql(
    em,
    `insert into embedding_reindex_runs
       (tenant, run_id, status, identity, previous, consumers, consumers_done, total, done, failed, over_window,
        error, started_at, finished_at, updated_at)
     values (?, ?, 'running', ?::jsonb, ?::jsonb, ?::jsonb, 0, ?, 0, 0, 0, null, ?, null, ?)
     on conflict (tenant) do update set run_id = excluded.run_id, status = 'running', identity = excluded.identity,
       previous = excluded.previous, consumers = excluded.consumers, consumers_done = 0, total = excluded.total,
       done = 0, failed = 0, over_window = 0, error = null, started_at = excluded.started_at, finished_at = null,
       updated_at = excluded.updated_at`,
    [
      input.tenant,
      input.runId,
      JSON.stringify(input.identity),
      input.previous ? JSON.stringify(input.previous) : null,
      JSON.stringify(consumers),
      total,
      now,
      now,
    ],
  );
  return { status: 'running', consumers };
}

export interface ReindexBatchResult {
  /** Items read for this batch (fewer than the batch size: the consumer is finished). */
  items: number;
  /** The cursor for the next batch. */
  lastKey: string | null;
  /** Set when the run must stop: `superseded` (the identity changed again) or a provider-wide failure. */
  stop?: { status: 'superseded' } | { status: 'failed'; error: string };
}

/**
 * One batch of one consumer: reads pending items after the cursor, embeds them in one call through
 * the tenant's embedding provider (`resolveEmbeddings`), stores the vectors and counts progress in
 * one transaction. A retryable provider failure throws (the activity retries); a failure of single
 * texts (too long, refused) counts those items as failed and embeds the rest one by one; any other
 * failure (authentication, unknown model…) stops the run with the classified message.
 */
export async function reindexBatch(
  em: EntityManager,
  config: AppConfig,
  registry: EmbeddingConsumerRegistry,
  input: {
    tenant: string;
    runId: string;
    identity: EmbeddingIdentity;
    consumer: string;
    afterKey: string | null;
    batchSize: number;
  },
): Promise<ReindexBatchResult> {
  const current = await savedIdentity(em, input.tenant);
  if (!current || !sameIdentity(current, input.identity))
    return { items: 0, lastKey: input.afterKey, stop: { status: 'superseded' } };
  const consumer = registry.get(input.consumer);
  if (!consumer)
    return {
      items: 0,
      lastKey: input.afterKey,
      stop: { status: 'failed', error: `The embedding consumer ${input.consumer} is not registered in this worker.` },
    };
  const items = await consumer.pending(em, input.tenant, input.identity, {
    afterKey: input.afterKey,
    limit: input.batchSize,
  });
  if (items.length === 0) return { items: 0, lastKey: input.afterKey };
  const lastKey = items[items.length - 1]!.key;
  const target = await resolveEmbeddings(em, config, input.tenant);
  if (!target)
    return {
      items: items.length,
      lastKey,
      stop: { status: 'failed', error: 'The embedding provider of the saved identity is no longer configured.' },
    };
  const vectors: Array<{ key: string; vector: number[] }> = [];
  let failed = 0;
  let overWindow = 0;
  try {
    const r = await target.embed(items.map((i) => i.text));
    overWindow = r.windowWarning?.over ?? 0;
    items.forEach((item, n) => vectors.push({ key: item.key, vector: r.vectors[n]! }));
  } catch (err) {
    if (!(err instanceof LlmError) || err.retryable) throw err;
    if (!ITEM_FAILURES.has(err.failure.kind))
      return { items: items.length, lastKey, stop: { status: 'failed', error: err.failure.message } };
    // One text spoiled the batch: embed them one at a time, counting the ones the provider refuses.
    for (const item of items) {
      try {
        const r = await target.embed([item.text]);
        overWindow += r.windowWarning?.over ?? 0;
        vectors.push({ key: item.key, vector: r.vectors[0]! });
      } catch (one) {
        if (!(one instanceof LlmError) || one.retryable) throw one;
        if (!ITEM_FAILURES.has(one.failure.kind))
          return { items: items.length, lastKey, stop: { status: 'failed', error: one.failure.message } };
        failed++;
      }
    }
  }
  await em.transactional(async (tx) => {
    if (vectors.length) await consumer.store(tx, input.tenant, input.identity, vectors);
    await sql(
      tx,
      `update embedding_reindex_runs set done = done + ?, failed = failed + ?, over_window = over_window + ?,
           updated_at = now() where tenant = ? and run_id = ? and status = 'running'`,
      [vectors.length, failed, overWindow, input.tenant, input.runId],
    );
  });
  return { items: items.length, lastKey };
}

/** Records how many consumers are finished (idempotent: a retry writes the same number). */
export async function reindexConsumerDone(
  em: EntityManager,
  input: { tenant: string; runId: string; consumersDone: number },
): Promise<void> {
  await sql(
    em,
    `update embedding_reindex_runs set consumers_done = greatest(consumers_done, ?), updated_at = now()
         where tenant = ? and run_id = ? and status = 'running'`,
    [input.consumersDone, input.tenant, input.runId],
  );
}

/** Ends the run (only while it is running, so a retried finish or a superseded run changes nothing). */
export async function finishReindex(
  em: EntityManager,
  input: { tenant: string; runId: string; status: Exclude<ReindexStatus, 'running'>; error?: string },
): Promise<void> {
  await sql(
    em,
    `update embedding_reindex_runs set status = ?, error = ?, finished_at = now(), updated_at = now()
         where tenant = ? and run_id = ? and status = 'running'`,
    [input.status, input.error ?? null, input.tenant, input.runId],
  );
}
