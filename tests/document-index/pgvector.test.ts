/**
 * The pgvector path against a PostgreSQL that has the extension: detection selects it, its HNSW
 * ranking gives the same top results as the exact cached scan on a fixed corpus, and a write is seen
 * by the next search. The suite's embedded PostgreSQL cannot load pgvector, so this file starts its own
 * throwaway cluster from the `pgserver` wheel's PostgreSQL 16 + pgvector 0.6.2 binaries
 * (scripts/lib/pgvector-postgres.ts; only this file pays for it), unless `PLATFORM_TEST_PGVECTOR_URL`
 * names the maintenance database of a server that has pgvector (e.g. `docker run -e POSTGRES_PASSWORD=pw
 * -p 5433:5432 pgvector/pgvector:pg16`, then `PLATFORM_TEST_PGVECTOR_URL=postgres://postgres:pw@127.0.0.1:5433/postgres`).
 */
import { randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgvectorPostgres, type ThrowawayPostgres } from '../../scripts/lib/pgvector-postgres.js';
import { initOrm, migrate } from '../../shared/db/orm.js';
import { LOCAL_1536, LOCAL_384 } from '../../shared/db/migrations/Migration20261130010000LocalHashing1536.js';
import { collectionOf, type Embedder } from '../../shared/document-index/embedder.js';
import { LOCAL_EMBEDDING_IDENTITY, localEmbed } from '../../shared/document-index/local-embedding.js';
import { loadConfig } from '../../shared/config.js';
import {
  buildHnswIndexes,
  buildHnswIndexesOf,
  dropHnswIndexes,
  requestHnswBuild,
  hnswIndexName,
  hnswPredicate,
} from '../../shared/document-index/hnsw.js';
import { beginRechunk, rechunkCopyBatch, swapRechunk } from '../../shared/document-index/rechunk.js';
import { hybridSearch } from '../../shared/document-index/search.js';
import { createIndex, ingestDocument, ingestDocuments, sql, type IndexRow } from '../../shared/document-index/store.js';
import { nativeVectorType } from '../../shared/document-index/native-vector-writer.js';
import { waitFor } from '../helpers/worker-env.js';
import { detectVectorBackend, ExactVectorBackend, type VectorBackend } from '../../shared/document-index/vectors.js';

const TENANT = 'pgv';
const NO_CHUNKING = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };
const embedder: Embedder = {
  identity: LOCAL_EMBEDDING_IDENTITY,
  collection: collectionOf(LOCAL_EMBEDDING_IDENTITY),
  embed: (texts) => Promise.resolve({ vectors: texts.map(localEmbed), warnings: [] }),
};
const CORPUS = [
  'Nightly backups run at two in the morning and are kept for thirty days.',
  'Restore a backup with the restore command from the operations handbook.',
  'Encryption keys are rotated every quarter; rotation re-seals every stored secret.',
  'The enterprise tier adds premium support and a dedicated account manager.',
  'Employees receive twenty-five paid holidays each year; unused days expire in March.',
  'Expense reports must be filed within thirty days with receipts attached.',
  'Severity one incidents page the on-call engineer immediately.',
  'Production deployments happen on weekdays before four in the afternoon.',
  'Passwords need at least sixteen characters and are checked against breach lists.',
  'Laptops are replaced every three years by the IT department.',
  'Backup drills restore last night’s backup into a scratch database every month.',
  'Customer data is deleted ninety days after a contract ends.',
];
const QUERIES = [
  'restore a backup',
  'encryption key rotation',
  'paid holidays',
  'on-call incidents',
  'password length',
  'customer data deletion',
];

describe('pgvector backend', () => {
  let adminUrl: string;
  let server: ThrowawayPostgres | undefined;
  let orm: MikroORM;
  let dbName: string;
  let index: IndexRow;
  let pgv: VectorBackend;
  const em = () => orm.em.fork() as EntityManager;
  /** A text document added to the suite's index `kb`. */
  const addText = (path: string, content: string) => addTo(index, path, content);
  /** A connection of its own to the suite's database. */
  const connect = async () => {
    const c = new pg.Client({ connectionString: adminUrl.replace(/\/[^/]*$/, `/${dbName}`) });
    await c.connect();
    return c;
  };
  /** The HNSW index of `target`'s collection: `[valid]`, or `[]` when there is none. */
  const hnswOf = async (target: IndexRow) =>
    (
      await sql<{ valid: boolean }>(
        em(),
        `select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid where c.relname = ?`,
        [hnswIndexName(target.id, embedder.collection)],
      )
    ).map((r) => r.valid);
  /** A text document added to `target`. */
  const addTo = (target: IndexRow, path: string, content: string) =>
    ingestDocument(em(), target, { path, kind: 'text', content }, NO_CHUNKING, embedder);

  beforeAll(async () => {
    const configured = process.env.PLATFORM_TEST_PGVECTOR_URL;
    if (configured) adminUrl = configured;
    else {
      server = await startPgvectorPostgres((line) => process.stderr.write(`[pgvector] ${line}\n`));
      adminUrl = server.adminUrl;
    }
    dbName = `pgv_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    orm = await initOrm({ clientUrl: adminUrl.replace(/\/[^/]*$/, `/${dbName}`), poolMax: 4 });
    await migrate(orm);
    index = await createIndex(em(), TENANT, 'kb', NO_CHUNKING);
    for (const [i, text] of CORPUS.entries())
      await ingestDocument(em(), index, { path: `doc${i}`, kind: 'text', content: text }, NO_CHUNKING, embedder);
    // These cases are about PostgreSQL's ranking: HNSW only (the in-process cache has its own case below).
    pgv = await detectVectorBackend(em(), 1024 * 1024, undefined, true);
  }, 120_000);
  afterAll(async () => {
    await orm?.close();
    if (server) return server.stop();
    if (!adminUrl) return;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  });

  it('detects the extension; a search before the checkpoint answers exactly and builds nothing; the checkpoint builds the HNSW index', async () => {
    expect(pgv.kind).toBe('pgvector');
    const hnsw = () =>
      em()
        .getConnection()
        .execute(
          `select indexname, indexdef from pg_indexes where tablename = 'doc_embeddings' and indexdef like '%hnsw%'`,
        );
    // Before the ingestion checkpoint: no HNSW index, and a SEARCH does not build one (it would wait
    // minutes at scale); PostgreSQL's exact scan answers, the same ranking as the in-process exact path.
    const exact = new ExactVectorBackend(64 * 1024 * 1024);
    const early = await pgv.nearest(em(), TENANT, [index.id], embedder.collection, localEmbed('backup'), 5);
    const wanted = await exact.nearest(em(), TENANT, [index.id], embedder.collection, localEmbed('backup'), 5);
    expect(early.map((h) => h.id)).toEqual(wanted.map((h) => h.id));
    expect(early.length).toBeGreaterThan(0);
    expect(
      await hybridSearch(em(), TENANT, [{ id: index.id, name: 'kb' }], 'restore a backup', 5, embedder, pgv),
    ).not.toEqual([]);
    expect(await hnsw()).toHaveLength(0);
    // Below the minimum row count the checkpoint builds nothing either (the exact scan serves small indexes).
    expect(await buildHnswIndexes(em(), index.id, { memoryMb: 64, workers: 0, minRows: 1000 })).toEqual([
      expect.objectContaining({ collection: embedder.collection, outcome: 'small' }),
    ]);
    expect(await hnsw()).toHaveLength(0);
    // The checkpoint (the ingestion workflow's last activity) builds it over the stored rows, once.
    const built = await buildHnswIndexes(em(), index.id, { memoryMb: 128, workers: 2, minRows: 0 });
    expect(built).toEqual([expect.objectContaining({ collection: embedder.collection, outcome: 'built' })]);
    expect(built[0]!.rows).toBeGreaterThanOrEqual(CORPUS.length);
    expect(await buildHnswIndexes(em(), index.id, { memoryMb: 128, workers: 2, minRows: 0 })).toEqual([
      expect.objectContaining({ outcome: 'exists' }),
    ]);
    const idx = await hnsw();
    expect(idx).toHaveLength(1);
    expect(String(idx[0]!.indexname)).toBe(hnswIndexName(index.id, embedder.collection));
    expect(String(idx[0]!.indexdef)).toContain('vector_cosine_ops');
    expect(String(idx[0]!.indexdef)).toContain(index.id);
    // The index is over the native column (`emb`, set by the writer or the trigger equal to `vec`), partial
    // on the index and collection. The search's branch (its predicate spelled as literals, its ORDER BY the
    // index expression) can be answered by it (on 13 rows the planner would rather sort the btree's rows:
    // with sorting and sequential scans off only an ordered index scan remains).
    const plan = await em().transactional(async (tx) => {
      await tx.getConnection().execute('set local enable_seqscan = off', [], 'all', tx.getTransactionContext());
      await tx.getConnection().execute('set local enable_sort = off', [], 'all', tx.getTransactionContext());
      const q = `[${localEmbed('backup').join(',')}]`;
      return tx.getConnection().execute(
        `explain select chunk_id from doc_embeddings e where ${hnswPredicate(index.id, embedder.collection, 'e.')}
             order by emb::vector(1536) <=> ?::vector(1536) limit 5`,
        [q],
        'all',
        tx.getTransactionContext(),
      );
    });
    expect(plan.map((r) => String(r['QUERY PLAN'])).join('\n')).toMatch(/Index Scan using doc_hnsw_/);
    const late = await pgv.nearest(em(), TENANT, [index.id], embedder.collection, localEmbed('backup'), 5);
    expect(late.map((h) => h.id)).toEqual(early.map((h) => h.id));
  });

  it("builds a rechunk's HNSW index after its swap (bulk); meanwhile a search the cache cannot answer ranks among the word matches", async () => {
    const config = loadConfig({ DATABASE_URL: adminUrl, PLATFORM_DOCUMENT_INDEX_HNSW_MIN_ROWS: '0' });
    const source = await createIndex(em(), TENANT, 'kb-rechunk', NO_CHUNKING);
    for (const [i, text] of CORPUS.entries())
      await ingestDocument(em(), source, { path: `r${i}`, kind: 'text', content: text }, NO_CHUNKING, embedder);
    expect(await buildHnswIndexesOf(em(), config, { tenant: TENANT, indexName: 'kb-rechunk' })).toEqual([
      expect.objectContaining({ outcome: 'built' }),
    ]);
    const sourceName = hnswIndexName(source.id, embedder.collection);
    const named = async (name: string) =>
      (await em().getConnection().execute('select 1 from pg_indexes where indexname = ?', [name])).length;
    expect(await named(sourceName)).toBe(1);
    const begun = await beginRechunk(em(), {
      tenant: TENANT,
      indexName: 'kb-rechunk',
      runId: 'r1',
      config: { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' },
    });
    if ('missing' in begun) throw new Error('index missing');
    const copy = await rechunkCopyBatch(em(), config, {
      tenant: TENANT,
      sourceId: begun.sourceId,
      tempId: begun.tempId,
      afterId: null,
      limit: 100,
      chunkConfig: { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' },
    });
    expect(copy).toMatchObject({ docs: CORPUS.length, done: true });
    // The copy wrote its rows with no HNSW index of its own to insert into; the swap does not wait for one.
    const tempName = hnswIndexName(begun.tempId, embedder.collection);
    expect(await named(tempName)).toBe(0);
    // Too few rows for the threshold: no build is due, none recorded.
    expect(await requestHnswBuild(em(), begun.tempId, 10_000)).toBe(false);
    const requested = async () =>
      (
        await sql<{ at: Date | null }>(em(), 'select hnsw_build_requested_at as at from doc_indexes where id = ?', [
          begun.tempId,
        ])
      )[0]!.at;
    expect(await requested()).toBeNull();
    // The swap, asked to record the build the new index is due (as the rechunk asks): recorded in its transaction,
    // so the index never serves without it.
    const swap = await swapRechunk(
      em(),
      { tenant: TENANT, indexName: 'kb-rechunk', sourceId: begun.sourceId, tempId: begun.tempId },
      0,
    );
    expect(swap).toMatchObject({ swapped: true, vectorIndexBuild: true });
    expect(await requested()).not.toBeNull();
    // The replaced index's HNSW index went with its rows; the new one serves before its own is built.
    expect(await named(sourceName)).toBe(0);
    expect(await named(tempName)).toBe(0);
    // A process that cannot cache it (a 64-byte budget): until the build is done, such a search ranks the index
    // among the chunks matching a query word.
    const uncached = await detectVectorBackend(em(), 64);
    if (uncached.kind !== 'pgvector') throw new Error('pgvector expected');
    const search = (ids: Array<{ id: string; name: string }>) =>
      hybridSearch(em(), TENANT, ids, 'restore a backup', 10, embedder, uncached);
    const rechunked = { id: begun.tempId, name: 'kb-rechunk' };
    const awaiting = await search([rechunked]);
    expect(awaiting[0]?.filepath).toMatch(/^r(1|10)$/);
    expect(uncached.cache!.amongSearches).toBe(1);
    // With no build requested (an index too small for one), PostgreSQL's exact scan ranks it, to the same top hit.
    await sql(em(), 'update doc_indexes set hnsw_build_requested_at = null where id = ?', [begun.tempId]);
    expect((await search([rechunked]))[0]?.filepath).toBe(awaiting[0]?.filepath);
    expect(uncached.cache!.amongSearches).toBe(1);
    expect(await requestHnswBuild(em(), begun.tempId, 0)).toBe(true);
    // Beside an index with its HNSW index, only the awaiting one ranks among the word matches.
    await buildHnswIndexes(em(), index.id, { memoryMb: 128, workers: 0, minRows: 0 });
    const both = await search([rechunked, { id: index.id, name: 'kb' }]);
    expect(uncached.cache!.amongSearches).toBe(2);
    expect(new Set(both.map((h) => h.index_name))).toEqual(new Set(['kb-rechunk', 'kb']));
    expect(both.find((h) => h.index_name === 'kb')?.vector_rank).not.toBeNull();
    // The build after the swap (vectorIndexBuildWorkflow's activity) clears the request: PostgreSQL's HNSW scan ranks it.
    expect(await buildHnswIndexesOf(em(), config, { indexId: begun.tempId })).toEqual([
      expect.objectContaining({ outcome: 'built' }),
    ]);
    expect(await named(tempName)).toBe(1);
    expect(await requested()).toBeNull();
    expect((await search([rechunked]))[0]?.filepath).toBe(awaiting[0]?.filepath);
    expect(uncached.cache!.amongSearches).toBe(2);
    // Built already: no build is due again; a request left by a worker of the version before (which built without
    // clearing it) is not waited on.
    expect(await requestHnswBuild(em(), begun.tempId, 0)).toBe(false);
    await sql(em(), 'update doc_indexes set hnsw_build_requested_at = now() where id = ?', [begun.tempId]);
    expect(await uncached.awaitingHnsw(em(), [begun.tempId, index.id])).toEqual([]);
    await search([rechunked]);
    expect(uncached.cache!.amongSearches).toBe(2);
  });

  it('builds and drops HNSW indexes concurrently: writes and searches of every index go on meanwhile', async () => {
    const built = await createIndex(em(), TENANT, 'kb-concurrent', NO_CHUNKING);
    for (const [i, text] of CORPUS.entries())
      await ingestDocument(em(), built, { path: `c${i}`, kind: 'text', content: text }, NO_CHUNKING, embedder);
    const beside = await createIndex(em(), TENANT, 'kb-beside', NO_CHUNKING);
    // `writer` holds a write open (the lock every insert takes) until told; `probe` takes the locks a write
    // and a search take, giving up after 5 s: behind a queued SHARE or ACCESS EXCLUSIVE request they would wait.
    const writer = await connect();
    const probe = await connect();
    await probe.query(`set lock_timeout = '5s'`);
    const waiting = async (statement: string) =>
      (
        await probe.query(
          `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
             and query ilike $1`,
          [`${statement}%`],
        )
      ).rowCount === 1 || undefined;
    const locksTaken = async () => {
      await probe.query('begin');
      await probe.query('lock table doc_embeddings in row exclusive mode');
      await probe.query('lock table doc_embeddings in access share mode');
      await probe.query('rollback');
    };
    try {
      await writer.query('begin');
      await writer.query('lock table doc_embeddings in row exclusive mode');
      const build = buildHnswIndexes(em(), built.id, { memoryMb: 64, workers: 0, minRows: 0 });
      await waitFor('the build to wait for the open write', () => waiting('create index'));
      await locksTaken();
      // The product's own writes, to the index being built and beside it, and a search, while the build waits.
      await addTo(built, 'during', 'Lighthouse keepers log the lamp hours every evening.');
      await addTo(beside, 'beside', 'Lighthouse keepers log the lamp hours every evening.');
      const hits = await hybridSearch(
        em(),
        TENANT,
        [{ id: beside.id, name: 'kb-beside' }],
        'lamp hours',
        5,
        embedder,
        pgv,
      );
      expect(hits.map((h) => h.filepath)).toEqual(['beside']);
      expect(await waiting('create index')).toBe(true);
      await writer.query('commit');
      expect(await build).toEqual([expect.objectContaining({ outcome: 'built', rows: CORPUS.length })]);
      expect(await hnswOf(built)).toEqual([true]);
      // The row written while the build waited is in the index: PostgreSQL's HNSW scan (the only plan left with
      // sorting and sequential scans off) answers every row of the index.
      const answered = await em().transactional(async (tx) => {
        for (const setting of ['enable_seqscan = off', 'enable_sort = off', 'hnsw.ef_search = 100'])
          await sql(tx, `set local ${setting}`);
        const q = `[${localEmbed('lamp hours').join(',')}]`;
        const scan = `select chunk_id from doc_embeddings e where ${hnswPredicate(built.id, embedder.collection, 'e.')}
             order by emb::vector(1536) <=> ?::vector(1536) limit 50`;
        const plan = (await sql(tx, `explain ${scan}`, [q])).map((r) => String(r['QUERY PLAN'])).join('\n');
        return { plan, rows: (await sql(tx, scan, [q])).length };
      });
      expect(answered.plan).toMatch(/Index Scan using doc_hnsw_/);
      expect(answered.rows).toBe(CORPUS.length + 1);

      // The drop: it waits for the open write too, and writes and searches go on meanwhile.
      await writer.query('begin');
      await writer.query('lock table doc_embeddings in row exclusive mode');
      const drop = dropHnswIndexes(em(), built.id);
      await waitFor('the drop to wait for the open write', () => waiting('drop index'));
      await locksTaken();
      await addTo(beside, 'beside-2', 'Harbour pilots board ships at the outer buoy.');
      expect(await waiting('drop index')).toBe(true);
      await writer.query('commit');
      await drop;
      expect(await hnswOf(built)).toEqual([]);
    } finally {
      await writer.end();
      await probe.end();
    }
  });

  it('runs HNSW builds and drops one at a time (two at once would deadlock); a drop a request cannot wait for is left to the build', async () => {
    const corpusIndex = async (name: string) => {
      const target = await createIndex(em(), TENANT, name, NO_CHUNKING);
      await ingestDocuments(
        em(),
        target,
        CORPUS.map((content, i) => ({ path: `${name}-${i}`, kind: 'text' as const, content })),
        NO_CHUNKING,
        embedder,
      );
      return target;
    };
    const [first, second, dropped, deleted, unbuilt, other] = [
      await corpusIndex('kb-first'),
      await corpusIndex('kb-second'),
      await corpusIndex('kb-dropped'),
      await corpusIndex('kb-deleted'),
      await corpusIndex('kb-unbuilt'),
      await createIndex(em(), TENANT, 'kb-other', NO_CHUNKING),
    ];
    const settings = { memoryMb: 64, workers: 0, minRows: 0 };
    for (const target of [dropped, deleted])
      expect(await buildHnswIndexes(em(), target.id, settings)).toEqual([
        expect.objectContaining({ outcome: 'built' }),
      ]);
    const writer = await connect();
    try {
      // The first build waits for an open write; a second build and a drop come meanwhile.
      await writer.query('begin');
      await writer.query('lock table doc_embeddings in row exclusive mode');
      const firstBuild = buildHnswIndexes(em(), first.id, settings);
      await waitFor('the first build to wait for the open write', async () =>
        (
          await sql(
            em(),
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
               and query ilike 'create index concurrently%'`,
          )
        ).length === 1
          ? true
          : undefined,
      );
      // A second build and a drop come meanwhile: they wait for the lock the first build holds (without it they
      // would queue for the table's lock holding a snapshot, which the first build's last phase waits for).
      const secondBuild = buildHnswIndexes(em(), second.id, settings);
      const drop = dropHnswIndexes(em(), dropped.id);
      // A build whose activity is cancelled while it waits for the lock stops waiting.
      const cancel = new AbortController();
      const cancelled = buildHnswIndexes(em(), unbuilt.id, settings, cancel.signal).catch((err: unknown) => err);
      cancel.abort(new Error('activity cancelled'));
      expect(String(await cancelled)).toBe('Error: activity cancelled');
      expect(await hnswOf(unbuilt)).toEqual([]);
      // A DELETE_INDEX meanwhile: its rows and registry row go, and its HNSW index is left to the build.
      await sql(em(), 'delete from doc_embeddings where index_id = ?', [deleted.id]);
      await sql(em(), 'delete from doc_indexes where id = ?', [deleted.id]);
      expect(await dropHnswIndexes(em(), deleted.id, false)).toBe(false);
      expect(await hnswOf(deleted)).toEqual([true]);
      // Transactions begin and end (an ingestion elsewhere) before the write ends.
      await addTo(other, 'meanwhile', 'Lighthouse keepers log the lamp hours every evening.');
      await writer.query('commit');
      const settled = await Promise.allSettled([firstBuild, secondBuild, drop]);
      expect(settled.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok']);
      expect(await firstBuild).toEqual([expect.objectContaining({ outcome: 'built' })]);
      expect(await secondBuild).toEqual([expect.objectContaining({ outcome: 'built' })]);
      expect(await drop).toBe(true);
      expect([await hnswOf(first), await hnswOf(second), await hnswOf(dropped)]).toEqual([[true], [true], []]);
      // The deleted index's HNSW index went with the last build (it or the second ran last).
      expect(await hnswOf(deleted)).toEqual([]);
      // Nothing holds the lock now: a drop asked not to wait does its work.
      expect(await dropHnswIndexes(em(), second.id, false)).toBe(true);
      expect(await hnswOf(second)).toEqual([]);
      expect(await sql(em(), `select 1 from pg_locks where locktype = 'advisory'`)).toEqual([]);
      // A build's session settings do not stay with the pooled connection it used (a pool of one).
      const single = await initOrm({ clientUrl: adminUrl.replace(/\/[^/]*$/, `/${dbName}`), poolMax: 1 });
      try {
        const show = async () =>
          (await sql<{ v: string }>(single.em.fork(), 'select current_setting(?) as v', ['maintenance_work_mem']))[0]!
            .v;
        const before = await show();
        expect(before).not.toBe('300MB');
        expect(
          await buildHnswIndexes(single.em.fork() as EntityManager, second.id, { ...settings, memoryMb: 300 }),
        ).toEqual([expect.objectContaining({ outcome: 'built' })]);
        expect(await show()).toBe(before);
      } finally {
        await single.close();
      }
    } finally {
      await writer.end();
    }
  });

  it('drops an invalid HNSW index (a failed build) of a collection now below the build threshold; builds it again above', async () => {
    /** A build that fails part way, leaving its index invalid (here: the vectors cast to a width they do not have). */
    const failedBuild = (target: IndexRow) =>
      expect(
        em()
          .getConnection()
          .execute(
            `create index concurrently ${hnswIndexName(target.id, embedder.collection)} on doc_embeddings
               using hnsw ((emb::vector(3)) vector_cosine_ops) where ${hnswPredicate(target.id, embedder.collection)}`,
          ),
      ).rejects.toThrow(/dimensions/);
    const few = await createIndex(em(), TENANT, 'kb-few', NO_CHUNKING);
    for (const [i, text] of CORPUS.slice(0, 3).entries()) await addTo(few, `f${i}`, text);
    await failedBuild(few);
    expect(await hnswOf(few)).toEqual([false]);
    expect(await buildHnswIndexes(em(), few.id, { memoryMb: 64, workers: 0, minRows: 1000 })).toEqual([
      { collection: embedder.collection, rows: 3, outcome: 'small', ms: 0 },
    ]);
    expect(await hnswOf(few)).toEqual([]);
    // Above the threshold the same failed build is dropped and built again, valid.
    await failedBuild(few);
    const [rebuilt] = await buildHnswIndexes(em(), few.id, { memoryMb: 64, workers: 0, minRows: 0 });
    expect(rebuilt).toMatchObject({ rows: 3, outcome: 'built' });
    expect(await hnswOf(few)).toEqual([true]);
    expect(await dropHnswIndexes(em(), few.id)).toBe(true);
    // And when the collection has no vectors left at all (it is no longer listed among the index's collections).
    await failedBuild(few);
    await em().getConnection().execute('delete from doc_embeddings where index_id = ?', [few.id]);
    expect(await buildHnswIndexes(em(), few.id, { memoryMb: 64, workers: 0, minRows: 0 })).toEqual([]);
    expect(await hnswOf(few)).toEqual([]);
  });

  it('ranks 50 candidates through the HNSW index (its candidate list raised above the default 40), in a transaction too', async () => {
    const many = await createIndex(em(), TENANT, 'kb-many', NO_CHUNKING);
    await ingestDocuments(
      em(),
      many,
      Array.from({ length: 70 }, (_, i) => ({
        path: `m${i}`,
        kind: 'text' as const,
        content: `Harbour crane ${i} lifts containers; shift ${i % 7} logs the harbour tonnage.`,
      })),
      NO_CHUNKING,
      embedder,
    );
    expect(await buildHnswIndexes(em(), many.id, { memoryMb: 64, workers: 0, minRows: 0 })).toEqual([
      expect.objectContaining({ outcome: 'built', rows: 70 }),
    ]);
    const v = localEmbed('harbour crane tonnage');
    // On 70 rows the planner would sort an exact scan's rows: with sorting and sequential scans off (a
    // database setting, for the fresh connections of a second pool) only the HNSW index's ordered scan remains,
    // which answers at most `hnsw.ef_search` rows (40 by default).
    await em().getConnection().execute(`alter database ${dbName} set enable_sort = off`);
    await em().getConnection().execute(`alter database ${dbName} set enable_seqscan = off`);
    const forced = await initOrm({ clientUrl: adminUrl.replace(/\/[^/]*$/, `/${dbName}`), poolMax: 2 });
    try {
      const fem = () => forced.em.fork() as EntityManager;
      const plan = await sql(
        fem(),
        `explain select chunk_id from doc_embeddings e where ${hnswPredicate(many.id, embedder.collection, 'e.')}
           order by emb::vector(1536) <=> ?::vector(1536) limit 50`,
        [`[${v.join(',')}]`],
      );
      expect(plan.map((r) => String(r['QUERY PLAN'])).join('\n')).toMatch(/Index Scan using doc_hnsw_/);
      // Session setting, once per pooled connection, then reused.
      for (let i = 0; i < 4; i++)
        expect(await pgv.nearest(fem(), TENANT, [many.id], embedder.collection, v, 50)).toHaveLength(50);
      // In a caller's transaction: set for the transaction.
      const inTx = await fem().transactional((tx) => pgv.nearest(tx, TENANT, [many.id], embedder.collection, v, 50));
      expect(inTx).toHaveLength(50);
      // Two indexes searched at once: each ranked by its own index, the best 50 of both kept, closest first.
      const both = await pgv.nearest(fem(), TENANT, [many.id, index.id], embedder.collection, v, 50);
      expect(both).toHaveLength(50);
      expect(both.map((h) => h.sim)).toEqual([...both.map((h) => h.sim)].sort((a, b) => b - a));
    } finally {
      await forced.close();
      await em().getConnection().execute(`alter database ${dbName} reset all`);
    }
  });

  it('keeps the native vector column equal to the stored bytes on every write (migration 56, trigger)', async () => {
    const count = async (where: string) =>
      Number((await em().getConnection().execute(`select count(*) as n from doc_embeddings where ${where}`))[0]!.n);
    expect(await count('true')).toBeGreaterThanOrEqual(CORPUS.length);
    expect(await count('emb is null or emb::real[] <> doc_vec_floats(vec)')).toBe(0);
    await em().getConnection().execute(`update doc_embeddings set vec = vec where index_id = ?`, [index.id]);
    expect(await count('emb is null or emb::real[] <> doc_vec_floats(vec)')).toBe(0);
  });

  it('has ingestion write the native column itself, equal to the stored bytes (no decode by the trigger)', async () => {
    const exec = (text: string, params: unknown[] = []) => em().getConnection().execute(text, params);
    expect(await nativeVectorType(em())).toMatchObject({ name: 'vector' });
    // With the decoding trigger off, only the writer can have set `emb`.
    await exec('alter table doc_embeddings disable trigger doc_embeddings_emb');
    let added;
    try {
      added = await ingestDocuments(
        em(),
        index,
        [
          {
            path: 'native-a',
            kind: 'text',
            content: 'Quarterly reports are archived for seven years. Audits read them.',
          },
          { path: 'native-b', kind: 'text', content: 'The archive room opens on Tuesdays.' },
        ],
        { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' },
        embedder,
      );
    } finally {
      await exec('alter table doc_embeddings enable trigger doc_embeddings_emb');
    }
    const rows = await exec(
      `select e.emb is not null as set, e.emb::real[] = doc_vec_floats(e.vec) as equal, vector_dims(e.emb) as dims
         from doc_embeddings e join doc_chunks c on c.id = e.chunk_id where c.document_id = any(?::uuid[])`,
      [`{${added.map((a) => a.file_id).join(',')}}`],
    );
    expect(rows.length).toBe(added.reduce((n, a) => n + a.chunks, 0));
    expect(rows.length).toBeGreaterThan(2);
    for (const r of rows) expect(r).toEqual({ set: true, equal: true, dims: 1536 });
    // A row written by another path (vec alone, as the re-embedding consumer writes) still gets emb from the trigger.
    await exec(
      `insert into doc_embeddings (collection, chunk_id, tenant, index_id, vec)
         select 'other_collection', chunk_id, tenant, index_id, vec from doc_embeddings where chunk_id in (
           select c.id from doc_chunks c where c.document_id = ?::uuid)`,
      [added[0]!.file_id],
    );
    const other = await exec(
      `select bool_and(emb is not null and emb::real[] = doc_vec_floats(vec)) as ok, count(*) as n
         from doc_embeddings where collection = 'other_collection'`,
    );
    expect(other[0]).toMatchObject({ ok: true });
    expect(Number(other[0]!.n)).toBeGreaterThan(0);
    await exec(`delete from doc_embeddings where collection = 'other_collection'`);
  });

  it('stores a sparse vector compressed in its row and a dense one out of line, both equal to the stored bytes', async () => {
    const exec = (text: string, params: unknown[] = []) => em().getConnection().execute(text, params);
    const [column] = await exec(
      `select attstorage as storage from pg_attribute where attrelid = 'doc_embeddings'::regclass and attname = 'emb'`,
    );
    expect(column).toEqual({ storage: 'x' }); // extended: compressed where it compresses (pgvector declares 'e')
    // A dense model's vectors (random numbers, nothing to compress), in an index of their own.
    const dense: Embedder = {
      ...embedder,
      embed: (texts) =>
        Promise.resolve({
          vectors: texts.map(() => Array.from({ length: 1536 }, () => Math.random() * 2 - 1)),
          warnings: [],
        }),
    };
    const denseIndex = await createIndex(em(), TENANT, 'dense', NO_CHUNKING);
    await ingestDocument(em(), denseIndex, { path: 'd', kind: 'text', content: 'Dense numbers.' }, NO_CHUNKING, dense);
    const sizes = await exec(
      `select e.index_id = ?::uuid as dense, pg_column_size(e.emb) as bytes, e.emb::real[] = doc_vec_floats(e.vec) as equal
         from doc_embeddings e where e.index_id = any(?::uuid[]) and e.collection = ?`,
      [denseIndex.id, `{${index.id},${denseIndex.id}}`, embedder.collection],
    );
    const [sparse, denseRows] = [sizes.filter((r) => !r.dense), sizes.filter((r) => r.dense)];
    expect(sparse.length).toBeGreaterThanOrEqual(CORPUS.length);
    expect(denseRows.length).toBe(1);
    // 1,536 float4s take 6,152 bytes uncompressed: a local hashing vector (a few dozen non-zero) compresses to
    // a few hundred, a dense one not at all.
    for (const r of sparse) {
      expect(r.equal).toBe(true);
      expect(Number(r.bytes)).toBeLessThan(1000);
    }
    expect(denseRows[0]!.equal).toBe(true);
    expect(Number(denseRows[0]!.bytes)).toBeGreaterThan(6000);
    await exec('delete from doc_indexes where id = ?', [denseIndex.id]);
  });

  it('gives the same top results as the exact scan on a fixed corpus', async () => {
    const exact = new ExactVectorBackend(64 * 1024 * 1024);
    for (const q of QUERIES) {
      const v = localEmbed(q);
      const a = await pgv.nearest(em(), TENANT, [index.id], embedder.collection, v, 5);
      const b = await exact.nearest(em(), TENANT, [index.id], embedder.collection, v, 5);
      expect(
        a.map((h) => h.id),
        q,
      ).toEqual(b.map((h) => h.id));
      a.forEach((h, i) => expect(h.sim).toBeCloseTo(b[i]!.sim, 4));
      const ha = await hybridSearch(em(), TENANT, [{ id: index.id, name: 'kb' }], q, 5, embedder, pgv);
      const hb = await hybridSearch(em(), TENANT, [{ id: index.id, name: 'kb' }], q, 5, embedder, exact);
      expect(
        ha.map((h) => h.filepath),
        q,
      ).toEqual(hb.map((h) => h.filepath));
      expect(ha[0]).toBeDefined();
    }
  });

  it('ranks an index that fits the vector cache by the exact in-process scan once cached (HNSW before, and for an index too large)', async () => {
    const routed = await detectVectorBackend(em(), 64 * 1024 * 1024);
    if (routed.kind !== 'pgvector') throw new Error('pgvector expected');
    expect((pgv as typeof routed).cache).toBeNull();
    const cache = routed.cache!;
    const exact = new ExactVectorBackend(64 * 1024 * 1024);
    await exact.nearest(em(), TENANT, [index.id], embedder.collection, [1], 1); // cached: its searches scan all
    const search = (b: VectorBackend, q: string) =>
      hybridSearch(em(), TENANT, [{ id: index.id, name: 'kb' }], q, 5, embedder, b);
    // The first search: PostgreSQL ranks (HNSW or its exact scan), the index's vectors load meanwhile.
    expect((await search(routed, 'restore a backup'))[0]).toBeDefined();
    await cache.settled();
    expect(cache.stats.loads).toBe(1);
    expect(cache.usage().sets.map((s) => s.key)).toEqual([`${index.id}|${embedder.collection}`]);
    // Then the cache answers: the exact path's results, rows and snippets included.
    for (const q of QUERIES) expect(await search(routed, q), q).toEqual(await search(exact, q));
    const added = await addText('heron', 'A grey heron waits by the backup pond.');
    const seen = await search(routed, 'grey heron pond');
    expect(seen[0]).toMatchObject({ file_id: added.file_id, lexical_rank: 1, vector_rank: 1 });
    await cache.settled(); // the answer's changes are written to the cached set after the search answers
    expect(cache.stats).toMatchObject({ loads: 1, catchUps: 1 });
    await sql(em(), 'delete from doc_documents where id = ?', [added.file_id]);

    // An index estimated larger than the budget (row count and a sample of its vectors): never loaded,
    // each search ranked by PostgreSQL.
    const small = await detectVectorBackend(em(), 64);
    if (small.kind !== 'pgvector') throw new Error('pgvector expected');
    for (let i = 0; i < 3; i++) {
      expect((await search(small, 'restore a backup'))[0]).toBeDefined();
      await small.cache!.settled();
    }
    expect(small.cache!.stats.loads).toBe(0);
    expect(small.cache!.usage().sets).toEqual([]);
  });

  it('sees a write at the next search', async () => {
    const v = localEmbed('zebra crossing near the school');
    const before = await pgv.nearest(em(), TENANT, [index.id], embedder.collection, v, 5);
    const added = await addText('zebra', 'A zebra crossing near the school.');
    const chunk = await em()
      .getConnection()
      .execute('select id from doc_chunks where document_id = ?', [added.file_id]);
    const after = await pgv.nearest(em(), TENANT, [index.id], embedder.collection, v, 5);
    expect(before.map((h) => h.id)).not.toContain(chunk[0]!.id);
    expect(after[0]!.id).toBe(chunk[0]!.id);
    expect(after[0]!.sim).toBeCloseTo(1, 4);
  });
  it('moves the local vectors between embedder widths (migration): emb equal to vec, the HNSW index with them', async () => {
    const migrator = orm.getMigrator();
    const names = [hnswIndexName(index.id, LOCAL_384), hnswIndexName(index.id, LOCAL_1536)];
    const state = async () => ({
      rows: await sql<{ collection: string; n: number; equal: boolean; dims: number }>(
        em(),
        `select collection, count(*)::int as n, bool_and(emb is not null and emb::real[] = doc_vec_floats(vec)) as equal,
            min(vector_dims(emb)) as dims
           from doc_embeddings where index_id = ? and collection like 'local%' group by 1`,
        [index.id],
      ),
      hnsw: (
        await sql<{ name: string }>(
          em(),
          `select indexname as name from pg_indexes where tablename = 'doc_embeddings' and indexname = any(?::text[])`,
          [`{${names.join(',')}}`],
        )
      ).map((r) => r.name),
    });
    await buildHnswIndexes(em(), index.id, { memoryMb: 128, workers: 0, minRows: 0 });
    const before = await state();
    const n = before.rows[0]!.n;
    expect(before).toEqual({ rows: [{ collection: LOCAL_1536, n, equal: true, dims: 1536 }], hnsw: [names[1]] });
    // A build or drop elsewhere holds the HNSW DDL lock: the migration waits for it before touching the table,
    // between statements (no lock on doc_embeddings, no statement open meanwhile).
    const holder = await connect();
    let down: Promise<{ name: string }[]> | undefined;
    try {
      await holder.query(`select pg_advisory_lock(hashtextextended('doc_embeddings hnsw ddl', 32))`);
      const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      down = migrator.down('Migration20261130010000LocalHashing1536');
      // Between tries: idle in its transaction, no statement (and so no snapshot) held open.
      const waiting = await waitFor('the migration to try the HNSW DDL lock', async () => {
        const [row] = await sql<{ pid: number }>(
          em(),
          `select pid from pg_stat_activity
             where datname = current_database() and state = 'idle in transaction' and pid not in (pg_backend_pid(), ?)
               and query like 'select pg_try_advisory_xact_lock%'`,
          [holderPid],
        );
        return row;
      });
      expect(
        await sql(em(), `select mode from pg_locks where pid = ? and relation = 'doc_embeddings'::regclass`, [
          waiting.pid,
        ]),
      ).toEqual([]);
    } finally {
      await holder.end();
    }
    expect((await down)?.map((m) => m.name)).toEqual(['Migration20261130010000LocalHashing1536']);
    try {
      expect(await state()).toEqual({ rows: [{ collection: LOCAL_384, n, equal: true, dims: 384 }], hnsw: [names[0]] });
    } finally {
      await migrator.up();
    }
    expect(await state()).toEqual(before);
    const hits = await pgv.nearest(em(), TENANT, [index.id], embedder.collection, localEmbed('restore a backup'), 5);
    expect(hits.length).toBeGreaterThan(0);
  });
});
