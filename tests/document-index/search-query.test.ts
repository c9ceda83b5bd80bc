/**
 * SEARCH's query path (issue 32): the one statement that ranks, fuses and writes snippets gives the
 * reciprocal rank fusion of the lexical and vector rankings exactly; the lexical ranking puts chunks
 * holding every query word first; the first search of an index in a process does not wait for its
 * vectors to load (ranked among the chunks matching a query word, the load in the background); and a
 * second API process's write is seen at the next hybrid search of the first (the statement reports the
 * indexes' generations, a newer one makes the cache catch up).
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initOrm } from '../../shared/db/orm.js';
import { currentEmbedder, type Embedder } from '../../shared/document-index/embedder.js';
import { hybridSearch, lexicalRanking, RRF_K, type SearchHit } from '../../shared/document-index/search.js';
import { createIndex, ingestDocument, sql, type IndexRow } from '../../shared/document-index/store.js';
import { ExactVectorBackend } from '../../shared/document-index/vectors.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let embedder: Embedder;
let tenant: string;
let other: MikroORM;
const em = (): EntityManager => stack.api.deps.orm.em.fork() as EntityManager;
const otherEm = (): EntityManager => other.em.fork() as EntityManager;
const NO_CHUNKING = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };
const MB = 1024 * 1024;

const CORPUS: Array<[string, string]> = [
  ['backups', 'Nightly backups run at two in the morning and are kept for thirty days.'],
  ['restore', 'Restore a backup with the restore command from the operations handbook.'],
  ['drills', 'Backup drills restore last night’s backup into a scratch database every month.'],
  ['rotation', 'Encryption keys are rotated every quarter; rotation re-seals every stored secret.'],
  ['holidays', 'Employees receive twenty-five paid holidays each year; unused days expire in March.'],
  ['incidents', 'Severity one incidents page the on-call engineer immediately.'],
  ['night', 'The night shift covers incidents until the morning.'],
  ['database', 'The scratch database is rebuilt every night from the morning snapshot.'],
  ['repeat', 'Morning scratch, morning scratch, morning scratch, morning scratch.'],
];
const QUERIES = ['restore a backup', 'backup database morning', 'night incidents', 'paid holidays', 'quarter'];

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

async function corpusIndex(name: string): Promise<IndexRow> {
  const index = await createIndex(em(), tenant, name, NO_CHUNKING);
  for (const [path, text] of CORPUS)
    await ingestDocument(em(), index, { path, kind: 'text', content: text }, NO_CHUNKING, embedder);
  return index;
}

const search = (backend: ExactVectorBackend, index: IndexRow, q: string, m = em()) =>
  hybridSearch(m, tenant, [{ id: index.id, name: index.name }], q, 10, embedder, backend);
const pathsOf = (hits: SearchHit[]) => hits.map((h) => h.filepath);

describe('the fused statement', () => {
  it('equals reciprocal rank fusion of the lexical and vector rankings, with a snippet per result', async () => {
    const index = await corpusIndex('fusion');
    const backend = new ExactVectorBackend(64 * MB);
    for (const q of QUERIES) {
      const lex = (await lexicalRanking(em(), tenant, [index.id], q)).map((r) => r.id);
      const [v] = (await embedder.embed([q])).vectors;
      const vec = (await backend.nearest(em(), tenant, [index.id], embedder.collection, v!, 50)).map((h) => h.id);
      const want = new Map<string, { score: number; lexical: number | null; vector: number | null }>();
      lex.forEach((id, n) => want.set(id, { score: 1 / (RRF_K + n + 1), lexical: n + 1, vector: null }));
      vec.forEach((id, n) => {
        const f = want.get(id) ?? { score: 0, lexical: null, vector: null };
        f.score += 1 / (RRF_K + n + 1);
        f.vector = n + 1;
        want.set(id, f);
      });
      const ranked = [...want].sort((a, b) => b[1].score - a[1].score || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
      const got = await search(backend, index, q);
      expect(
        got.map((h) => [h.chunk_id, h.score, h.lexical_rank, h.vector_rank]),
        q,
      ).toEqual(ranked.map(([id, f]) => [id, Math.round(f.score * 1e6) / 1e6, f.lexical, f.vector]));
      expect(got.length, q).toBeGreaterThan(0);
      for (const h of got.filter((x) => x.lexical_rank !== null)) expect(h.snippet, q).toMatch(/<b>/);
    }
    expect(backend.stats.loads).toBe(1);
  });

  it('ranks the chunks holding every query word alone, and those holding any word when none holds all', async () => {
    const index = await corpusIndex('and-first');
    const orRanks = async (tsq: string) =>
      new Map(
        (
          await sql<{ path: string; r: number }>(
            em(),
            `select d.path, ts_rank_cd(c.tsv, to_tsquery('english', ?)) as r
               from doc_chunks c join doc_documents d on d.id = c.document_id
               where c.index_id = ? and c.tsv @@ to_tsquery('english', ?)`,
            [tsq, index.id, tsq],
          )
        ).map((r) => [r.path, Number(r.r)]),
      );
    const paths = await sql<{ id: string; path: string }>(
      em(),
      'select c.id, d.path from doc_chunks c join doc_documents d on d.id = c.document_id where c.index_id = ?',
      [index.id],
    );
    const pathOf = new Map(paths.map((p) => [p.id, p.path]));
    const ranked = async (q: string) =>
      (await lexicalRanking(em(), tenant, [index.id], q)).map((r) => pathOf.get(r.id)!);

    // Ranked on any word, 'repeat' (scratch and morning, many times) would come before 'database', the
    // one chunk holding all three words: that one alone is the lexical ranking.
    const any = await orRanks('scratch | database | morning');
    expect(any.get('repeat')).toBeGreaterThan(any.get('database')!);
    expect(await ranked('scratch database morning')).toEqual(['database']);

    // No chunk holds scratch, morning and holidays: every chunk holding one of them, best ts_rank_cd first.
    const some = await orRanks('scratch | morning | holiday');
    const got = await ranked('scratch morning holidays');
    expect([...got].sort()).toEqual([...some.keys()].sort());
    expect(got.length).toBe(6);
    const scores = got.map((p) => some.get(p)!);
    expect(scores).toEqual([...scores].sort((x, y) => y - x));
    expect(await lexicalRanking(em(), tenant, [index.id], '?!')).toEqual([]);
  });
});

describe('the first search of an index in a process', () => {
  it('answers without waiting for the whole load, then searches from the loaded cache', async () => {
    const index = await corpusIndex('cold');
    const backend = new ExactVectorBackend(64 * MB);
    const first = await search(backend, index, 'restore a backup');
    expect(backend.amongSearches).toBe(1);
    await backend.settled();
    expect(backend.stats.loads).toBe(1);
    const warm = await search(backend, index, 'restore a backup');
    expect(backend.amongSearches).toBe(1);
    expect(backend.stats.loads).toBe(1);
    // Among the chunks matching a query word the vector ranking is exact: the same best result as the
    // cache's, and nothing the full ranking would not give.
    expect(first[0]!.filepath).toBe(warm[0]!.filepath);
    expect(first[0]).toMatchObject({ lexical_rank: 1, vector_rank: 1 });
    for (const h of first) expect(pathsOf(warm)).toContain(h.filepath);
  });
});

describe('two API processes', () => {
  it("each hybrid search sees the other's writes, the cache catching up from the change log", async () => {
    const index = await corpusIndex('replicas-hybrid');
    const a = new ExactVectorBackend(64 * MB);
    const b = new ExactVectorBackend(64 * MB);
    await a.nearest(em(), tenant, [index.id], embedder.collection, [1], 1);
    await b.nearest(otherEm(), tenant, [index.id], embedder.collection, [1], 1);
    const q = 'flightless birds';
    expect(pathsOf(await search(a, index, q))).not.toContain('kiwi');
    const added = await ingestDocument(
      otherEm(),
      index,
      { path: 'kiwi', kind: 'text', content: 'Kiwis are flightless birds.' },
      NO_CHUNKING,
      embedder,
    );
    const seen = await search(a, index, q);
    expect(seen[0]).toMatchObject({ filepath: 'kiwi', lexical_rank: 1, vector_rank: 1 });
    await sql(em(), 'delete from doc_documents where id = ?', [added.file_id]);
    expect(pathsOf(await search(b, index, q, otherEm()))).not.toContain('kiwi');
    expect(a.stats.loads).toBe(1);
    expect(b.stats.loads).toBe(1);
    expect(a.stats.catchUps).toBe(1);
    expect(b.stats.catchUps).toBe(1);
  });
});
