/**
 * The vector half of SEARCH without pgvector: binary float4 storage, the in-process vector cache and
 * its generation counter (a search after any committed write sees that write: ingestion, document
 * deletion, re-embedding, the rechunk swap, a write from another connection), the exact ranking equal
 * to a brute-force cosine over the stored vectors, and the backend detection falling back to the exact
 * path on the embedded PostgreSQL (which has no pgvector).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentEmbedder, cosine, type Embedder } from '../../shared/document-index/embedder.js';
import { documentIndexConsumer } from '../../shared/document-index/consumer.js';
import {
  beginRechunk,
  dropBuildingIndex,
  rechunkCopyBatch,
  retiredIndexName,
  swapRechunk,
} from '../../shared/document-index/rechunk.js';
import { createIndex, ingestDocument, sql, type IndexRow } from '../../shared/document-index/store.js';
import { type ChunkParams, resolveChunkConfig } from '../../shared/document-index/chunking.js';
import { ingestFiles } from '../../shared/document-index/ingest.js';
import {
  decodeVector,
  detectVectorBackend,
  encodeVector,
  ExactVectorBackend,
  vectorBackend,
} from '../../shared/document-index/vectors.js';
import { realArrayToBytes } from '../../shared/db/migrations/Migration20261125050000DocVectorsBinary.js';
import { LOCAL_EMBEDDING_DIMENSIONS, localEmbed, localEmbedAt } from '../../shared/document-index/local-embedding.js';
import { LOCAL_1536, LOCAL_384 } from '../../shared/db/migrations/Migration20261130010000LocalHashing1536.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let embedder: Embedder;
let tenant: string;
const em = (): EntityManager => stack.api.deps.orm.em.fork() as EntityManager;
const NO_CHUNKING = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };

const tool = (args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { body: { tool: '_document_index', arguments: args } });
const ok = async (args: Record<string, unknown>) => {
  const r = await tool(args);
  expect(r.status, r.text).toBe(200);
  return r.body.data.result;
};

beforeAll(async () => {
  stack = await startStack();
  tenant = stack.config.auth.deploymentTenant;
  embedder = await currentEmbedder(em(), stack.config, tenant);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

async function add(index: IndexRow, path: string, content: string) {
  return ingestDocument(em(), index, { path, kind: 'text', content }, NO_CHUNKING, embedder);
}
/** This test database's sessions waiting for a lock (other test files' databases share the server). */
const sessionsWaitingOnLocks = async () =>
  (
    await query<{ n: number }>(
      stack.db.url,
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    )
  )[0]!.n;
/**
 * ADD_TEXT through the API while a transaction holds the index's lock: once the request waits for the
 * lock (found in pg_stat_activity, not by timing), `change` runs in that transaction, which then commits.
 */
async function addTextBehindLock(index: IndexRow, text: string, change: (holder: pg.Client) => Promise<void>) {
  const holder = new pg.Client({ connectionString: stack.db.url });
  await holder.connect();
  try {
    await holder.query('begin');
    await holder.query('select pg_advisory_xact_lock(hashtextextended($1, 13))', [index.id]);
    const writing = tool({ action: 'ADD_TEXT', index_name: index.name, text, metadata: { filepath: 'late.md' } });
    await expect.poll(sessionsWaitingOnLocks).toBe(1);
    await change(holder);
    await holder.query('commit');
    return await writing;
  } finally {
    await holder.end();
  }
}
const chunkIds = async (documentId: string) =>
  (await sql<{ id: string }>(em(), 'select id from doc_chunks where document_id = ? order by seq', [documentId])).map(
    (r) => r.id,
  );
const qv = async (text: string) => (await embedder.embed([text])).vectors[0]!;

describe('binary vectors', () => {
  it('round-trips float4 bytes, and doc_vec_floats (pgvector expression, down migration) decodes them in SQL', async () => {
    const v = [0.5, -1.25, 3.0e-39, 0, 123456.789, -0.000123];
    const decoded = Array.from(decodeVector(encodeVector(v)));
    expect(decoded).toEqual(v.map((x) => Math.fround(x)));
    const rows = await sql<{ f: number[] }>(em(), 'select doc_vec_floats(?) as f', [encodeVector(v)]);
    expect(rows[0]!.f.map((x) => Math.fround(Number(x)))).toEqual(v.map((x) => Math.fround(x)));
    // The up migration's conversion of the former real[] column gives the bytes the API writes.
    const converted = await sql<{ b: Buffer }>(em(), `select ${realArrayToBytes('?::real[]')} as b`, [
      `{${v.join(',')}}`,
    ]);
    expect(Buffer.compare(converted[0]!.b, encodeVector(v))).toBe(0);
    const empty = await sql<{ f: number[] }>(em(), `select doc_vec_floats(''::bytea) as f`);
    expect(empty[0]!.f).toEqual([]);
  });

  it('stores a vector with few non-zero values sparse (odd length), the same floats in JS and in SQL', async () => {
    const entries: [number, number][] = [
      [0, 0.5],
      [7, -1.25],
      [300, 3.0e-39],
      [1535, 123456.789],
      [1000, -0.000123],
    ];
    // 4 entries: 29 bytes; 5 entries: 35 bytes (odd lengths of both remainders mod 4).
    for (const n of [4, 5]) {
      const v = new Array<number>(1536).fill(0);
      for (const [d, x] of entries.slice(0, n)) v[d] = x;
      const b = encodeVector(v);
      expect(b.length).toBe(5 + 6 * n);
      expect(b[0]).toBe(0x73);
      expect(Array.from(decodeVector(b))).toEqual(v.map((x) => Math.fround(x)));
      const rows = await sql<{ f: number[] }>(em(), 'select doc_vec_floats(?) as f', [b]);
      expect(rows[0]!.f.map((x) => Math.fround(Number(x)))).toEqual(v.map((x) => Math.fround(x)));
    }
    // At two thirds non-zero the dense form is the shorter: 4 bytes a dimension, as before.
    const dense = Array.from({ length: 12 }, (_, i) => (i % 3 === 2 ? 0 : i + 1));
    expect(encodeVector(dense).length).toBe(48);
    expect(Array.from(decodeVector(encodeVector(dense)))).toEqual(dense);
  });

  it('stores every ingested local vector sparse: 5 bytes and 6 per non-zero value, fewer than dense', async () => {
    const index = await createIndex(em(), tenant, 'bytes', NO_CHUNKING);
    await add(index, 'a', 'Binary storage of float vectors, sparse where most values are zero.');
    const rows = await query<{ n: number }>(
      stack.db.url,
      'select length(vec) as n from doc_embeddings where index_id = $1',
      [index.id],
    );
    const v = await qv('Binary storage of float vectors, sparse where most values are zero.');
    const nonZero = v.filter((x) => x !== 0).length;
    expect(v.length).toBe(LOCAL_EMBEDDING_DIMENSIONS);
    expect(nonZero).toBeGreaterThan(10);
    expect(rows.map((r) => Number(r.n))).toEqual([5 + 6 * nonZero]);
    expect(5 + 6 * nonZero).toBeLessThan(384 * 4);
  });
});

describe('backend detection', () => {
  it('falls back to the exact cached scan where CREATE EXTENSION vector fails (embedded PostgreSQL)', async () => {
    const detected = await detectVectorBackend(em(), 1024 * 1024);
    expect(detected.kind).toBe('exact');
    expect((await vectorBackend(em(), stack.config)).kind).toBe('exact');
    const ext = await query(stack.db.url, `select 1 from pg_extension where extname = 'vector'`);
    expect(ext).toHaveLength(0);
  });
});

describe('exact backend with its cache', () => {
  it('ranks exactly like a brute-force cosine over the stored vectors', async () => {
    const index = await createIndex(em(), tenant, 'parity', NO_CHUNKING);
    const texts = [
      'Nightly backups run at two in the morning.',
      'Restore a backup with the restore command.',
      'Encryption keys rotate every quarter.',
      'Backups are kept for thirty days before deletion.',
      'The cafeteria serves soup on Fridays.',
      'Backup restore drills happen every month in the morning.',
    ];
    for (const [i, t] of texts.entries()) await add(index, `doc${i}`, t);
    const q = await qv('backup restore in the morning');
    const backend = new ExactVectorBackend(64 * 1024 * 1024);
    const got = await backend.nearest(em(), tenant, [index.id], embedder.collection, q, 4);
    const stored = await query<{ chunk_id: string; vec: Buffer }>(
      stack.db.url,
      'select chunk_id, vec from doc_embeddings where index_id = $1',
      [index.id],
    );
    const brute = stored
      .map((r) => ({ id: r.chunk_id, sim: cosine(q, Array.from(decodeVector(r.vec))) }))
      .filter((r) => r.sim > 0)
      .sort((a, b) => b.sim - a.sim || (a.id < b.id ? -1 : 1))
      .slice(0, 4);
    expect(got.map((h) => h.id)).toEqual(brute.map((h) => h.id));
    got.forEach((h, i) => expect(h.sim).toBeCloseTo(brute[i]!.sim, 5));
    expect(got.length).toBe(4);
  });

  it('serves repeated searches from memory and never serves vectors older than a committed write', async () => {
    const index = await createIndex(em(), tenant, 'fresh', NO_CHUNKING);
    const backend = new ExactVectorBackend(64 * 1024 * 1024);
    const search = async (text: string) =>
      (await backend.nearest(em(), tenant, [index.id], embedder.collection, await qv(text), 10)).map((h) => h.id);

    const a = await add(index, 'a', 'Zebra crossings are painted white.');
    const [chunkA] = await chunkIds(a.file_id);
    expect(await search('zebra crossing')).toEqual([chunkA]);
    expect(backend.stats).toEqual({ loads: 1, hits: 0, catchUps: 0 });
    expect(await search('zebra crossing')).toEqual([chunkA]);
    expect(backend.stats).toEqual({ loads: 1, hits: 1, catchUps: 0 });

    // Ingestion: the new document's vector is seen by the next search, read from the change log
    // (issue 32: no reload of the whole index after a write).
    const b = await add(index, 'b', 'A zebra crossing near the school.');
    const [chunkB] = await chunkIds(b.file_id);
    expect((await search('zebra crossing')).sort()).toEqual([chunkA, chunkB].sort());
    expect(backend.stats).toEqual({ loads: 1, hits: 1, catchUps: 1 });

    // Replacing a document's text (same path, new chunks).
    const b2 = await add(index, 'b', 'Giraffes eat leaves from tall trees.');
    const [chunkB2] = await chunkIds(b2.file_id);
    expect(await search('zebra crossing')).toEqual([chunkA]);
    expect(await search('giraffes leaves')).toEqual([chunkB2]);

    // Document deletion (cascaded from doc_documents through doc_chunks).
    await sql(em(), 'delete from doc_documents where id = ?', [a.file_id]);
    expect(await search('zebra crossing')).toEqual([]);

    // Re-embedding (an update of the stored vector through the embedding consumer).
    await documentIndexConsumer.store(em(), tenant, embedder.identity, [
      { key: chunkB2!, vector: await qv('penguins swim in cold water') },
    ]);
    expect(await search('penguins cold water')).toEqual([chunkB2]);
    expect(await search('giraffes leaves')).toEqual([]);

    // A write by another process (its own connection), e.g. the worker.
    await query(stack.db.url, 'delete from doc_embeddings where chunk_id = $1', [chunkB2]);
    expect(await search('penguins cold water')).toEqual([]);
    const gen = await query<{ g: string }>(
      stack.db.url,
      'select vector_generation::text as g from doc_indexes where id = $1',
      [index.id],
    );
    expect(Number(gen[0]!.g)).toBeGreaterThanOrEqual(6);
    // Every write above was applied incrementally: the index was loaded once.
    expect(backend.stats.loads).toBe(1);
    expect(backend.stats.catchUps).toBeGreaterThanOrEqual(5);
  });

  it('follows the rechunk swap: the new index is searched, the old one answers nothing', async () => {
    const index = await createIndex(em(), tenant, 'swap', NO_CHUNKING);
    await add(index, 'a', 'Lighthouses guide ships at night. Keepers trim the lamps.');
    const backend = new ExactVectorBackend(64 * 1024 * 1024);
    const q = await qv('lighthouse ships');
    const before = await backend.nearest(em(), tenant, [index.id], embedder.collection, q, 10);
    expect(before).toHaveLength(1);
    const begun = await beginRechunk(em(), {
      tenant,
      indexName: 'swap',
      runId: 'r1',
      config: { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' },
    });
    if ('missing' in begun) throw new Error('index missing');
    await rechunkCopyBatch(em(), stack.config, {
      tenant,
      sourceId: begun.sourceId,
      tempId: begun.tempId,
      afterId: null,
      limit: 10,
      chunkConfig: { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' },
    });
    // Searches keep being served by the original until the swap.
    expect(await backend.nearest(em(), tenant, [index.id], embedder.collection, q, 10)).toEqual(before);
    const swapped = await swapRechunk(em(), {
      tenant,
      indexName: 'swap',
      sourceId: begun.sourceId,
      tempId: begun.tempId,
    });
    expect(swapped.swapped).toBe(true);
    expect(await backend.nearest(em(), tenant, [index.id], embedder.collection, q, 10)).toEqual([]);
    const after = await backend.nearest(em(), tenant, [begun.tempId], embedder.collection, q, 10);
    const newChunks = (
      await query<{ id: string }>(stack.db.url, 'select id from doc_chunks where index_id = $1', [begun.tempId])
    ).map((r) => r.id);
    expect(newChunks.length).toBe(2);
    expect(after.map((h) => h.id)[0]).toBe(
      (
        await query<{ id: string }>(stack.db.url, 'select id from doc_chunks where index_id = $1 and seq = 0', [
          begun.tempId,
        ])
      )[0]!.id,
    );
    expect(after.every((h) => newChunks.includes(h.id))).toBe(true);
  });

  it('rechunks at scale: no change log for the building index, batches cut at their content budget, the swap retires the old index and a retried swap deletes it', async () => {
    const index = await createIndex(em(), tenant, 'retire', NO_CHUNKING);
    for (const [path, text] of [
      ['a', 'Harbours shelter boats from storms.'],
      ['b', 'Tides rise twice a day along the coast.'],
      ['c', 'Pilots guide large ships into the harbour.'],
    ])
      await add(index, path!, text!);
    const config = { chunk_size: 4, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
    const begun = await beginRechunk(em(), { tenant, indexName: 'retire', runId: 'r1', config });
    if ('missing' in begun) throw new Error('index missing');
    const batch = (afterId: string | null, maxBytes?: number) =>
      rechunkCopyBatch(em(), stack.config, {
        tenant,
        sourceId: begun.sourceId,
        tempId: begun.tempId,
        afterId,
        limit: 10,
        chunkConfig: config,
        ...(maxBytes === undefined ? {} : { maxBytes }),
      });
    // A budget of a few bytes: each batch takes one document (one always fits), so three batches, the last done.
    const first = await batch(null, 10);
    expect(first).toMatchObject({ docs: 1, done: false });
    const second = await batch(first.lastId, 10);
    expect(second).toMatchObject({ docs: 1, done: false });
    const third = await batch(second.lastId);
    expect(third).toMatchObject({ docs: 1, done: true });
    expect(await batch(third.lastId)).toMatchObject({ docs: 0, done: true });
    const logged = async (id: string) =>
      Number(
        (await sql<{ n: string }>(em(), 'select count(*) as n from doc_vector_log where index_id = ?', [id]))[0]!.n,
      );
    expect(
      Number(
        (
          await sql<{ n: string }>(em(), 'select count(*) as n from doc_embeddings where index_id = ?', [begun.tempId])
        )[0]!.n,
      ),
    ).toBeGreaterThan(3);
    // The temporary index is invisible (building): its vectors are cached by no process, so nothing was logged.
    expect(await logged(begun.tempId)).toBe(0);
    const sourceLogged = await logged(begun.sourceId);
    expect(sourceLogged).toBeGreaterThan(0);
    // A swap that committed but whose process died before deleting the old rows: the old index is retired.
    await em().transactional(async (tx) => {
      await sql(tx, `update doc_indexes set state = 'building', name = ? where id = ?`, [
        retiredIndexName(begun.sourceId),
        begun.sourceId,
      ]);
      await sql(tx, `update doc_indexes set state = 'active', name = 'retire' where id = ?`, [begun.tempId]);
    });
    const left = async () =>
      (
        await sql<{ d: string; c: string; e: string; i: string }>(
          em(),
          `select (select count(*) from doc_documents where index_id = ?) as d, (select count(*) from doc_chunks where index_id = ?) as c,
             (select count(*) from doc_embeddings where index_id = ?) as e, (select count(*) from doc_indexes where id = ?) as i`,
          [begun.sourceId, begun.sourceId, begun.sourceId, begun.sourceId],
        )
      )[0]!;
    expect(Number((await left()).c)).toBeGreaterThan(0);
    // Only the active index answers by name meanwhile.
    expect(
      (await ok({ action: 'GET_INDICES_STATS' })).Indices.filter((s: { name: string }) => s.name.includes('retire')),
    ).toEqual([expect.objectContaining({ name: 'retire', document_count: 3 })]);
    // The retried swap answers swapped and deletes the retired index with its rows, logging none of them.
    const retried = await swapRechunk(em(), {
      tenant,
      indexName: 'retire',
      sourceId: begun.sourceId,
      tempId: begun.tempId,
    });
    expect(retried).toMatchObject({ swapped: true, docs: 3 });
    expect(await left()).toEqual({ d: '0', c: '0', e: '0', i: '0' });
    // Deleting a building index's vectors logged nothing; an active index is never dropped that way.
    expect(await logged(begun.sourceId)).toBe(sourceLogged);
    await dropBuildingIndex(em(), begun.tempId);
    expect((await sql(em(), 'select 1 from doc_indexes where id = ?', [begun.tempId])).length).toBe(1);
  });

  it('writes that waited for the index while a rechunk swap retired it land in the new index (ADD_TEXT, DELETE_DOCUMENT, RENAME_DOCUMENT)', async () => {
    const index = await createIndex(em(), tenant, 'swap-race', NO_CHUNKING);
    await add(index, 'keep.md', 'Harbours shelter boats from storms.');
    const dropped = await add(index, 'drop.md', 'Tides rise twice a day along the coast.');
    await add(index, 'old-name.md', 'Lighthouses warn ships of rocks.');
    const config = { chunk_size: 4, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
    const begun = await beginRechunk(em(), { tenant, indexName: 'swap-race', runId: 'race', config });
    if ('missing' in begun) throw new Error('index missing');
    const copy = { tenant, sourceId: begun.sourceId, tempId: begun.tempId, limit: 10, chunkConfig: config };
    expect(await rechunkCopyBatch(em(), stack.config, { ...copy, afterId: null })).toMatchObject({
      docs: 3,
      done: true,
    });
    // The swap takes the index's lock, then waits on the temporary index's row held here: the writes queue
    // behind the lock (found waiting in pg_locks, not by timing) and take it after the swap commits.
    const holder = new pg.Client({ connectionString: stack.db.url });
    await holder.connect();
    const waiting = sessionsWaitingOnLocks;
    try {
      await holder.query('begin');
      await holder.query('select 1 from doc_indexes where id = $1 for update', [begun.tempId]);
      const swap = swapRechunk(em(), {
        tenant,
        indexName: 'swap-race',
        sourceId: begun.sourceId,
        tempId: begun.tempId,
      });
      await expect.poll(waiting).toBe(1);
      const writes = Promise.all([
        ok({
          action: 'ADD_TEXT',
          index_name: 'swap-race',
          text: 'Pilots guide large ships into the harbour at dawn.',
          metadata: { filepath: 'new.md' },
        }),
        // By its id: the rebuilt index gave the document a new one, so the run again finds it by its path.
        ok({ action: 'DELETE_DOCUMENT', index_name: 'swap-race', file_id: dropped.file_id }),
        ok({ action: 'RENAME_DOCUMENT', index_name: 'swap-race', filepath: 'old-name.md', new_filename: 'renamed.md' }),
      ]);
      await expect.poll(waiting).toBe(4);
      await holder.query('rollback');
      expect(await swap).toMatchObject({ swapped: true, docs: 3 });
      const [added, deleted, renamed] = await writes;
      expect(added).toMatchObject({ Success: true, filepath: 'new.md', status: 'added' });
      expect(deleted).toMatchObject({ Success: true, filepath: 'drop.md' });
      expect(renamed).toMatchObject({ Success: true, filepath: 'renamed.md', previous_filepath: 'old-name.md' });
    } finally {
      await holder.end();
    }
    // The name's index is the rebuilt one, holding every write; the retired index is gone with its rows.
    const [now] = await sql<IndexRow>(em(), `select * from doc_indexes where tenant = ? and name = 'swap-race'`, [
      tenant,
    ]);
    expect(now).toMatchObject({ id: begun.tempId, state: 'active', chunk_size: 4 });
    const docs = await sql<{ path: string; chunk_count: number }>(
      em(),
      'select path, chunk_count from doc_documents where index_id = ? order by path',
      [begun.tempId],
    );
    expect(docs.map((d) => d.path)).toEqual(['keep.md', 'new.md', 'renamed.md']);
    // ADD_TEXT chunked its text with the new index's parameters (4-token sentences), not the retired one's.
    expect(docs.find((d) => d.path === 'new.md')!.chunk_count).toBeGreaterThan(1);
    expect((await sql(em(), 'select 1 from doc_indexes where id = ?', [begun.sourceId])).length).toBe(0);
    // One of its new 4-token chunks holds every word of the query: the only full match, first in both rankings.
    const search = await ok({ action: 'SEARCH', index_name: 'swap-race', query: 'pilots guide large ships' });
    expect(search.results[0]).toMatchObject({ filepath: 'new.md', lexical_rank: 1 });
  });

  it("an ingestion batch after a rechunk swap chunks with the call's parameters over the new index's defaults", async () => {
    const index = await createIndex(em(), tenant, 'swap-ingest', NO_CHUNKING);
    await add(index, 'seed.md', 'Harbours shelter boats from storms.');
    const root = await mkdtemp(join(tmpdir(), 'swap-ingest-'));
    try {
      const sentences =
        'Pilots guide large ships into the harbour. Tugs push them to the quay. Cranes unload the cargo.';
      for (const name of ['a.md', 'b.md', 'c.md', 'd.md']) await writeFile(join(root, name), sentences);
      const config = { chunk_size: 4, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
      const begun = await beginRechunk(em(), { tenant, indexName: 'swap-ingest', runId: 'ingest', config });
      if ('missing' in begun) throw new Error('index missing');
      await rechunkCopyBatch(em(), stack.config, {
        tenant,
        sourceId: begun.sourceId,
        tempId: begun.tempId,
        limit: 10,
        chunkConfig: config,
        afterId: null,
      });
      await swapRechunk(em(), { tenant, indexName: 'swap-ingest', sourceId: begun.sourceId, tempId: begun.tempId });
      // A batch of a call that began on the old index (no defaults): what the call resolved then, and its own
      // parameters when it carries them.
      const batch = (file: string, chunkParams?: ChunkParams) => {
        const atStart = resolveChunkConfig(NO_CHUNKING, chunkParams ?? {});
        if ('error' in atStart) throw new Error(atStart.error);
        return ingestFiles(em(), stack.config, {
          tenant,
          indexName: 'swap-ingest',
          root,
          files: [file],
          chunkConfig: atStart.config,
          ...(chunkParams ? { chunkParams } : {}),
        });
      };
      // No parameters of its own: the new index's defaults (4-token sentences), as its other documents.
      const plain = await batch('a.md', {});
      // Its own size and overlap: those, over the new defaults.
      const sized = await batch('b.md', { chunk_size: 8, chunk_overlap: 0 });
      // An overlap the new defaults' size refuses: what the call resolved when it began (1,024 tokens), with a warning.
      const refused = await batch('c.md', { chunk_overlap: 6 });
      // A batch of a workflow started before the parameters were carried: what the call resolved.
      const legacy = await batch('d.md');
      const chunks = Object.fromEntries(
        [plain, sized, refused, legacy].flatMap((r) => r.added.map((a) => [a.filepath, a.chunks])),
      );
      expect(chunks['a.md']).toBeGreaterThan(chunks['b.md']!);
      expect(chunks['b.md']).toBeGreaterThan(1);
      expect(chunks['c.md']).toBe(1);
      expect(chunks['d.md']).toBe(1);
      expect([plain.warnings, sized.warnings, legacy.warnings]).toEqual([[], [], []]);
      expect(refused.warnings).toEqual([
        expect.stringMatching(
          /^chunk parameters: the index's defaults changed .*chunked with the parameters resolved when the call began$/,
        ),
      ]);
      const docs = await sql<{ path: string }>(
        em(),
        'select path from doc_documents where index_id = ? order by path',
        [begun.tempId],
      );
      expect(docs.map((d) => d.path)).toEqual(['a.md', 'b.md', 'c.md', 'd.md', 'seed.md']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('a write that waited for the index while DELETE_INDEX removed it answers 404 not_found and writes nothing', async () => {
    const index = await createIndex(em(), tenant, 'delete-race', NO_CHUNKING);
    await add(index, 'a.md', 'Ferries cross the bay hourly.');
    const res = await addTextBehindLock(index, 'Late ferry.', async (holder) => {
      // What DELETE_INDEX does under the lock (its vectors, then the row; documents and chunks cascade).
      await holder.query('delete from doc_embeddings where index_id = $1', [index.id]);
      await holder.query('delete from doc_indexes where id = $1', [index.id]);
    });
    expect(res.status, res.text).toBe(404);
    expect(res.body).toMatchObject({ error_type: 'not_found' });
    expect(await sql(em(), 'select 1 from doc_documents where index_id = ?', [index.id])).toEqual([]);
  });

  it('a write that waited for the index while it was renamed runs again under the name it gave: 404 when no index has it now', async () => {
    const index = await createIndex(em(), tenant, 'rename-race', NO_CHUNKING);
    const res = await addTextBehindLock(index, 'Kites fly on windy days.', async (holder) => {
      await holder.query(`update doc_indexes set name = 'renamed-meanwhile' where id = $1`, [index.id]);
    });
    expect(res.status, res.text).toBe(404);
    expect(res.body).toMatchObject({ error_type: 'not_found' });
    expect(await sql(em(), 'select 1 from doc_documents where index_id = ?', [index.id])).toEqual([]);
  });

  it('keeps within its byte budget: a set larger than the budget is scanned, not kept', async () => {
    const index = await createIndex(em(), tenant, 'budget', NO_CHUNKING);
    const a = await add(index, 'a', 'Budgets cap the cache.');
    const backend = new ExactVectorBackend(16);
    const q = await qv('budget cache');
    const [chunk] = await chunkIds(a.file_id);
    expect((await backend.nearest(em(), tenant, [index.id], embedder.collection, q, 10)).map((h) => h.id)).toEqual([
      chunk,
    ]);
    expect((await backend.nearest(em(), tenant, [index.id], embedder.collection, q, 10)).map((h) => h.id)).toEqual([
      chunk,
    ]);
    expect(backend.stats).toEqual({ loads: 2, hits: 0, catchUps: 0 });
  });
});

describe('a set that fails to take changes', () => {
  it('is dropped and loaded again whole by the next search; a deferred write that fails is swallowed', async () => {
    const index = await createIndex(em(), tenant, 'broken-apply', NO_CHUNKING);
    const a = await add(index, 'a', 'Otters hold hands while they sleep.');
    const [chunkA] = await chunkIds(a.file_id);
    const backend = new ExactVectorBackend(64 * 1024 * 1024);
    const search = async () =>
      (await backend.nearest(em(), tenant, [index.id], embedder.collection, await qv('otters sleep'), 5)).map(
        (h) => h.id,
      );
    expect(await search()).toEqual([chunkA]);
    const cached = backend.peek([index.id], embedder.collection)!;
    // A change whose vector cannot be read: the set is left half-written, so the cache drops it.
    const unreadable = new Proxy(new Uint8Array(8), {
      get() {
        throw new Error('unreadable vector');
      },
    });
    const change = { chunk_id: 'x', vec: unreadable, row: null };
    expect(() => cached.apply(index.id, 1_000_000n, [change])).toThrow('unreadable vector');
    expect(backend.peek([index.id], embedder.collection)).toBeNull();
    // The same failure in a write deferred after a search's answer: no uncaught exception, settled() resolves.
    backend.deferApply(() => {
      throw new Error('deferred failure');
    });
    await backend.settled();
    // The next search loads the index whole and answers its current vectors.
    const b = await add(index, 'b', 'Sea otters sleep holding hands.');
    const [chunkB] = await chunkIds(b.file_id);
    expect((await search()).sort()).toEqual([chunkA, chunkB].sort());
    expect(backend.stats.loads).toBe(2);
  });
});

describe('SEARCH over HTTP after writes', () => {
  it('a search after ADD_TEXT and DELETE_DOCUMENT sees each write (the API process keeps its cache warm)', async () => {
    await ok({ action: 'CREATE_INDEX', index_name: 'api' });
    await ok({
      action: 'ADD_TEXT',
      index_name: 'api',
      text: 'Otters hold hands while sleeping.',
      metadata: { filepath: 'otters' },
    });
    const first = await ok({ action: 'SEARCH', index_name: 'api', query: 'otters sleeping' });
    expect(first.results.map((r: { filepath: string }) => r.filepath)).toEqual(['otters']);
    await ok({
      action: 'ADD_TEXT',
      index_name: 'api',
      text: 'Sleeping otters float on kelp.',
      metadata: { filepath: 'kelp' },
    });
    const second = await ok({ action: 'SEARCH', index_name: 'api', query: 'otters sleeping' });
    expect(second.results.map((r: { filepath: string }) => r.filepath).sort()).toEqual(['kelp', 'otters']);
    await ok({ action: 'DELETE_DOCUMENT', index_name: 'api', filepath: 'otters' });
    const third = await ok({ action: 'SEARCH', index_name: 'api', query: 'otters sleeping' });
    expect(third.results.map((r: { filepath: string }) => r.filepath)).toEqual(['kelp']);
  });
});

describe('the local embedder at 1,536 buckets (Migration20261130010000LocalHashing1536)', () => {
  it('down re-embeds local vectors at 384 buckets, dense; up brings them back at 1,536, sparse and searched', async () => {
    await ok({ action: 'CREATE_INDEX', index_name: 'upgrade' });
    const texts = [
      'Quarterly revenue grew in the northern region.',
      'The backup job restores nightly snapshots.',
      'Invoices are reconciled each month.',
    ];
    for (const [i, text] of texts.entries())
      await ok({ action: 'ADD_TEXT', index_name: 'upgrade', text, metadata: { filepath: `d${i}` } });
    const stored = () =>
      query<{ collection: string; text: string; vec: Buffer }>(
        stack.db.url,
        `select e.collection, c.text, e.vec from doc_embeddings e join doc_chunks c on c.id = e.chunk_id
           join doc_indexes i on i.id = e.index_id where i.name = 'upgrade' order by c.text`,
      );
    const dense = (v: number[]) => Buffer.from(Float32Array.from(v).buffer);
    const migrator = stack.api.deps.orm.getMigrator();
    // That migration alone (later ones are independent of it), then applied again.
    const reverted = await migrator.down('Migration20261130010000LocalHashing1536');
    try {
      expect(reverted.map((m) => m.name)).toEqual(['Migration20261130010000LocalHashing1536']);
      const old = await stored();
      expect(old.map((r) => r.collection)).toEqual(texts.map(() => LOCAL_384));
      for (const r of old) {
        expect(r.vec.length).toBe(384 * 4);
        expect(Buffer.compare(r.vec, dense(localEmbedAt(r.text, 384)))).toBe(0);
      }
      // The reader of before (dense only) is back.
      const back = await sql<{ f: number[] }>(em(), 'select doc_vec_floats(?) as f', [dense([1, 0, 2])]);
      expect(back[0]!.f.map(Number)).toEqual([1, 0, 2]);
    } finally {
      const applied = await migrator.up();
      expect(applied.map((m) => m.name)).toEqual(['Migration20261130010000LocalHashing1536']);
    }
    const now = await stored();
    expect(now.map((r) => r.collection)).toEqual(texts.map(() => LOCAL_1536));
    for (const r of now) expect(Buffer.compare(r.vec, encodeVector(localEmbed(r.text)))).toBe(0);
    const found = await ok({ action: 'SEARCH', index_name: 'upgrade', query: 'backup snapshots' });
    expect(found.results[0]).toMatchObject({ filepath: 'd1', lexical_rank: 1, vector_rank: 1 });
    const stats = await ok({ action: 'GET_INDICES_STATS' });
    expect(JSON.stringify(stats)).not.toContain(LOCAL_384);
  });
});
