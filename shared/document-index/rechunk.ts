import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ChunkConfig } from './chunking.js';
import { currentEmbedder } from './embedder.js';
import { dropHnswIndexes, requestHnswBuild } from './hnsw.js';
import { analyzeIndexIds, statisticsDue } from './statistics.js';
import { ingestDocuments, lockIndex, sql, type IndexRow } from './store.js';

/**
 * RECHUNK's steps (workflow `rechunk/<tenant>/<index_name>`): every document of the index is rebuilt into a
 * temporary index (state `building`, invisible to every action) with the new parameters, the counts
 * are verified, and one transaction swaps it in (the old index's rows are dropped and the temporary
 * one takes its name), so a search sees either the old index or the new one, never a half-built one.
 * Each step is idempotent: a copy batch re-run after a crash finds the documents it already copied
 * (same path and content hash) and writes nothing for them.
 */

export const tempIndexName = (name: string, runId: string) => `__rechunk__/${name}/${runId}`;

export async function beginRechunk(
  em: EntityManager,
  input: { tenant: string; indexName: string; runId: string; config: ChunkConfig },
): Promise<{ sourceId: string; tempId: string; chunksBefore: number } | { missing: true }> {
  const source = (
    await sql<IndexRow>(em, `select * from doc_indexes where tenant = ? and name = ? and state = 'active'`, [
      input.tenant,
      input.indexName,
    ])
  )[0];
  if (!source) return { missing: true };
  const temp = tempIndexName(input.indexName, input.runId);
  await sql(
    em,
    `insert into doc_indexes (id, tenant, name, state, chunk_size, chunk_overlap, chunk_strategy, created_at)
       values (gen_random_uuid(), ?, ?, 'building', ?, ?, ?, ?) on conflict (tenant, name) do nothing`,
    [
      input.tenant,
      temp,
      input.config.chunk_size,
      input.config.chunk_overlap,
      input.config.chunk_strategy,
      source.created_at,
    ],
  );
  const tempRow = (
    await sql<{ id: string }>(em, 'select id from doc_indexes where tenant = ? and name = ?', [input.tenant, temp])
  )[0]!;
  const n = await sql<{ n: string }>(em, 'select count(*) as n from doc_chunks where index_id = ?', [source.id]);
  return { sourceId: source.id, tempId: tempRow.id, chunksBefore: Number(n[0]!.n) };
}

/**
 * Content a copy batch takes at most (besides its document count): documents are taken in id order while
 * the ones before stay under it, so a batch of large documents is smaller and one document always fits.
 */
export const RECHUNK_BATCH_BYTES = 1024 * 1024;

/**
 * Copies up to `limit` documents after the cursor (document id order), and at most about
 * `RECHUNK_BATCH_BYTES` of their content, into the temporary index. `done` says no document follows.
 */
export async function rechunkCopyBatch(
  em: EntityManager,
  config: AppConfig,
  input: {
    tenant: string;
    sourceId: string;
    tempId: string;
    afterId: string | null;
    limit: number;
    chunkConfig: ChunkConfig;
    /** The content budget (default `RECHUNK_BATCH_BYTES`; tests use a small one). */
    maxBytes?: number;
    /**
     * Documents this pass copied before the batch: where the temporary index grows past a refresh point
     * (`statisticsDue`), the batch refreshes the planner's statistics of its documents. Absent (a workflow
     * of the version before): never.
     */
    copied?: number;
  },
): Promise<{ docs: number; lastId: string | null; warnings: string[]; done: boolean }> {
  const temp = (await sql<IndexRow>(em, 'select * from doc_indexes where id = ?', [input.tempId]))[0];
  if (!temp) return { docs: 0, lastId: input.afterId, warnings: [], done: true };
  // The next `limit` documents by the (index_id, id) index, cut where the content before reaches the budget
  // (octet_length reads a stored value's size without decompressing it).
  const docs = await sql<{
    id: string;
    path: string;
    kind: 'file' | 'text';
    content: string;
    metadata: Record<string, unknown>;
    fetched: string;
  }>(
    em,
    `select id, path, kind, content, metadata, fetched from (
       select d.*, count(*) over () as fetched,
           sum(octet_length(d.content)) over (order by d.id rows unbounded preceding) - octet_length(d.content) as before
         from (select id, path, kind, content, metadata from doc_documents
             where index_id = ? and (?::uuid is null or id > ?::uuid) order by id limit ?) d
     ) x where before < ? order by id`,
    [input.sourceId, input.afterId, input.afterId, input.limit, input.maxBytes ?? RECHUNK_BATCH_BYTES],
  );
  const embedder = await currentEmbedder(em, config, input.tenant);
  const outcomes = await ingestDocuments(
    em,
    temp,
    docs.map((d) => ({ path: d.path, kind: d.kind, content: d.content, metadata: d.metadata })),
    input.chunkConfig,
    embedder,
  );
  const warnings = outcomes.flatMap((r) => r.warnings.map((w) => `${r.filepath}: ${w}`));
  // The next batches' lookups by path, planned for the index's size rather than for an index of one row.
  if (input.copied !== undefined && statisticsDue(input.copied, input.copied + docs.length))
    await analyzeIndexIds(em, ['doc_documents']);
  const fetched = Number(docs[0]?.fetched ?? 0);
  return {
    docs: docs.length,
    lastId: docs.length ? docs[docs.length - 1]!.id : input.afterId,
    warnings,
    done: docs.length === fetched && fetched < input.limit,
  };
}

/**
 * Verifies that the temporary index holds exactly the source's documents (same paths and content
 * hashes) and swaps in one transaction under the index lock: the source is retired (state `building`,
 * renamed, so invisible to every action at once) and the temporary index takes its name. A mismatch (a
 * document written to the source meanwhile) answers `verified: false` and changes nothing; the workflow
 * copies again. The retired index's rows are deleted after the commit (`dropBuildingIndex`), so the
 * swap's transaction costs the same at any size and the new index serves while the old rows go. A
 * retried activity finds the source retired and finishes deleting it.
 */
export async function swapRechunk(
  em: EntityManager,
  input: { tenant: string; indexName: string; sourceId: string; tempId: string },
  /** Given: the HNSW build the new index is due is recorded in the swap's transaction (`requestHnswBuild`). */
  hnswMinRows: number | null = null,
): Promise<{ swapped: boolean; docs: number; chunksAfter: number; reason?: string; vectorIndexBuild: boolean }> {
  const due = (tx: EntityManager) =>
    hnswMinRows === null ? Promise.resolve(false) : requestHnswBuild(tx, input.tempId, hnswMinRows);
  const outcome = await em.fork().transactional(async (tx) => {
    await lockIndex(tx, input.sourceId);
    const source = (await sql<IndexRow>(tx, 'select * from doc_indexes where id = ?', [input.sourceId]))[0];
    const temp = (await sql<IndexRow>(tx, 'select * from doc_indexes where id = ?', [input.tempId]))[0];
    if (source?.state !== 'active') {
      // Swapped already (a retried activity: the source is retired or gone) or deleted meanwhile.
      if (temp?.state === 'active' && temp.name === input.indexName)
        return { swapped: true, ...(await counts(tx)), vectorIndexBuild: await due(tx) };
      return { swapped: false, docs: 0, chunksAfter: 0, reason: 'index_deleted', vectorIndexBuild: false };
    }
    const diff = await sql<{ n: string }>(
      tx,
      `select count(*) as n from (
         (select path, content_hash from doc_documents where index_id = ? except select path, content_hash from doc_documents where index_id = ?)
         union all
         (select path, content_hash from doc_documents where index_id = ? except select path, content_hash from doc_documents where index_id = ?)
       ) x`,
      [input.sourceId, input.tempId, input.tempId, input.sourceId],
    );
    if (Number(diff[0]!.n) > 0)
      return { swapped: false, docs: 0, chunksAfter: 0, reason: 'documents_changed', vectorIndexBuild: false };
    await sql(tx, `update doc_indexes set state = 'building', name = ? where id = ?`, [
      retiredIndexName(input.sourceId),
      input.sourceId,
    ]);
    // No process has cached the building index (it was invisible): a build log written before the log
    // skipped building indexes (migration 13) is not needed, nor the source's now.
    await sql(tx, 'delete from doc_vector_log where index_id in (?, ?)', [input.sourceId, input.tempId]);
    await sql(tx, 'update doc_indexes set vector_log_floor = vector_generation where id = ?', [input.tempId]);
    await sql(
      tx,
      `update doc_indexes set name = ?, state = 'active', managed_source_id = ?, adopted_at = ? where id = ?`,
      [input.indexName, source.managed_source_id, source.adopted_at, input.tempId],
    );
    return { swapped: true, ...(await counts(tx)), vectorIndexBuild: await due(tx) };
  });
  if (outcome.swapped) {
    // The new index serves now: its searches planned for its rows (its id was unknown to the statistics), before
    // the retired index's rows are deleted (the longest step; autovacuum then counts the deletion).
    await analyzeIndexIds(em);
    await dropBuildingIndex(em, input.sourceId);
  }
  return outcome;

  async function counts(tx: EntityManager) {
    const n = await sql<{ d: string; c: string }>(
      tx,
      'select (select count(*) from doc_documents where index_id = ?) as d, (select count(*) from doc_chunks where index_id = ?) as c',
      [input.tempId, input.tempId],
    );
    return { docs: Number(n[0]!.d), chunksAfter: Number(n[0]!.c) };
  }
}

/** The name a rechunk's replaced index carries from the swap until its rows are deleted (unique per index). */
export const retiredIndexName = (indexId: string) => `__rechunk__/retired/${indexId}`;

/** Drops the temporary index of a failed or abandoned rechunk (the original keeps serving). */
export async function dropRechunkTemp(em: EntityManager, input: { tempId: string }): Promise<void> {
  await dropBuildingIndex(em, input.tempId);
}

/**
 * Deletes an index in state `building` (a rechunk's temporary index, or the index a swap retired) with its
 * documents, chunks and vectors; an active index is left alone. Set-based: the vectors first, by index
 * (no change-log rows: the index is not active), then the chunks (each one's cascade to its vectors finds
 * none), then the documents with the index row. Each statement commits alone, so a retry after a timeout
 * continues where the last one ended.
 */
export async function dropBuildingIndex(em: EntityManager, indexId: string): Promise<void> {
  const building = `exists (select 1 from doc_indexes where id = ? and state = 'building')`;
  const state = await sql<{ state: string }>(em, 'select state from doc_indexes where id = ?', [indexId]);
  // Its HNSW index (pgvector) first: the rows deleted next are then in no index that must skip them. Not
  // waited for while another build or drop runs (minutes): that one's holder drops it once the row is gone.
  if (state[0]?.state === 'building') await dropHnswIndexes(em, indexId, false);
  await sql(em, `delete from doc_embeddings where index_id = ? and ${building}`, [indexId, indexId]);
  await sql(em, `delete from doc_chunks where index_id = ? and ${building}`, [indexId, indexId]);
  await sql(em, `delete from doc_indexes where id = ? and state = 'building'`, [indexId]);
}
