/**
 * Search at scale (issue 32): API processes keep their vector caches current from `doc_vector_log`
 * (a write by any process is seen at the next search of every other, without reloading the index), a
 * cache older than the pruned log reloads whole, the column-major `VectorSet` ranks like a brute-force
 * cosine after in-place updates and removals, and `ingestDocuments` writes a batch of documents at once.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initOrm } from '../../shared/db/orm.js';
import { cosine, currentEmbedder, type Embedder } from '../../shared/document-index/embedder.js';
import { createIndex, ingestDocument, ingestDocuments, sql, type IndexRow } from '../../shared/document-index/store.js';
import {
  encodeVector,
  ExactVectorBackend,
  pruneVectorLog,
  TopK,
  VectorSet,
  type VectorHit,
} from '../../shared/document-index/vectors.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let embedder: Embedder;
let tenant: string;
let other: MikroORM;
const em = (): EntityManager => stack.api.deps.orm.em.fork() as EntityManager;
const otherEm = (): EntityManager => other.em.fork() as EntityManager;
const NO_CHUNKING = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };
const MB = 1024 * 1024;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  tenant = stack.config.auth.deploymentTenant;
  embedder = await currentEmbedder(em(), stack.config, tenant);
  // A second "API process": its own connection pool and its own vector cache over the same database.
  other = await initOrm({ clientUrl: stack.db.url });
}, 120_000);
afterAll(async () => {
  await other?.close();
  await stack?.close();
});

const add = (m: EntityManager, index: IndexRow, path: string, content: string) =>
  ingestDocument(m, index, { path, kind: 'text', content }, NO_CHUNKING, embedder);
const qv = async (text: string) => (await embedder.embed([text])).vectors[0]!;
const chunkOf = async (documentId: string) =>
  (await sql<{ id: string }>(em(), 'select id from doc_chunks where document_id = ? order by seq', [documentId]))[0]!
    .id;

describe('two API processes over one database', () => {
  it("each sees the other's writes at its next search, applied from the change log without a reload", async () => {
    const index = await createIndex(em(), tenant, 'replicas', NO_CHUNKING);
    const a = new ExactVectorBackend(64 * MB);
    const b = new ExactVectorBackend(64 * MB);
    const search = async (backend: ExactVectorBackend, m: EntityManager, text: string) =>
      (await backend.nearest(m, tenant, [index.id], embedder.collection, await qv(text), 10)).map((h) => h.id).sort();

    const first = await add(em(), index, 'kiwi', 'Kiwis are flightless birds.');
    const kiwi = await chunkOf(first.file_id);
    expect(await search(a, em(), 'flightless birds')).toEqual([kiwi]);
    expect(await search(b, otherEm(), 'flightless birds')).toEqual([kiwi]);

    // A write through process B is seen by process A's next search, and the reverse.
    const second = await add(otherEm(), index, 'emu', 'Emus are flightless birds too.');
    const emu = await chunkOf(second.file_id);
    expect(await search(a, em(), 'flightless birds')).toEqual([kiwi, emu].sort());
    await sql(em(), 'delete from doc_documents where id = ?', [first.file_id]);
    expect(await search(b, otherEm(), 'flightless birds')).toEqual([emu]);
    expect(await search(a, em(), 'flightless birds')).toEqual([emu]);

    // Neither reloaded the index after a write: one whole load each, the rest incremental.
    expect(a.stats.loads).toBe(1);
    expect(b.stats.loads).toBe(1);
    expect(a.stats.catchUps).toBe(2);
    expect(b.stats.catchUps).toBe(1);
  });

  it('a cache older than the pruned log reloads the index whole, and answers the current vectors', async () => {
    const index = await createIndex(em(), tenant, 'pruned', NO_CHUNKING);
    const backend = new ExactVectorBackend(64 * MB);
    const search = async (text: string) =>
      (await backend.nearest(em(), tenant, [index.id], embedder.collection, await qv(text), 10)).map((h) => h.id);
    await add(em(), index, 'a', 'Owls hunt at night.');
    expect(await search('owls night')).toHaveLength(1);
    const added = await add(otherEm(), index, 'b', 'Bats hunt at night.');
    await pruneVectorLog(em(), 0);
    const log = await sql<{ n: string }>(em(), 'select count(*) as n from doc_vector_log where index_id = ?', [
      index.id,
    ]);
    expect(Number(log[0]!.n)).toBe(0);
    expect(await search('bats night')).toContain(await chunkOf(added.file_id));
    expect(backend.stats).toEqual({ loads: 2, hits: 0, catchUps: 0 });
  });
});

describe('VectorSet', () => {
  const brute = (rows: Map<string, number[]>, q: number[], k: number): VectorHit[] =>
    [...rows]
      .map(([id, v]) => ({ id, sim: cosine(q, v) }))
      .filter((h) => h.sim > 0)
      .sort((x, y) => y.sim - x.sim || (x.id < y.id ? -1 : 1))
      .slice(0, k);
  const nearest = (set: VectorSet, q: number[], k: number) => {
    const top = new TopK(k);
    set.scan(q, top);
    return top.hits;
  };

  it('ranks like a brute-force cosine after growth, overwrites and removals, for dense and sparse queries', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
    const dim = 24;
    const rows = new Map<string, number[]>();
    const set = new VectorSet(0n, 0);
    for (let i = 0; i < 9000; i++) {
      const id = `c${String(i).padStart(5, '0')}`;
      const v = Array.from({ length: dim }, rnd);
      rows.set(id, v);
      set.upsert(id, encodeVector(v));
    }
    for (let i = 0; i < 9000; i += 7) {
      const id = `c${String(i).padStart(5, '0')}`;
      rows.delete(id);
      set.remove(id);
    }
    for (let i = 1; i < 9000; i += 11) {
      const id = `c${String(i).padStart(5, '0')}`;
      if (!rows.has(id)) continue;
      const v = Array.from({ length: dim }, rnd);
      rows.set(id, v);
      set.upsert(id, encodeVector(v));
    }
    expect(set.size).toBe(rows.size);
    // The same rows loaded at once (a whole load) rank the same.
    const loaded = VectorSet.of(
      0n,
      [...rows.keys()],
      [...rows.values()].map((v) => encodeVector(v)),
    );
    const dense = Array.from({ length: dim }, rnd);
    const sparse = Array.from({ length: dim }, (_, d) => (d % 6 === 0 ? rnd() : 0));
    for (const q of [dense, sparse]) {
      const got = nearest(set, q, 20);
      const want = brute(
        rows,
        q.map((x) => Math.fround(x)),
        20,
      );
      expect(got.map((h) => h.id)).toEqual(want.map((h) => h.id));
      expect(nearest(loaded, q, 20)).toEqual(got);
      got.forEach((h, i) => expect(h.sim).toBeCloseTo(want[i]!.sim, 5));
    }
  });
});

describe('batched ingestion', () => {
  it('writes a batch in one go: outcomes in order, unchanged documents untouched, a repeated path replaced in order', async () => {
    const index = await createIndex(em(), tenant, 'batch', {
      chunk_size: 8,
      chunk_overlap: 0,
      chunk_strategy: 'sentence',
    });
    const cfg = { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
    const doc = (path: string, content: string) => ({ path, kind: 'text' as const, content });
    const first = await ingestDocuments(
      em(),
      index,
      [doc('a', 'Alpha one two three. Alpha four five six.'), doc('b', 'Beta\'s text, with "quotes" and {braces}.')],
      cfg,
      embedder,
    );
    expect(first.map((o) => [o.filepath, o.status])).toEqual([
      ['a', 'added'],
      ['b', 'added'],
    ]);
    const again = await ingestDocuments(
      em(),
      index,
      [doc('a', 'Alpha one two three. Alpha four five six.'), doc('c', 'Gamma.'), doc('c', 'Gamma replaced.')],
      cfg,
      embedder,
    );
    expect(again.map((o) => [o.filepath, o.status])).toEqual([
      ['a', 'unchanged'],
      ['c', 'added'],
      ['c', 'updated'],
    ]);
    expect(again[0]!.file_id).toBe(first[0]!.file_id);
    const docs = await sql<{ path: string; content: string; chunk_count: number }>(
      em(),
      'select path, content, chunk_count from doc_documents where index_id = ? order by path',
      [index.id],
    );
    expect(docs.map((d) => [d.path, d.content])).toEqual([
      ['a', 'Alpha one two three. Alpha four five six.'],
      ['b', 'Beta\'s text, with "quotes" and {braces}.'],
      ['c', 'Gamma replaced.'],
    ]);
    const counts = await sql<{ path: string; chunks: string; vectors: string }>(
      em(),
      `select d.path, count(distinct c.id) as chunks, count(e.chunk_id) as vectors from doc_documents d
         join doc_chunks c on c.document_id = d.id left join doc_embeddings e on e.chunk_id = c.id
         where d.index_id = ? group by d.path order by d.path`,
      [index.id],
    );
    expect(counts.map((c) => [c.path, Number(c.chunks), Number(c.vectors)])).toEqual(
      docs.map((d) => [d.path, d.chunk_count, d.chunk_count]),
    );
    expect(docs[0]!.chunk_count).toBe(2);
    const texts = await sql<{ text: string }>(
      em(),
      `select c.text from doc_chunks c join doc_documents d on d.id = c.document_id where d.path = 'b' and d.index_id = ?`,
      [index.id],
    );
    expect(texts.map((t) => t.text).join(' ')).toContain('"quotes" and {braces}');
  });
});
