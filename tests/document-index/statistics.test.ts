/**
 * The planner's statistics of a growing index (shared/document-index/statistics.ts): a rechunk's copy refreshes
 * them as its temporary index passes each refresh point, the swap refreshes them for the new index, and the
 * ingestion checkpoint refreshes the documents' too; a table another session holds is skipped, not waited for.
 * Counted by `pg_stat_user_tables.analyze_count` (manual ANALYZEs only: autovacuum's are counted apart).
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type AppConfig } from '../../shared/config.js';
import { initOrm } from '../../shared/db/orm.js';
import { sql } from '../../shared/db/sql.js';
import { currentEmbedder } from '../../shared/document-index/embedder.js';
import { compactionCheckpoint } from '../../shared/document-index/ingest.js';
import { beginRechunk, rechunkCopyBatch, swapRechunk } from '../../shared/document-index/rechunk.js';
import { STATISTICS_FIRST_AT, statisticsDue, type DocumentTable } from '../../shared/document-index/statistics.js';
import { createIndex, ingestDocuments } from '../../shared/document-index/store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
let orm: MikroORM;
let config: AppConfig;
const tenant = 'default';
const em = () => orm.em.fork() as EntityManager;
const NO_CHUNKING = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await initOrm({ clientUrl: db.url, poolMax: 3 });
  config = loadConfig({ DATABASE_URL: db.url });
  // No autovacuum on this database's document tables: one holding a table would make SKIP_LOCKED skip it, and
  // its ANALYZEs would refresh what these tests check was refreshed by the code.
  for (const table of ['doc_documents', 'doc_chunks', 'doc_embeddings'])
    await sql(em(), `alter table ${table} set (autovacuum_enabled = off)`);
}, 60_000);
afterAll(async () => {
  await orm?.close(true);
  await db?.drop();
});

/** Manual ANALYZEs of a table so far (written to the statistics at once by the ANALYZE itself). */
async function analyses(table: DocumentTable): Promise<number> {
  const rows = await sql<{ n: string }>(em(), 'select analyze_count as n from pg_stat_user_tables where relname = ?', [
    table,
  ]);
  return Number(rows[0]!.n);
}
const counts = async () => ({
  doc_documents: await analyses('doc_documents'),
  doc_chunks: await analyses('doc_chunks'),
  doc_embeddings: await analyses('doc_embeddings'),
});
/** The planner's estimate of an index's rows in a table. */
async function estimate(table: DocumentTable, indexId: string): Promise<number> {
  const rows = await sql<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
    em(),
    `explain (format json) select 1 from ${table} where index_id = '${indexId}'::uuid`,
  );
  return rows[0]!['QUERY PLAN'][0]!.Plan['Plan Rows'];
}

describe('statisticsDue', () => {
  it('is due where the count passes 256, then every fourth power: a handful of refreshes at any size', () => {
    expect(STATISTICS_FIRST_AT).toBe(256);
    expect(statisticsDue(0, 255)).toBe(false);
    expect(statisticsDue(0, 256)).toBe(true);
    expect(statisticsDue(200, 300)).toBe(true);
    expect(statisticsDue(256, 1023)).toBe(false);
    expect(statisticsDue(1000, 1100)).toBe(true);
    expect(statisticsDue(4096, 16383)).toBe(false);
    expect(statisticsDue(16000, 16384)).toBe(true);
    // Over a 90,000-document copy in batches of 100: five refreshes.
    let due = 0;
    for (let n = 0; n < 90_000; n += 100) if (statisticsDue(n, n + 100)) due++;
    expect(due).toBe(5);
  });
});

describe('planner statistics of a growing index', () => {
  it("a rechunk's copy refreshes its documents' at 256, and the swap the new index's in every table", async () => {
    const index = await createIndex(em(), tenant, 'grow', NO_CHUNKING);
    const embedder = await currentEmbedder(em(), config, tenant);
    await ingestDocuments(
      em(),
      index,
      Array.from({ length: 300 }, (_, i) => ({
        path: `doc${i}.txt`,
        kind: 'text' as const,
        content: `Note ${i}: tides.`,
      })),
      NO_CHUNKING,
      embedder,
    );
    const chunkConfig = { chunk_size: 4, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
    const begun = await beginRechunk(em(), { tenant, indexName: 'grow', runId: 'stats', config: chunkConfig });
    if ('missing' in begun) throw new Error('index missing');
    const batch = (afterId: string | null, copied: number | undefined) =>
      rechunkCopyBatch(em(), config, {
        tenant,
        sourceId: begun.sourceId,
        tempId: begun.tempId,
        afterId,
        limit: 200,
        chunkConfig,
        ...(copied === undefined ? {} : { copied }),
      });
    const before = await counts();
    // 0 → 200 documents: below the first refresh point, no ANALYZE.
    const first = await batch(null, 0);
    expect(first).toMatchObject({ docs: 200, done: false });
    expect(await counts()).toEqual(before);
    // 200 → 300: past 256, the documents' statistics are refreshed, and the planner sees the index's size.
    const second = await batch(first.lastId, 200);
    expect(second).toMatchObject({ docs: 100, done: true });
    expect(await counts()).toEqual({ ...before, doc_documents: before.doc_documents + 1 });
    expect(await estimate('doc_documents', begun.tempId)).toBeGreaterThanOrEqual(150);
    // A batch from a workflow of the version before (no count) never refreshes them.
    expect(await batch(second.lastId, undefined)).toMatchObject({ docs: 0, done: true });
    expect(await analyses('doc_documents')).toBe(before.doc_documents + 1);
    // The swap: every table's statistics know the new index (its chunks were invisible to them).
    const swap = await swapRechunk(em(), { tenant, indexName: 'grow', sourceId: begun.sourceId, tempId: begun.tempId });
    expect(swap).toMatchObject({ swapped: true, docs: 300 });
    expect(await counts()).toEqual({
      doc_documents: before.doc_documents + 2,
      doc_chunks: before.doc_chunks + 1,
      doc_embeddings: before.doc_embeddings + 1,
    });
    expect(await estimate('doc_chunks', begun.tempId)).toBeGreaterThanOrEqual(150);
    expect(await estimate('doc_embeddings', begun.tempId)).toBeGreaterThanOrEqual(150);
  });

  it("a batch's lookup by path (`path = any($2::text[])`) finds paths of any spelling: the same text again is unchanged", async () => {
    const index = await createIndex(em(), tenant, 'spellings', NO_CHUNKING);
    const embedder = await currentEmbedder(em(), config, tenant);
    const paths = ['a,b "c" {d} \\e ü.txt', 'NULL', '{}', "it's.md", 'plain.txt'];
    const docs = paths.map((path, i) => ({ path, kind: 'text' as const, content: `Text ${i} about harbours.` }));
    const first = await ingestDocuments(em(), index, docs, NO_CHUNKING, embedder);
    expect(first.map((r) => r.status)).toEqual(paths.map(() => 'added'));
    const again = await ingestDocuments(em(), index, docs, NO_CHUNKING, embedder);
    expect(again.map((r) => [r.filepath, r.status])).toEqual(paths.map((p) => [p, 'unchanged']));
    const changed = await ingestDocuments(
      em(),
      index,
      [{ ...docs[0]!, content: 'Other text.' }],
      NO_CHUNKING,
      embedder,
    );
    expect(changed.map((r) => r.status)).toEqual(['updated']);
  });

  it('the ingestion checkpoint refreshes all three, and skips a table another session holds instead of waiting', async () => {
    const before = await counts();
    await compactionCheckpoint(em(), config);
    const after = await counts();
    expect(after).toEqual({
      doc_documents: before.doc_documents + 1,
      doc_chunks: before.doc_chunks + 1,
      doc_embeddings: before.doc_embeddings + 1,
    });
    // A session holding doc_embeddings as an HNSW build does (CREATE INDEX CONCURRENTLY's lock, for minutes).
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table doc_embeddings in share update exclusive mode');
      await compactionCheckpoint(em(), config);
      expect(await counts()).toEqual({
        doc_documents: after.doc_documents + 1,
        doc_chunks: after.doc_chunks + 1,
        doc_embeddings: after.doc_embeddings,
      });
    } finally {
      await holder.query('rollback').catch(() => undefined);
      await holder.end();
    }
  });
});
