/**
 * Search at scale (issue 32): API processes keep their vector caches current from `doc_vector_log`
 * (a write by any process is seen at the next search of every other, without reloading the index), a
 * cache older than the pruned log reloads whole, the column-major `VectorSet` ranks like a brute-force
 * cosine after in-place updates and removals, and `ingestDocuments` writes a batch of documents at once.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initOrm } from '../../shared/db/orm.js';
import { cosine, currentEmbedder, type Embedder } from '../../shared/document-index/embedder.js';
import {
  addTextAction,
  deleteDocumentAction,
  deleteIndexAction,
  renameDocumentAction,
} from '../../shared/document-index/actions.js';
import {
  earlySnippetRows,
  hybridSearch,
  lexicalCte,
  lexicalRanking,
  RRF_K,
  type SearchHit,
  tracePhases,
  type SearchPhases,
} from '../../shared/document-index/search.js';
import { headline, tsqueryLexemes } from '../../shared/document-index/headline.js';
import {
  createIndex,
  ingestDocument,
  ingestDocuments,
  SMALL_WRITE_PENDING_LIST_KB,
  sql,
  type IndexRow,
} from '../../shared/document-index/store.js';
import {
  encodeVector,
  ExactVectorBackend,
  pruneVectorLog,
  TopK,
  vectorBackend,
  VectorSet,
  type VectorHit,
} from '../../shared/document-index/vectors.js';
import { chunkText } from '../../shared/document-index/chunking.js';
import { localEmbed } from '../../shared/document-index/local-embedding.js';
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

  it('prunes the log one pruner at a time: a prune while another runs does nothing and fails nothing', async () => {
    const index = await createIndex(em(), tenant, 'one-pruner', NO_CHUNKING);
    await add(em(), index, 'a', 'Moths fly towards light.');
    const logged = async () =>
      Number(
        (await sql<{ n: string }>(em(), 'select count(*) as n from doc_vector_log where index_id = ?', [index.id]))[0]!
          .n,
      );
    const before = await logged();
    expect(before).toBeGreaterThan(0);
    const [floor] = await sql<{ vector_log_floor: string }>(
      em(),
      'select vector_log_floor from doc_indexes where id = ?',
      [index.id],
    );
    // Another pruner's transaction holds the pruners' lock: this prune (and an ingestion running one) goes on.
    const other = new pg.Client({ connectionString: stack.db.url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(`select pg_advisory_xact_lock(hashtextextended('doc_vector_log', 15))`);
      await pruneVectorLog(em(), 0);
      expect(await logged()).toBe(before);
      expect(await add(em(), index, 'b', 'Beetles crawl under stones.')).toMatchObject({ status: 'added' });
      await other.query('commit');
    } finally {
      await other.end();
    }
    await pruneVectorLog(em(), 0);
    expect(await logged()).toBe(0);
    const [raised] = await sql<{ vector_log_floor: string }>(
      em(),
      'select vector_log_floor from doc_indexes where id = ?',
      [index.id],
    );
    expect(BigInt(raised!.vector_log_floor)).toBeGreaterThan(BigInt(floor!.vector_log_floor));
  });
});

/*
 * SEARCH's query path (issue 32): the one statement that ranks, fuses and writes snippets gives the reciprocal rank
 * fusion of the lexical and vector rankings exactly; the lexical ranking is the chunks holding every query
 * word, or those holding any when none does; the first search of an index in a process does not wait for
 * its vectors to load; a second API process's write is seen at the next hybrid search of the first.
 */
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

async function corpusIndex(name: string): Promise<IndexRow> {
  const index = await createIndex(em(), tenant, name, NO_CHUNKING);
  for (const [path, text] of CORPUS) await add(em(), index, path, text);
  return index;
}

const search = (backend: ExactVectorBackend, index: IndexRow, q: string, m = em()) =>
  hybridSearch(m, tenant, [{ id: index.id, name: index.name }], q, 10, embedder, backend);
const pathsOf = (hits: SearchHit[]) => hits.map((h) => h.filepath);

describe('SEARCH: the fused statement', () => {
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

describe("SEARCH: the lexical ranking's generic plan", () => {
  it('parses the query once per tier, not once per matching row (the tsquery a row of the FROM list)', async () => {
    const index = await corpusIndex('plan');
    const lex = lexicalCte(tenant, [index.id], 'restore a backup');
    let n = 0;
    const text = `with ${lex.text} select id from lex`.replace(/\?/g, () => `$${++n}`);
    const literal = (v: unknown) => `'${String(v).replace(/'/g, "''")}'`;
    const client = new pg.Client({ connectionString: stack.db.url });
    await client.connect();
    try {
      // What SEARCH's prepared statement runs once PostgreSQL settles on a plan for any parameters.
      await client.query('set plan_cache_mode = force_generic_plan');
      await client.query(`prepare lex_plan as ${text}`);
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `explain (verbose, costs off) execute lex_plan(${lex.params.map(literal).join(', ')})`,
      );
      const plan = rows.map((r) => r['QUERY PLAN']);
      const parsed = plan.filter((line) => line.includes('to_tsquery'));
      expect(parsed.filter((line) => /Function Scan on pg_catalog\.to_tsquery/.test(line))).toHaveLength(2);
      expect(
        parsed.filter((line) => line.includes('ts_rank_cd')),
        plan.join('\n'),
      ).toEqual([]);
      expect(plan.filter((line) => line.includes('ts_rank_cd')).length).toBeGreaterThan(0);
      // The ranking it plans is the one SEARCH answers.
      const ranked = await client.query<{ id: string }>(`execute lex_plan(${lex.params.map(literal).join(', ')})`);
      expect(ranked.rows.map((r) => r.id)).toEqual(
        (await lexicalRanking(em(), tenant, [index.id], 'restore a backup')).map((r) => r.id),
      );
      expect(ranked.rows.length).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
  });
});

describe('SEARCH: the first search of an index in a process', () => {
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

describe('SEARCH: its phases, traced for the benchmark', () => {
  it('reports each search of the cached path in order to the sink while one is set, and nothing once unset', async () => {
    const index = await corpusIndex('phases');
    const backend = new ExactVectorBackend(64 * MB);
    const phases: SearchPhases[] = [];
    let hits: SearchHit[] | undefined;
    tracePhases((p) => phases.push(p));
    try {
      await search(backend, index, 'night incidents'); // ranked among the matches while the set loads: not traced
      expect(phases).toEqual([]);
      await backend.settled();
      hits = await search(backend, index, 'night incidents');
      expect(hits.length).toBeGreaterThan(0);
      expect(phases).toHaveLength(1);
      const order = ['start', 'built', 'sent', 'embedded', 'scanned', 'written', 'answered', 'done'] as const;
      const times = order.map((k) => phases[0]![k]);
      for (const t of times) expect(t).toBeTypeOf('number');
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    } finally {
      tracePhases(null);
    }
    // Untraced, the same search answers the same rows, and nothing is reported.
    const again = await search(backend, index, 'night incidents');
    expect(again.map((h) => [h.chunk_id, h.score, h.snippet])).toEqual(
      hits!.map((h) => [h.chunk_id, h.score, h.snippet]),
    );
    expect(phases).toHaveLength(1);
  });
});

describe('SEARCH in two API processes', () => {
  it("each hybrid search sees the other's writes, the cache catching up from the change log", async () => {
    const index = await corpusIndex('replicas-hybrid');
    const a = new ExactVectorBackend(64 * MB);
    const b = new ExactVectorBackend(64 * MB);
    await a.nearest(em(), tenant, [index.id], embedder.collection, [1], 1);
    await b.nearest(otherEm(), tenant, [index.id], embedder.collection, [1], 1);
    const q = 'flightless birds';
    expect(pathsOf(await search(a, index, q))).not.toContain('kiwi');
    const added = await add(otherEm(), index, 'kiwi', 'Kiwis are flightless birds.');
    const seen = await search(a, index, q);
    expect(seen[0]).toMatchObject({ filepath: 'kiwi', lexical_rank: 1, vector_rank: 1 });
    // Ranked from the answer's changes; written to A's set once the search has answered.
    expect(a.stats.catchUps).toBe(0);
    await a.settled();
    expect(a.stats.catchUps).toBe(1);
    expect(await search(a, index, q)).toEqual(seen);
    await sql(em(), 'delete from doc_documents where id = ?', [added.file_id]);
    expect(pathsOf(await search(b, index, q, otherEm()))).not.toContain('kiwi');
    await b.settled();
    expect(a.stats.loads).toBe(1);
    expect(b.stats.loads).toBe(1);
    expect(a.stats.catchUps).toBe(1);
    expect(b.stats.catchUps).toBe(1);
  });
});

/** A corpus index and a backend that has loaded its vectors (after a first SEARCH). */
async function warmCorpus(name: string) {
  const index = await corpusIndex(name);
  const backend = new ExactVectorBackend(64 * MB);
  await search(backend, index, 'restore a backup');
  await backend.settled();
  return { index, backend };
}

describe('SEARCH: the snippets written while PostgreSQL runs the statement', () => {
  it("are the vector ranking's first five of ten once its ranks 6 to 10 are seldom returned, and all ten once they are again", async () => {
    const index = await createIndex(em(), tenant, 'early-rows', NO_CHUNKING);
    // Six long chunks hold both "alpha" and "beta" (three times: among so many words a single one can share its
    // hashed bucket with another word of the opposite sign) among many other words: the lexical ranking's own
    // (all of its rows), far down the vector ranking. Twelve short ones hold one of them and "delta": the vector
    // ranking's best. Fused, the six in both rankings and the vector ranking's first four are returned.
    const filler = (n: number) =>
      Array.from(
        { length: 150 },
        (_, i) =>
          `${'bcdfghjklmnprstvwz'[(n * 7 + i) % 18]}o${'bcdfghjklmnprstvwz'[i % 18]}u${'bcdfghjklmnprstvwz'[(i * 5 + n) % 18]}i`,
      ).join(' ');
    for (let n = 0; n < 6; n++)
      await add(em(), index, `long${n}`, `${filler(n)} ${'alpha beta '.repeat(3)}${filler(n + 9)}`);
    for (let n = 0; n < 12; n++)
      await add(em(), index, `short${n}`, `${n % 2 ? 'alpha' : 'beta'} delta ${'x'.repeat(n + 3)}`);
    const backend = new ExactVectorBackend(64 * MB);
    await search(backend, index, 'alpha beta');
    await backend.settled();

    const checked = (hits: SearchHit[], q: string) => {
      // Written early or after the answer, each snippet is the one `headline` writes for the query's lexemes.
      const lexemes = tsqueryLexemes(q === 'alpha beta' ? "'alpha' | 'beta'" : "'delta'");
      for (const h of hits) expect(h.snippet, h.filepath).toBe(headline(h.text, lexemes));
      return hits;
    };
    for (let s = 0; s < 20; s++) {
      const hits = checked(await search(backend, index, 'alpha beta'), 'alpha beta');
      const long = hits.filter((h) => h.filepath.startsWith('long'));
      expect(long.map((h) => h.vector_rank! > 10 && h.lexical_rank! <= 6)).toEqual(Array(6).fill(true));
      expect(hits.filter((h) => !h.filepath.startsWith('long')).map((h) => h.vector_rank)).toEqual([1, 2, 3, 4]);
    }
    expect(earlySnippetRows(10)).toBe(5);
    // "delta": both rankings are the twelve short chunks, and the vector ranking's ranks 6 to 10 are returned.
    for (let s = 0; s < 20; s++) checked(await search(backend, index, 'delta'), 'delta');
    expect(earlySnippetRows(10)).toBe(10);
  });
});

describe('SEARCH after writes', () => {
  it('ranks exactly like a fresh load after chunks are added (changed scores merged) and after a top hit is deleted (scanned again)', async () => {
    const { index, backend: warm } = await warmCorpus('after-writes');
    const fresh = async (q: string) => {
      const backend = new ExactVectorBackend(64 * MB);
      await backend.nearest(em(), tenant, [index.id], embedder.collection, [1], 1);
      return search(backend, index, q);
    };
    const q = 'scratch database backup every night';
    await search(warm, index, q);
    await add(otherEm(), index, 'extra', 'A backup of the scratch database is taken every night.');
    await add(otherEm(), index, 'unrelated', 'Penguins swim in cold water.');
    const afterAdd = await search(warm, index, q);
    expect(afterAdd).toEqual(await fresh(q));
    expect(pathsOf(afterAdd)).toContain('extra');
    const top = afterAdd.find((h) => h.vector_rank === 1)!;
    await sql(em(), 'delete from doc_documents where id = ?', [top.file_id]);
    const afterDelete = await search(warm, index, q);
    expect(afterDelete).toEqual(await fresh(q));
    expect(pathsOf(afterDelete)).not.toContain(top.filepath);
    expect(warm.stats.loads).toBe(1);
    expect(warm.stats.catchUps).toBe(2);
    expect(warm.appliedFromAnswers).toBe(2);
    // The budget counts each set as it is after the catch-ups (they grew it in place).
    const usage = warm.usage();
    expect(usage.bytes).toBe(usage.sets.reduce((n, s) => n + s.bytes, 0));
  });

  it('catches a set up row by row after a write larger than an answer carries, and ranks like a fresh load', async () => {
    const { index, backend: warm } = await warmCorpus('after-large-write');
    const q = 'harbour crane backup';
    await search(warm, index, q);
    const docs = Array.from({ length: 1001 }, (_, i) => ({
      path: `bulk${i}`,
      kind: 'text' as const,
      content: `Harbour crane ${i} lifts the backup containers; shift ${i % 7} logs the tonnage.`,
    }));
    await ingestDocuments(otherEm(), index, docs, NO_CHUNKING, embedder);
    const fresh = new ExactVectorBackend(64 * MB);
    await fresh.nearest(em(), tenant, [index.id], embedder.collection, [1], 1);
    const got = await search(warm, index, q);
    expect(got).toEqual(await search(fresh, index, q));
    expect(pathsOf(got).filter((p) => p.startsWith('bulk')).length).toBeGreaterThan(0);
    expect(warm.stats).toMatchObject({ loads: 1, catchUps: 1 });
    expect(warm.appliedFromAnswers).toBe(0); // not from the answer: a catch-up read row by row
    const usage = warm.usage();
    expect(usage.bytes).toBe(usage.sets.reduce((n, s) => n + s.bytes, 0));
  });
});

describe('SEARCH from the cached rows', () => {
  it('answers what the statement path answers (rows, paths, snippets), with and without changes to apply', async () => {
    const { index, backend: withRows } = await warmCorpus('rows-parity');
    const set = withRows.usage().sets.find((s) => s.key.startsWith(`${index.id}|`))!;
    expect(set.rowBytes).toBeGreaterThan(0);
    // A budget that holds the vectors but not their rows: the set is kept without rows.
    const noRows = new ExactVectorBackend(set.bytes - set.rowBytes! / 2);
    await search(noRows, index, 'restore a backup');
    await noRows.settled();
    expect(noRows.usage().sets.map((s) => s.rowBytes)).toEqual([null]);
    const both = async () => {
      for (const q of [...QUERIES, '?!'])
        expect(await search(withRows, index, q), q).toEqual(await search(noRows, index, q));
    };
    await both();
    await add(otherEm(), index, 'extra', 'Every backup of the scratch database is restored on Mondays.');
    await both();
    expect(withRows.stats).toMatchObject({ loads: 1, catchUps: 1 });
    expect(noRows.stats).toMatchObject({ loads: 1, catchUps: 1 });
  });

  it("answers a renamed document's new path in a process that cached its rows (RENAME_DOCUMENT marks its chunks changed)", async () => {
    const { index, backend } = await warmCorpus('rows-rename');
    const before = await search(backend, index, 'restore a backup');
    const top = before[0]!;
    const renamed = await renameDocumentAction(
      { em: otherEm(), config: stack.config, tenant },
      { index_name: index.name, filepath: top.filepath, new_filename: 'renamed.md' },
    );
    expect(renamed.filepath).toBe('renamed.md');
    const after = await search(backend, index, 'restore a backup');
    expect(after[0]).toEqual({ ...top, filepath: 'renamed.md' });
    expect(after.slice(1)).toEqual(before.slice(1));
    expect(backend.stats).toMatchObject({ loads: 1, catchUps: 1 });
  });

  it('answers nothing from an index deleted by another process, though its rows stay cached', async () => {
    const { index, backend } = await warmCorpus('rows-gone');
    expect((await search(backend, index, 'restore a backup')).length).toBeGreaterThan(0);
    await deleteIndexAction({ em: otherEm(), config: stack.config, tenant }, index.name);
    expect(await search(backend, index, 'restore a backup')).toEqual([]);
    expect(backend.usage().sets.some((s) => s.key.startsWith(`${index.id}|`) && s.rowBytes)).toBe(true);
  });
});

describe('SEARCH over two indexes after a write to one', () => {
  it('ranks like a fresh load of both, the changed index written after the answer, the other untouched', async () => {
    const [one, two] = [await corpusIndex('multi-one'), await corpusIndex('multi-two')];
    const both = [one, two].map((i) => ({ id: i.id, name: i.name }));
    const q = 'scratch database backup every night';
    const searchBoth = (backend: ExactVectorBackend) => hybridSearch(em(), tenant, both, q, 10, embedder, backend);
    const warm = new ExactVectorBackend(64 * MB);
    await searchBoth(warm);
    await warm.settled();
    const before = await searchBoth(warm);
    await add(otherEm(), two, 'extra', 'A backup of the scratch database is taken every night, and checked.');
    const after = await searchBoth(warm);
    expect(after.find((h) => h.filepath === 'extra')).toMatchObject({ index_name: two.name });
    const fresh = new ExactVectorBackend(64 * MB);
    await fresh.nearest(em(), tenant, [one.id, two.id], embedder.collection, [1], 1);
    expect(after).toEqual(await searchBoth(fresh));
    expect(after).not.toEqual(before);
    await warm.settled();
    expect(warm.stats).toMatchObject({ loads: 2, catchUps: 1 });
    expect(warm.appliedFromAnswers).toBe(1);
    expect(await searchBoth(warm)).toEqual(after);
  });
});

describe('SEARCH after a write through this API', () => {
  it("finds its cached set caught up by ADD_TEXT, RENAME_DOCUMENT and DELETE_DOCUMENT (the answer carries no changes), another process's write still applied from the answer", async () => {
    const index = await corpusIndex('own-writes');
    // The process's own backend: the one the actions catch up (the default install's exact backend).
    const own = await vectorBackend(em(), stack.config);
    if (own.kind !== 'exact') throw new Error(`expected the exact backend, got ${own.kind}`);
    const q = 'scratch database backup every night';
    await search(own, index, q);
    await own.settled();
    const fresh = async () => {
      const backend = new ExactVectorBackend(64 * MB);
      await backend.nearest(em(), tenant, [index.id], embedder.collection, [1], 1);
      return search(backend, index, q);
    };
    const c = () => ({ em: em(), config: stack.config, tenant });
    const [afterWrites, fromAnswers] = [own.appliedAfterWrites, own.appliedFromAnswers];

    const added = await addTextAction(
      c(),
      index.name,
      'A backup of the scratch database is taken every night.',
      { filepath: 'ops/own.md' },
      {},
    );
    expect(added.status).toBe('added');
    expect(own.appliedAfterWrites).toBe(afterWrites + 1);
    const afterAdd = await search(own, index, q);
    expect(pathsOf(afterAdd)).toContain('ops/own.md');
    expect(afterAdd).toEqual(await fresh());

    await renameDocumentAction(c(), { index_name: index.name, filepath: 'ops/own.md', new_filename: 'mine.md' });
    expect(own.appliedAfterWrites).toBe(afterWrites + 2);
    const afterRename = await search(own, index, q);
    expect(pathsOf(afterRename)).toContain('ops/mine.md');
    expect(pathsOf(afterRename)).not.toContain('ops/own.md');
    expect(afterRename).toEqual(await fresh());

    await deleteDocumentAction(c(), { index_name: index.name, filepath: 'ops/mine.md' });
    expect(own.appliedAfterWrites).toBe(afterWrites + 3);
    const afterDelete = await search(own, index, q);
    expect(pathsOf(afterDelete)).not.toContain('ops/mine.md');
    expect(afterDelete).toEqual(await fresh());
    // None of those searches applied changes from its answer: the writes had caught the set up.
    expect(own.appliedFromAnswers).toBe(fromAnswers);

    // Another process's write (its own pool, not this API's actions) reaches the next search's answer.
    await add(otherEm(), index, 'theirs', 'Their backup of the scratch database runs every night.');
    expect(own.appliedAfterWrites).toBe(afterWrites + 3);
    const afterTheirs = await search(own, index, q);
    expect(pathsOf(afterTheirs)).toContain('theirs');
    expect(afterTheirs).toEqual(await fresh());
    await own.settled();
    expect(own.appliedFromAnswers).toBe(fromAnswers + 1);
  });
});

describe('SEARCH after the change log was pruned', () => {
  it('reloads the index whole (generations read with the lexical ranking) and answers the current vectors', async () => {
    const { index, backend } = await warmCorpus('pruned-hybrid');
    expect(pathsOf(await search(backend, index, 'flightless birds'))).not.toContain('kiwi');
    await add(otherEm(), index, 'kiwi', 'Kiwis are flightless birds.');
    await pruneVectorLog(em(), 0);
    const seen = await search(backend, index, 'flightless birds');
    expect(seen[0]).toMatchObject({ filepath: 'kiwi', lexical_rank: 1, vector_rank: 1 });
    expect(backend.stats.loads).toBe(2);
    expect(backend.stats.catchUps).toBe(0);
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

describe('VectorSet scan arithmetic', () => {
  /** The unit vectors as the set keeps them (float4), and each row's cosine summed in dimension order. */
  const unit = (v: number[]) => {
    const f = Float32Array.from(v);
    let n = 0;
    for (const x of f) n += x * x;
    const s = 1 / Math.sqrt(n);
    return Float32Array.from(f, (x) => x * s);
  };
  const unitQuery = (q: number[]) => {
    let n = 0;
    for (const x of q) n += x * x;
    const out = Float32Array.from(q);
    const s = 1 / Math.sqrt(n);
    for (let i = 0; i < out.length; i++) out[i]! *= s;
    return out;
  };

  it('gives each row the same double as a dimension-by-dimension dot product, for 1 to 9 query dimensions, after paged appends', () => {
    let seed = 11;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
    const dim = 40;
    const rows = Array.from({ length: 9500 }, (_, i) => ({
      id: `r${String(i).padStart(5, '0')}`,
      v: Array.from({ length: dim }, (_, d) => ((i + d) % 3 === 0 ? 0 : rnd())),
    }));
    // A whole load appends page by page (pages of 1,000 rows, crossing the 4,096-row blocks mid-page).
    const paged = VectorSet.of(
      0n,
      rows.slice(0, 1000).map((r) => r.id),
      rows.slice(0, 1000).map((r) => encodeVector(r.v)),
    );
    for (let at = 1000; at < rows.length; at += 1000) {
      const page = rows.slice(at, at + 1000);
      paged.append(
        page.map((r) => r.id),
        page.map((r) => encodeVector(r.v)),
      );
    }
    const units = rows.map((r) => ({ id: r.id, u: unit(r.v) }));
    for (let nonZero = 1; nonZero <= 9; nonZero++) {
      const q = Array.from({ length: dim }, (_, d) => (d % 4 === 1 && d < nonZero * 4 ? rnd() : 0));
      const uq = unitQuery(q);
      const want = units
        .map(({ id, u }) => {
          let sum = 0;
          for (let d = 0; d < dim; d++) if (uq[d] !== 0) sum += uq[d]! * u[d]!;
          return { id, sim: sum };
        })
        .filter((h) => h.sim > 0)
        .sort((x, y) => y.sim - x.sim || (x.id < y.id ? -1 : 1))
        .slice(0, 25);
      const top = new TopK(25);
      paged.scan(q, top);
      expect(top.hits, `${nonZero} dimensions`).toEqual(want);
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

  it("embeds with the local embedder's embedNow inside the write, never embed(): each stored vector is its own chunk's, and a failure there rolls the batch back", async () => {
    const cfg = { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
    const index = await createIndex(em(), tenant, 'batch-embed-now', cfg);
    const doc = (path: string, content: string) => ({ path, kind: 'text' as const, content });
    expect(embedder.embedNow, 'the default install embeds locally').toBeTypeOf('function');
    const calls: string[][] = [];
    const counted: Embedder = {
      ...embedder,
      embed: () => Promise.reject(new Error('embed() is not called when embedNow is there')),
      embedNow: (texts) => (calls.push(texts), embedder.embedNow!(texts)),
    };
    const docs = [
      doc('p', 'Pears ripen off the tree. Pears bruise easily when ripe.'),
      doc('q', 'Quinces are hard and sour. Quinces turn pink when cooked slowly.'),
    ];
    const out = await ingestDocuments(em(), index, docs, cfg, counted);
    const chunked = docs.map((d) => chunkText(d.content, cfg));
    expect(chunked.every((c) => c.length >= 2)).toBe(true);
    expect(out.map((o) => [o.filepath, o.status, o.chunks])).toEqual(
      docs.map((d, i) => [d.path, 'added', chunked[i]!.length]),
    );
    expect(calls).toEqual(chunked);
    const stored = await sql<{ path: string; seq: number; text: string; vec: Buffer }>(
      em(),
      `select d.path, c.seq, c.text, e.vec from doc_chunks c join doc_documents d on d.id = c.document_id
         join doc_embeddings e on e.chunk_id = c.id and e.collection = ?
         where c.index_id = ? order by d.path, c.seq`,
      [embedder.collection, index.id],
    );
    expect(stored.map((r) => [r.path, r.seq, r.text])).toEqual(
      docs.flatMap((d, i) => chunked[i]!.map((text, seq) => [d.path, seq, text])),
    );
    for (const r of stored) expect(Buffer.compare(r.vec, encodeVector(localEmbed(r.text))), r.text).toBe(0);

    // The embedder failing inside the transaction: the batch's replacement of `p` and its new `r` are rolled back.
    const broken: Embedder = {
      ...embedder,
      embedNow: () => {
        throw new Error('embedder broke');
      },
    };
    await expect(
      ingestDocuments(em(), index, [doc('p', 'Pears replaced.'), doc('r', 'Raspberries.')], cfg, broken),
    ).rejects.toThrow('embedder broke');
    const after = await sql<{ path: string; content: string; chunks: string; vectors: string }>(
      em(),
      `select d.path, d.content, count(distinct c.id) as chunks, count(e.chunk_id) as vectors from doc_documents d
         join doc_chunks c on c.document_id = d.id left join doc_embeddings e on e.chunk_id = c.id
         where d.index_id = ? group by d.path, d.content order by d.path`,
      [index.id],
    );
    expect(after.map((a) => [a.path, a.content, Number(a.chunks), Number(a.vectors)])).toEqual(
      docs.map((d, i) => [d.path, d.content, chunked[i]!.length, chunked[i]!.length]),
    );
    // A provider's embedder (no `embedNow`) failing: nothing written either, and the index still takes writes.
    const provider: Embedder = {
      ...embedder,
      embedNow: undefined,
      embed: () => Promise.reject(new Error('provider down')),
    };
    await expect(ingestDocuments(em(), index, [doc('r', 'Raspberries.')], cfg, provider)).rejects.toThrow(
      'provider down',
    );
    const ok = await ingestDocuments(em(), index, [doc('r', 'Raspberries.')], cfg, {
      ...embedder,
      embedNow: undefined,
    });
    expect(ok.map((o) => [o.filepath, o.status, o.chunks])).toEqual([['r', 'added', 1]]);
  });
});

describe('batched ingestions at once', () => {
  it('write other paths side by side, and the same paths one after the other: every path stored once, with its chunks and vectors, and caches caught up', async () => {
    const cfg = { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' as const };
    const index = await createIndex(em(), tenant, 'batches-at-once', cfg);
    const cached = new ExactVectorBackend(64 * MB);
    const nearest = async (backend: ExactVectorBackend, text: string) =>
      (await backend.nearest(em(), tenant, [index.id], embedder.collection, await qv(text), 10)).map((h) => h.id);
    await ingestDocuments(
      em(),
      index,
      [{ path: 'seed', kind: 'text', content: 'Seed text about orchards.' }],
      cfg,
      embedder,
    );
    expect(await nearest(cached, 'orchards')).toHaveLength(1);

    const fruit = ['apple', 'banana', 'cherry', 'damson', 'elder', 'fig', 'grape', 'hazel'];
    const text = (path: string, writer: number) =>
      `${path} written by writer ${writer}. The ${path} trees of writer ${writer} grow in rows. ${path} harvest ${writer}.`;
    // Six writers: three of their own paths, three of the same eight paths in different orders (so two of them
    // may each wait on the other's rows).
    const batches = [0, 1, 2, 3, 4, 5].map((w) => {
      const paths = w < 3 ? fruit.map((f) => `own-${w}/${f}`) : w === 4 ? [...fruit].reverse() : fruit;
      return paths.map((path) => ({ path, kind: 'text' as const, content: text(path, w) }));
    });
    // The cached set searched while the batches run (each search catches it up from the change log).
    let writing = true;
    const searching = (async () => {
      let searches = 0;
      for (; writing || searches < 1; searches++) await nearest(cached, 'trees in rows');
      return searches;
    })();
    const outcomes = await Promise.all(batches.map((b) => ingestDocuments(em(), index, b, cfg, embedder))).finally(
      () => (writing = false),
    );
    expect(await searching).toBeGreaterThan(0);
    for (const [w, out] of outcomes.entries()) {
      expect(out.map((o) => o.filepath)).toEqual(batches[w]!.map((d) => d.path));
      if (w < 3) expect(out.map((o) => o.status)).toEqual(fruit.map(() => 'added'));
    }
    // A shared path: added by the writer that committed first, replaced by the two after it.
    for (const f of fruit) {
      const statuses = outcomes.slice(3).map((out) => out.find((o) => o.filepath === f)!.status);
      expect(statuses.sort(), f).toEqual(['added', 'updated', 'updated']);
    }

    const stored = await sql<{ path: string; content: string; chunk_count: number; chunks: string; vectors: string }>(
      em(),
      `select d.path, d.content, d.chunk_count, count(distinct c.id) as chunks, count(e.chunk_id) as vectors
         from doc_documents d join doc_chunks c on c.document_id = d.id
         left join doc_embeddings e on e.chunk_id = c.id and e.collection = ?
         where d.index_id = ? group by d.id order by d.path`,
      [embedder.collection, index.id],
    );
    const paths = [...new Set(batches.flat().map((d) => d.path)), 'seed'].sort();
    expect(stored.map((d) => d.path)).toEqual(paths);
    for (const d of stored) {
      const written = batches
        .flat()
        .filter((b) => b.path === d.path)
        .map((b) => b.content);
      if (d.path !== 'seed') expect(written).toContain(d.content);
      expect([Number(d.chunks), Number(d.vectors)], d.path).toEqual([d.chunk_count, d.chunk_count]);
      expect(d.chunk_count, d.path).toBe(chunkText(d.content, cfg).length);
    }
    // Each document's chunks are its own text's, in order (no chunk of a replaced or concurrent document).
    const chunkTexts = await sql<{ path: string; texts: string[] }>(
      em(),
      `select d.path, array_agg(c.text order by c.seq) as texts from doc_documents d
         join doc_chunks c on c.document_id = d.id where d.index_id = ? group by d.path`,
      [index.id],
    );
    for (const c of chunkTexts)
      expect(c.texts, c.path).toEqual(chunkText(stored.find((d) => d.path === c.path)!.content, cfg));

    // The cache loaded before the writes catches up from the change log and ranks like a fresh load.
    for (const q of ['cherry trees in rows', 'writer 4 harvest', 'own fig', 'orchards'])
      expect(await nearest(cached, q), q).toEqual(await nearest(new ExactVectorBackend(64 * MB), q));
  });
});

describe("the full-text index's pending list", () => {
  it('stays within SMALL_WRITE_PENDING_LIST_KB after one-document writes (ADD_TEXT), while a batch leaves its entries to the checkpoint', async () => {
    const index = await createIndex(em(), tenant, 'pending-list', NO_CHUNKING);
    // Autovacuum merges pending lists too: kept off the table while the test counts pages.
    await sql(em(), 'alter table doc_chunks set (autovacuum_enabled = false)');
    try {
      await pendingListCase(index);
    } finally {
      await sql(em(), 'alter table doc_chunks reset (autovacuum_enabled)');
    }
  });
});

/** Counts the pending pages one-document writes and one batch leave (`merge` takes them off). */
async function pendingListCase(index: IndexRow): Promise<void> {
  // Pages taken off the pending list by merging it (8 kB each).
  const merge = async () =>
    Number(
      (await sql<{ pages: string }>(em(), `select gin_clean_pending_list('doc_chunks_tsv'::regclass) as pages`))[0]!
        .pages,
    );
  await merge();
  // 400 words no other document has: about 400 pending entries a document.
  const text = (n: number) => Array.from({ length: 400 }, (_, i) => `w${n}x${i}`).join(' ');
  for (let n = 0; n < 30; n++) await add(em(), index, `small${n}.txt`, text(n));
  const afterSmall = await merge();
  expect(afterSmall).toBeLessThanOrEqual(SMALL_WRITE_PENDING_LIST_KB / 8 + 1);
  // The same amount in one batch (the checkpointed ingestions' writes): PostgreSQL's 4 MB limit applies.
  await ingestDocuments(
    em(),
    index,
    Array.from({ length: 30 }, (_, n) => ({ path: `batch${n}.txt`, kind: 'text', content: text(100 + n) })),
    NO_CHUNKING,
    embedder,
  );
  const afterBatch = await merge();
  expect(afterBatch).toBeGreaterThan(3 * (SMALL_WRITE_PENDING_LIST_KB / 8 + 1));
  // Every word is still found.
  expect(await lexicalRanking(em(), tenant, [index.id], 'w7x399')).toHaveLength(1);
  expect(await lexicalRanking(em(), tenant, [index.id], 'w107x0')).toHaveLength(1);
}
