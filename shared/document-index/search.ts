import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sqlBound, sqlBoundStatement, sqlBoundWhile } from '../db/sql.js';
import type { Embedder } from './embedder.js';
import {
  guessQueryLexemes,
  HEADLINE_OPTIONS,
  headline,
  PLAIN_SNIPPET_CHARS,
  type QueryLexemes,
  sameLexemes,
  tsqueryLexemes,
} from './headline.js';
import { onProcessReset } from '../process-state.js';
import { pgArray } from './pages.js';
import { sql } from './store.js';
import { TopK } from './vector-sets.js';
import type { ExactVectorBackend, VectorBackend, VectorChange, VectorCte, VectorHit, VectorSearch } from './vectors.js';

/** Candidates each ranking contributes to the fusion. */
export const CANDIDATES = 50;
/** The reciprocal-rank-fusion constant (Cormack et al., 2009). */
export const RRF_K = 60;

export interface SearchHit {
  index_name: string;
  filepath: string;
  file_id: string;
  chunk_id: string;
  chunk_index: number;
  score: number;
  lexical_rank: number | null;
  vector_rank: number | null;
  snippet: string;
  text: string;
}

/** The query's distinct words (letters and digits), lower-cased; the last query's kept (read-only). */
function queryWords(query: string): readonly string[] {
  if (lastWords.query !== query)
    lastWords = {
      query,
      words: [...new Set([...query.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0].toLowerCase()))],
    };
  return lastWords.words;
}

/**
 * The last query's words: a search reads them four times (its AND and OR expressions, the snippets' query, the
 * early snippets), and the Unicode pattern cost about 3 µs a time.
 */
let lastWords: { query: string | null; words: readonly string[] } = { query: null, words: [] };
onProcessReset('shared/document-index/search.ts#lastWords', () => {
  lastWords = { query: null, words: [] };
});

/** The query's words OR-ed into a `to_tsquery` expression (null when it has none). */
export function orQuery(query: string): string | null {
  const words = queryWords(query);
  return words.length ? words.join(' | ') : null;
}

/** The query's words AND-ed into a `to_tsquery` expression (null when it has none). */
export function andQuery(query: string): string | null {
  const words = queryWords(query);
  return words.length ? words.join(' & ') : null;
}

/**
 * Matching chunks the lexical ranking scores at most: a query of very common words ranks this many of
 * its matches (in storage order), so its cost stays bounded at any index size.
 */
export const LEXICAL_CANDIDATE_CAP = 5000;

/**
 * Chunks holding every query word that make the OR ranking unnecessary: with at least this many, the
 * lexical half ranks them alone (the vector half brings the looser matches); with fewer, the chunks
 * holding any word are ranked after them. Ranking every chunk that holds any word is what made SEARCH
 * slow at scale (about 1,000 rows to fetch and score for three words at 100k chunks, against one AND
 * match), so the OR ranking is kept for queries no chunk matches in full.
 */
export const AND_MATCHES_ENOUGH = 1;

/**
 * The lexical ranking as SQL: a CTE `lex(id, rank)` of at most `CANDIDATES` chunks, and its parameters.
 * Chunks holding every query word come first (`ts_rank_cd` over the stored tsvector, GIN-indexed, best
 * first); only when fewer than `AND_MATCHES_ENOUGH` hold them all are the chunks matching any word
 * ranked after them (the OR ranking is not even evaluated otherwise: a one-time filter). Each tier
 * scores at most `LEXICAL_CANDIDATE_CAP` matches. Words are letters and digits only, so they are safe in a tsquery.
 */
export function lexicalCte(tenant: string, indexIds: string[], query: string): { text: string; params: unknown[] } {
  const and = andQuery(query);
  const or = orQuery(query);
  if (!and || !or) return { text: 'lex as (select null::uuid as id, null::bigint as rank where false)', params: [] };
  const scope = [tenant, pgArray(indexIds), LEXICAL_CANDIDATE_CAP];
  // The tsquery is a row of the FROM list, made once: written into the expressions instead, a prepared
  // statement's generic plan (its text unknown at planning) parsed it again for every matching row's
  // `ts_rank_cd` (3 ms of 8 for a query whose words a thousand chunks hold at 100k).
  const tier = (tsq: string) => `select m.id, ts_rank_cd(m.tsv, m.q) as r from (
       select c.id, c.tsv, q.q from to_tsquery('english', ?) q(q), doc_chunks c
         where c.tsv @@ q.q and c.tenant = ? and c.index_id = any(?::uuid[]) limit ?
     ) m${tsq}`;
  return {
    text: `lex_and as materialized (${tier('')} order by r desc, m.id limit ?),
     lex_or as (${tier(' where (select count(*) from lex_and) < ?')} order by r desc, m.id limit ?),
     lex as (
       select id, row_number() over (order by t, r desc, id) as rank from (
         select id, 0 as t, r from lex_and
         union all
         select id, 1 as t, r from lex_or where id not in (select id from lex_and)
       ) u order by rank limit ?)`,
    params: [
      ...[and, ...scope, CANDIDATES],
      ...[or, ...scope, AND_MATCHES_ENOUGH, CANDIDATES + AND_MATCHES_ENOUGH],
      CANDIDATES,
    ],
  };
}

/**
 * Lexical ranking alone (PostgreSQL full text): the chunks holding every query word; when none does,
 * those holding any; best `ts_rank_cd` first, 50 at most.
 */
export async function lexicalRanking(em: EntityManager, tenant: string, indexIds: string[], query: string) {
  const lex = lexicalCte(tenant, indexIds, query);
  return sql<{ id: string }>(em, `with ${lex.text} select id from lex order by rank`, lex.params);
}

/** Vector ranking: the process's vector backend (pgvector's HNSW index, else the exact cached scan), 50 candidates. */
export async function vectorRanking(
  em: EntityManager,
  backend: VectorBackend,
  tenant: string,
  indexIds: string[],
  collection: string,
  queryVector: number[],
): Promise<VectorHit[]> {
  return backend.nearest(em, tenant, indexIds, collection, queryVector, CANDIDATES);
}

/** The exact path's vector ranking, computed in the API process, handed to the statement in rank order. */
export function rankedIds(hits: readonly VectorHit[]): VectorCte {
  return {
    text: 'vec as (select v.id, v.ord as rank from unnest(?::uuid[]) with ordinality as v(id, ord))',
    params: [pgArray(hits.map((h) => h.id))],
  };
}

/** A row of a search's answer: a hit's chunk, ranks, document and snippet. */
interface FusedRow {
  id: string;
  score: number;
  lexical_rank: string | number | null;
  vector_rank: string | number | null;
  seq: number;
  text: string;
  file_id: string;
  path: string;
  index_name: string;
  snippet: string;
}

/**
 * One statement for the whole search (the pgvector path, and the exact path while an index's vectors
 * load): the lexical ranking (`lexicalCte`), the vector ranking (`vec`), their reciprocal rank fusion
 * (score = sum of 1 / (60 + rank), ties by chunk id), the best `topN` chunks with their documents, and
 * a `ts_headline` snippet for those rows only.
 */
async function fusedSearch(
  em: EntityManager,
  tenant: string,
  indexIds: string[],
  query: string,
  topN: number,
  vec: VectorCte,
): Promise<FusedRow[]> {
  const s = fusedStatement(tenant, indexIds, query, topN, vec);
  return sql<FusedRow>(em, s.text, s.params);
}

/** `fusedSearch`'s statement, with `?` placeholders. */
function fusedStatement(tenant: string, indexIds: string[], query: string, topN: number, vec: VectorCte) {
  const lex = lexicalCte(tenant, indexIds, query);
  const fusion = fusionSql(tenant, indexIds, query, topN);
  return {
    text: `with ${lex.text}, ${vec.text}, ${fusion.fused}
     ${fusion.rows}
     order by f.score desc, f.id`,
    params: [...lex.params, ...vec.params, ...fusion.params],
  };
}

/**
 * The fusion of the `lex` and `vec` CTEs by reciprocal rank (`fused`, its best `topN`) and the select of
 * those rows with their documents and `ts_headline` snippets (`rows`, aliasing `fused` as `f`); `params`
 * are theirs, in the order they appear (the `fused` CTE's, then the snippet's query).
 */
function fusionSql(tenant: string, indexIds: string[], query: string, topN: number) {
  const q = orQuery(query);
  const snippet = snippetSql(q);
  return {
    fused: `fused as (
       select c.id, c.seq, c.text, c.document_id, c.index_id, l.rank as lexical_rank, v.rank as vector_rank,
           coalesce(1::float8 / (${RRF_K} + l.rank), 0) + coalesce(1::float8 / (${RRF_K} + v.rank), 0) as score
         from lex l full join vec v on v.id = l.id
         join doc_chunks c on c.id = coalesce(l.id, v.id) and c.tenant = ? and c.index_id = any(?::uuid[])
         order by score desc, c.id limit ?)`,
    rows: `select f.id, f.score, f.lexical_rank, f.vector_rank, f.seq, f.text, d.id as file_id, d.path,
         i.name as index_name,
         ${snippet.column} as snippet
       from fused f ${snippet.join} join doc_documents d on d.id = f.document_id join doc_indexes i on i.id = f.index_id`,
    params: [tenant, pgArray(indexIds), topN, ...(q ? [q] : [])],
  };
}

/**
 * The snippet of a row `f` in SQL (`column`): `ts_headline` for a query with words, else the text's start. With
 * words, `join` (written after `f` in the FROM list) makes the OR query's tsquery (its `?`) once, a row `hq`:
 * inside `ts_headline` a prepared statement's generic plan would parse it again for every row.
 */
function snippetSql(q: string | null): { column: string; join: string } {
  return q
    ? {
        column: `ts_headline('english', f.text, hq.q, '${HEADLINE_OPTIONS}')`,
        join: `cross join to_tsquery('english', ?) hq(q)`,
      }
    : { column: `left(f.text, ${PLAIN_SNIPPET_CHARS})`, join: '' };
}

function hitOf(r: FusedRow): SearchHit {
  return {
    index_name: r.index_name,
    filepath: r.path,
    file_id: r.file_id,
    chunk_id: r.id,
    chunk_index: Number(r.seq),
    score: Math.round(Number(r.score) * 1e6) / 1e6,
    lexical_rank: r.lexical_rank === null ? null : Number(r.lexical_rank),
    vector_rank: r.vector_rank === null ? null : Number(r.vector_rank),
    snippet: r.snippet,
    text: r.text,
  };
}

/**
 * Hybrid search: the lexical and the vector rankings (50 candidates each) fused by reciprocal rank
 * fusion, score = sum over the rankings of 1 / (60 + rank), ties broken by chunk id.
 *
 * - pgvector: the vector ranking is a CTE of the same statement (HNSW over the native `emb` column), unless
 *   the indexes are cached in this process (`PgvectorBackend.cache`: they fit its budget, loaded in the
 *   background after their first search), then as below; an index whose HNSW build a rechunk's swap requested
 *   and that is not built yet (`awaitingSearch`) is ranked as an exact index not cached yet, below.
 * - exact, every searched index cached in this process (`cachedSearch`): one prepared statement (the
 *   lexical ranking, the indexes' generations and the chunks changed since the cached ones) is sent first
 *   and the cached sets are scanned while PostgreSQL runs it; the two rankings are fused here and the best
 *   rows, with their snippets, come from the rows cached beside the vectors. A write costs the changed
 *   chunks in the statement's answer, no extra round trip.
 * - exact, an index not cached yet: its vectors are loaded in the background, and meanwhile the vector
 *   ranking is exact among the chunks matching a query word (`ExactVectorBackend.nearestAmong`), so no
 *   search waits for a whole load.
 */
export async function hybridSearch(
  em: EntityManager,
  tenant: string,
  indexes: Array<{ id: string; name: string }>,
  query: string,
  topN: number,
  embedder: Embedder,
  backend: VectorBackend,
): Promise<SearchHit[]> {
  if (!indexes.length || !query.trim()) return [];
  const sink = phaseSink; // the sink as the search began: a later `tracePhases` does not change where it reports
  const trace: Partial<SearchPhases> | null = sink && { start: performance.now() };
  const ids = indexes.map((i) => i.id);
  const search = { tenant, indexIds: ids, collection: embedder.collection, k: CANDIDATES };
  const rows = await fusedRows(em, backend, search, queryVector(embedder, query), query, topN, trace);
  if (sink && trace?.sent !== undefined && trace.done !== undefined) sink(trace as SearchPhases);
  return rows.map(hitOf);
}

/**
 * Where a search of the cached path with rows spent its time (`performance.now()` readings), for the benchmark:
 * reported to the sink `tracePhases` sets, and read only while one is set.
 */
export interface SearchPhases {
  start: number;
  /**
   * The statement built: the cached sets found, their generations read (and a provider's embedding awaited,
   * when the embedder is not synchronous: `embedded` then follows `sent` at once).
   */
  built: number;
  /** A pooled connection acquired and the statement written to it: PostgreSQL runs it from here. */
  sent: number;
  /** This process's work while PostgreSQL runs it: the query embedded, the sets scanned, the early snippets written. */
  embedded: number;
  scanned: number;
  written: number;
  /** The answer read. */
  answered: number;
  /**
   * The rows ready: fused, read from the cache, the other snippets written (and, after another process's write,
   * any catch-up the answer's changes needed, or a second statement for rows the cache does not hold).
   */
  done: number;
}

let phaseSink: ((phases: SearchPhases) => void) | null = null;
onProcessReset('shared/document-index/search.ts#phaseSink', () => (phaseSink = null));

/** Reports each search's phases to `sink` from now on (null: no longer). */
export function tracePhases(sink: ((phases: SearchPhases) => void) | null): void {
  phaseSink = sink;
}

/** Notes the time a phase ended, when the search is traced. */
function mark(trace: Partial<SearchPhases> | null, phase: Exclude<keyof SearchPhases, 'start'>): void {
  if (trace) trace[phase] = performance.now();
}

/**
 * The query's vector: computed at once when the embedder embeds synchronously (the local one), so the cached
 * path computes it while PostgreSQL runs the statement, which needs no vector (`now`); else a provider's
 * request, awaited first (`later`).
 */
interface QueryVector {
  /** Whether `now` computes it (the embedder embeds synchronously). */
  readonly synchronous: boolean;
  now(): number[];
  later(): Promise<number[]>;
}

/** Methods, not arrow functions: run through `tsx` (as `npm start` runs), each closure made is also named by `__name`. */
function queryVector(embedder: Embedder, query: string): QueryVector {
  return {
    synchronous: embedder.embedNow !== undefined,
    now() {
      return embedder.embedNow!([query]).vectors[0]!;
    },
    async later() {
      return (await embedder.embed([query])).vectors[0]!;
    },
  };
}

/**
 * A read statement written with `?` placeholders, sent with bound parameters as a prepared statement
 * named by its text, so each pooled connection parses and plans it once (SEARCH's statements are a few
 * fixed texts; planning the fused statement cost more than running it).
 */
function prepared<T extends object>(em: EntityManager, text: string, params: unknown[]): Promise<T[]> {
  const s = preparedStatement(text, params);
  return sqlBound<T>(em, s.text, s.params, s.name);
}

function preparedStatement(text: string, params: unknown[], key?: string) {
  // A statement whose text depends only on `key` is found by it, without hashing its text (a few KB) again.
  const byKey = key === undefined ? undefined : keyedStatements.get(key);
  if (byKey && byKey.source.length === text.length) return { text: byKey.text, name: byKey.name, params };
  let named = namedStatements.get(text);
  if (!named) {
    let n = 0;
    named = {
      text: text.replace(/\?/g, () => `$${++n}`),
      name: `docidx_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`,
    };
    if (namedStatements.size >= 256) namedStatements.clear();
    namedStatements.set(text, named);
  }
  if (key !== undefined) keyedStatements.set(key, { ...named, source: text });
  return { ...named, params };
}

/**
 * Each statement text's numbered form and name, kept so a search does not hash its text again (the texts
 * are a few per searched index count; 256 at most).
 */
let namedStatements = new Map<string, { text: string; name: string }>();
/** `lexicalAndChanges`' statements by their shape (a few keys), with the text each was made from. */
let keyedStatements = new Map<string, { text: string; name: string; source: string }>();
onProcessReset('shared/document-index/search.ts#namedStatements', () => {
  namedStatements = new Map();
});
onProcessReset('shared/document-index/search.ts#keyedStatements', () => {
  keyedStatements = new Map();
});

/**
 * Changed chunks the cached path's statement carries per index (each with its vector and text, a few KB of
 * JSON): past it the answer says only that there are more, and the set catches up row by row instead.
 */
const CHANGES_IN_ANSWER = 1000;

/** What the statement of the cached exact path answers (one row). */
interface LexicalRow {
  /** The lexical ranking's chunk ids, best first. */
  lex: string[] | null;
  /**
   * Index id to [vector generation, log floor, name, changes], the numbers as text; the changes are the chunks
   * changed since the cached set's generation ([chunk id, [base64 vector, position, text, document id, document
   * path] or null when deleted]), null when it has not moved (or the log was pruned past it).
   */
  gens: Record<
    string,
    [string, string, string, Array<[string, [string, number, string, string, string] | null]> | null]
  > | null;
  /** The best rows of the fusion with the vector ranking passed in, with their documents and snippets. */
  rows?: FusedRow[] | null;
  /** The query's lexemes (`to_tsquery('english', …)` as text) for the snippets written here; null without words. */
  lexemes?: string | null;
}

/**
 * The exact path's statement: the lexical ranking; the indexes' vector generations, log floors and names; and
 * the chunks changed since the generations the cached sets have (none in the usual case; after a write by any
 * process they come with this answer), each with its vector and row, read by `doc_vector_changes` (migration
 * `Migration20261130020000DocVectorChanges`) only for an index whose generation moved. Then either
 *
 * - `fusion` given (the vector ranking, chunk ids in rank order, when the cached sets keep no rows): the two
 *   rankings' fusion (as `fusedSearch` fuses them) and its best `topN` rows with their documents and
 *   `ts_headline` snippets; the statement is sent after the scan;
 * - or not: the query's lexemes, for the snippets the caller writes from the cached rows; the statement is
 *   sent before the scan and runs while it does.
 *
 * At most `CHANGES_IN_ANSWER` + 1 changed chunks per index come with the answer. The function reads the log by
 * a bounded generation range (its `(index_id, gen)` index) and each changed chunk by its primary key (a scalar
 * subquery), so no plan can join the changes to a whole-table scan (with a join, a 1M-chunk index's first
 * SEARCH after a write took 2.5 to 4 s).
 */
function lexicalAndChanges(
  tenant: string,
  query: string,
  collection: string,
  cachedAt: Map<string, bigint>,
  fusion: { hits: readonly VectorHit[]; topN: number } | null,
) {
  const ids = [...cachedAt.keys()];
  const lex = lexicalCte(tenant, ids, query);
  const vec = fusion && rankedIds(fusion.hits);
  const fused = fusion && fusionSql(tenant, ids, query, fusion.topN);
  const q = orQuery(query);
  return preparedStatement(
    `with ${lex.text}${vec ? `, ${vec.text}` : ''}${fused ? `, ${fused.fused}, top as (${fused.rows})` : ''}
     select (select json_agg(id order by rank) from lex) as lex,
       (select json_object_agg(i.id, json_build_array(i.vector_generation::text, i.vector_log_floor::text, i.name,
            case when i.vector_generation > c.g and i.vector_log_floor <= c.g
              then doc_vector_changes(i.id, ?, c.g, i.vector_generation, ?) end))
          from unnest(?::uuid[], ?::bigint[]) c(id, g) join doc_indexes i on i.id = c.id and i.tenant = ?) as gens${
            fused
              ? `,
       (select json_agg(t order by t.score desc, t.id) from top t) as rows`
              : q
                ? `,
       to_tsquery('english', ?)::text as lexemes`
                : ''
          }`,
    [
      ...lex.params,
      ...(vec?.params ?? []),
      ...(fused?.params ?? []),
      collection,
      CHANGES_IN_ANSWER + 1,
      pgArray(ids),
      pgArray([...cachedAt.values()].map(String)),
      tenant,
      ...(!fused && q ? [q] : []),
    ],
    // The text depends on whether the query has words and whether the statement fuses, nothing else.
    `lexicalAndChanges:${q ? 'words' : 'none'}:${fused ? 'fused' : 'lexical'}`,
  );
}

/** Reciprocal rank fusion of two rankings (score = sum of 1 / (60 + rank)), best first, ties by chunk id. */
function fuse(lex: readonly string[], vec: readonly VectorHit[]) {
  const fused = new Map<
    string,
    { id: string; score: number; lexical_rank: number | null; vector_rank: number | null }
  >();
  lex.forEach((id, n) => fused.set(id, { id, score: 1 / (RRF_K + n + 1), lexical_rank: n + 1, vector_rank: null }));
  vec.forEach(({ id }, n) => {
    const f = fused.get(id) ?? { id, score: 0, lexical_rank: null, vector_rank: null };
    f.score += 1 / (RRF_K + n + 1);
    f.vector_rank = n + 1;
    fused.set(id, f);
  });
  return [...fused.values()].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The exact path's second statement: the best `topN` of the fused ranking (chunk ids in order) that
 * still exist, with their documents and a `ts_headline` snippet for those rows only.
 */
function fusedRowsOf(
  em: EntityManager,
  tenant: string,
  indexIds: string[],
  query: string,
  topN: number,
  ranked: ReturnType<typeof fuse>,
): Promise<FusedRow[]> {
  const q = orQuery(query);
  const snippet = snippetSql(q);
  return prepared<FusedRow>(
    em,
    `with f as (
       select c.id, c.seq, c.text, c.document_id, c.index_id, f.ord
         from unnest(?::uuid[]) with ordinality f(id, ord)
         join doc_chunks c on c.id = f.id and c.tenant = ? and c.index_id = any(?::uuid[])
         order by f.ord limit ?)
     select f.id, f.seq, f.text, d.id as file_id, d.path, i.name as index_name,
         ${snippet.column} as snippet
       from f ${snippet.join} join doc_documents d on d.id = f.document_id join doc_indexes i on i.id = f.index_id
       order by f.ord`,
    [pgArray(ranked.map((r) => r.id)), tenant, pgArray(indexIds), topN, ...(q ? [q] : [])],
  );
}

/**
 * The exact path with every searched index cached. When the cached sets keep their chunks' rows (the
 * usual case, `ChunkRows`), one statement (`lexicalAndChanges`: the lexical ranking, the generations and
 * the changes since the cached ones) is sent first and the sets are scanned while PostgreSQL runs it (and
 * the vector ranking's best rows' snippets written, `earlySnippets`, as many as `EarlyRows` counts); the
 * two rankings are fused here, and the best rows and their snippets (`headline`, as `ts_headline` writes
 * them) come from the cache: one round trip, overlapped with the scan. When a set keeps no rows (the budget
 * holds only its vectors) the scan comes first and the statement also fuses and reads the best rows with
 * their snippets.
 *
 * Either way, when the statement reports changes (writes since the sets' generations) they are applied and
 * the vector ranking brought up to date (from the changed chunks' scores alone when that is exact, else by a
 * new scan; a set older than the pruned log is reloaded whole), and fused again here. Rows the cache or the
 * statement does not hold (a set reloaded meanwhile, a changed chunk entering the best rows of the second
 * kind, a lexical hit without a vector) are read by a second statement (`fusedRowsOf`).
 */
async function cachedSearch(
  em: EntityManager,
  backend: ExactVectorBackend,
  cached: NonNullable<ReturnType<ExactVectorBackend['peek']>>,
  search: Omit<VectorSearch, 'query'>,
  vector: QueryVector,
  query: string,
  topN: number,
  trace: Partial<SearchPhases> | null,
): Promise<FusedRow[]> {
  const { tenant, indexIds: ids } = search;
  const before = cached.generations();
  const withRows = cached.hasRows();
  let row: LexicalRow | undefined;
  let scanned: VectorHit[];
  let early: EarlySnippets | null = null;
  // The rows the early snippets read, read again for the answer only when the sets moved meanwhile (a read of
  // a large set's row misses the CPU caches: about a microsecond each).
  const readEarly = new Map<string, ReturnType<typeof cached.row>>();
  const readRow = (id: string) => {
    const r = cached.row(id);
    readEarly.set(id, r);
    return r;
  };
  let v: VectorSearch;
  if (withRows) {
    // The statement needs no vector: it is sent first, and the query embedded meanwhile when that is
    // synchronous (else before).
    const embedded = vector.synchronous ? null : await vector.later();
    const statement = lexicalAndChanges(tenant, query, search.collection, before, null);
    mark(trace, 'built');
    [[row], [v, scanned]] = await sqlBoundWhile<LexicalRow, [VectorSearch, VectorHit[]]>(em, statement, () => {
      mark(trace, 'sent');
      const ranked = { ...search, query: embedded ?? vector.now() };
      mark(trace, 'embedded');
      const hits = cached.scan(ranked.query, ranked.k);
      mark(trace, 'scanned');
      early = earlySnippets(query, hits.slice(0, earlyRows.count(topN)), readRow);
      mark(trace, 'written');
      return [ranked, hits];
    });
    mark(trace, 'answered');
  } else {
    v = { ...search, query: await vector.later() };
    scanned = cached.scan(v.query, v.k);
    const statement = lexicalAndChanges(tenant, query, search.collection, before, { hits: scanned, topN });
    [row] = await sqlBoundStatement<LexicalRow>(em, statement);
  }
  const gens = row?.gens ?? {};
  const moved = Object.entries(gens).some(([id, [g]]) => BigInt(g) !== before.get(id));
  if (!withRows && !moved) return row?.rows ?? [];
  const { hits, reloaded, later } = moved
    ? await updatedRanking(em, backend, cached, v, before, row!, scanned)
    : { hits: scanned, reloaded: false, later: undefined };
  try {
    // The changed chunks' rows as the answer read them (null: deleted), before the cached ones.
    const changedRows = new Map(
      (later?.changed ?? []).map(([indexId, c]) => [c.chunk_id, c.vec && c.row ? { indexId, ...c.row } : null]),
    );
    const rowOf = (id: string) =>
      changedRows.has(id)
        ? (changedRows.get(id) ?? undefined)
        : !moved && readEarly.has(id)
          ? readEarly.get(id)
          : cached.row(id);
    // The cached rows serve while the sets searched keep them (a change can drop them, a reload replaces the
    // sets); the chunks of an index gone since (deleted, or not this tenant's) are then left out here, as the
    // statements' joins leave them out otherwise.
    const rowsKept = withRows && !reloaded && cached.hasRows();
    const gone = rowsKept && ids.some((id) => !(id in gens));
    const live = gone ? hits.filter((h) => (rowOf(h.id)?.indexId ?? '') in gens) : hits;
    const ranked = fuse(row?.lex ?? [], live);
    if (!ranked.length) {
      mark(trace, 'done');
      return [];
    }
    const byId = new Map(ranked.map((r) => [r.id, r]));
    const best = ranked.slice(0, topN);
    if (withRows && queryWords(query).length) earlyRows.learn(scanned, best, topN);
    const rows =
      (rowsKept && fromCache(best, rowOf, gens, row?.lexemes ?? null, early)) ||
      fromStatement(best, row?.rows ?? []) ||
      (await fusedRowsOf(em, tenant, ids, query, topN, ranked));
    mark(trace, 'done');
    return rows.map((r) => withRanks(r, byId.get(r.id)!));
  } finally {
    // Changes ranked from the answer are written to the sets once this search has answered (registered after
    // its last await, so the write never lands inside it).
    if (later) backend.deferApply(later.apply);
  }
}

/**
 * The vector ranking brought up to the generations the statement read (`row.gens`). Usually none of the
 * changed chunks was among the scan's hits: the ranking is then the hits and the changed chunks' scores,
 * computed from their vectors (`rankWith`), and the changes are written to the cached sets after the search
 * has answered (`later`). Otherwise the changes are applied first and the ranking updated from the changed
 * chunks' scores alone when that is exact (`rerank`), else the sets scanned again; a set older than the
 * pruned log is reloaded (`reloaded`: the cached sets in `cached` are no longer the backend's).
 */
async function updatedRanking(
  em: EntityManager,
  backend: ExactVectorBackend,
  cached: NonNullable<ReturnType<ExactVectorBackend['peek']>>,
  v: VectorSearch,
  before: Map<string, bigint>,
  row: LexicalRow,
  scanned: VectorHit[],
): Promise<{
  hits: VectorHit[];
  reloaded: boolean;
  /** Changes ranked from the answer but not written yet: `apply` writes them (after the search answers). */
  later?: { changed: Array<[string, VectorChange]>; apply: () => void };
}> {
  const gens = row.gens ?? {};
  const changesOf = (id: string) => gens[id]?.[3] ?? [];
  if (
    Object.entries(gens).some(
      ([id, [, floor]]) => BigInt(floor) > before.get(id)! || changesOf(id).length > CHANGES_IN_ANSWER,
    )
  ) {
    // The log was pruned past a cached set, or more chunks changed than an answer carries (a large
    // ingestion): bring the set up to date by a catch-up read row by row, or a reload.
    const at = Object.fromEntries(Object.entries(gens).map(([id, [g]]) => [id, g]));
    return { hits: await backend.nearestAt(em, at, v.collection, v.query, v.k), reloaded: true };
  }
  const pending: Array<[string, bigint, VectorChange[]]> = [];
  for (const [id, [g]] of Object.entries(gens)) {
    if (BigInt(g) <= before.get(id)!) continue;
    const changes: VectorChange[] = changesOf(id).map(([chunk, stored]) =>
      stored === null
        ? { chunk_id: chunk, vec: null }
        : {
            chunk_id: chunk,
            vec: Buffer.from(stored[0], 'base64'),
            row: { seq: Number(stored[1]), text: stored[2], documentId: stored[3], path: stored[4] },
          },
    );
    pending.push([id, BigInt(g), changes]);
  }
  const applyAll = () => {
    const applied = new Map<string, bigint>();
    for (const [id, g, changes] of pending) if (cached.apply(id, g, changes)) applied.set(id, g);
    return applied;
  };
  const changed = pending.flatMap(([id, , changes]) => changes.map((c): [string, VectorChange] => [id, c]));
  const ranked = cached.rankWith(v.query, v.k, scanned, changed);
  if (ranked) return { hits: ranked, reloaded: false, later: { changed, apply: applyAll } };
  const applied = applyAll();
  const moved = [...cached.generations()].filter(([id, g]) => g !== before.get(id));
  if (!moved.length) return { hits: scanned, reloaded: false };
  const onlyOurs = moved.every(([id, g]) => applied.get(id) === g);
  const hits =
    (onlyOurs &&
      cached.rerank(
        v.query,
        v.k,
        scanned,
        changed.map(([, c]) => c.chunk_id),
      )) ||
    cached.scan(v.query, v.k);
  return { hits, reloaded: false };
}

/**
 * How many of the vector ranking's best rows get their snippets written while PostgreSQL runs the statement
 * (`earlySnippets`): its first `topN / 2` rows always, its next `topN / 2` (ranks 6 to 10 of an answer of
 * ten) while such rows have lately been returned. Reciprocal rank fusion takes its best rows from both
 * rankings: where they share few rows, about half from each, so the vector ranking's ranks 6 to 10 are
 * seldom returned (SEARCH at the default chunk size, chunks
 * of about 3,700 characters, 2,000 searches: ranks 1 to 5 were returned 99, 98, 94, 84 and 61 times in a
 * hundred, ranks 6 to 10 25, 15, 14, 12 and 12); where they share most (chunks of 40 tokens: a query's words
 * are in the few chunks both rank first), nearly all ten are. A snippet not returned took a core from
 * PostgreSQL's backend while it ran the statement on a machine of two cores: with ten written, SEARCH's p95 at
 * the default chunk size was about 1.7x the plain query's, with five about 1.5x, the median unchanged. How
 * often the second half was returned is seen after every search from the cached rows of a query with words
 * (one without has no lexical ranking: all of the vector ranking is returned), whether its snippets were
 * written or not.
 */
export class EarlyRows {
  /** How often the vector ranking's second half was returned lately (a moving average over about ten searches). */
  private laterReturned = 1;

  /** The number of the vector ranking's best rows to write snippets for while PostgreSQL runs the statement. */
  count(topN: number): number {
    return this.laterReturned >= LATER_RETURNED_ENOUGH ? topN : Math.ceil(topN / 2);
  }

  /** Notes which of the vector ranking's ranks `topN / 2 + 1` to `topN` the answer (`best`) returned. */
  learn(hits: readonly VectorHit[], best: ReadonlyArray<{ id: string }>, topN: number): void {
    const later = hits.slice(Math.ceil(topN / 2), topN);
    if (!later.length) return;
    const returned = new Set(best.map((r) => r.id));
    const share = later.filter((h) => returned.has(h.id)).length / later.length;
    this.laterReturned += (share - this.laterReturned) / 10;
  }
}

/**
 * The share of the second half returned from which its snippets are written early. One written early and
 * returned saves the answer its cost; one not returned costs PostgreSQL part of a core. At 12 to 25 returned in
 * a hundred the second half written early made the p95 worse; at nearly all returned (chunks of 40 tokens) it is
 * what keeps the snippets off the answer's path.
 */
const LATER_RETURNED_ENOUGH = 0.3;
let earlyRows = new EarlyRows();
onProcessReset('shared/document-index/search.ts#earlyRows', () => (earlyRows = new EarlyRows()));

/** How many of the vector ranking's best rows a search of `topN` rows writes snippets for early now (`EarlyRows`). */
export function earlySnippetRows(topN: number): number {
  return earlyRows.count(topN);
}

/** Snippets written while PostgreSQL ran the statement: for the query's guessed lexemes, by chunk id with the text they are of. */
export interface EarlySnippets {
  lexemes: QueryLexemes;
  snippets: Map<string, { text: string; snippet: string }>;
}

/**
 * The snippets of the vector ranking's best rows, written while the main thread would otherwise wait for
 * PostgreSQL's answer (the scan usually ends first), for the lexemes `guessQueryLexemes` expects the
 * statement to report; the rows the fusion keeps are then ready when the answer comes. `fromCache` uses
 * them only when the reported lexemes are the guessed ones and the row's text is the one written, so a
 * snippet is always what `headline` writes for the answer's lexemes. Null for a query without words.
 */
export function earlySnippets(
  query: string,
  hits: readonly VectorHit[],
  rowOf: (chunkId: string) => { text: string } | undefined,
): EarlySnippets | null {
  const words = queryWords(query);
  if (!words.length) return null;
  const lexemes = guessQueryLexemes(words);
  const snippets = new Map<string, { text: string; snippet: string }>();
  for (const h of hits) {
    const text = rowOf(h.id)?.text;
    if (text !== undefined) snippets.set(h.id, { text, snippet: headline(text, lexemes) });
  }
  return { lexemes, snippets };
}

/**
 * The snippet of a chunk's text for the answer's lexemes (`terms`): the one written early when it was written
 * for these lexemes (each named by as many operands) and this text, else `headline`'s.
 */
export function snippetWriter(terms: QueryLexemes, early: EarlySnippets | null) {
  const ready = early && sameLexemes(terms, early.lexemes) ? early.snippets : null;
  return (chunkId: string, text: string): string => {
    const written = ready?.get(chunkId);
    return written && written.text === text ? written.snippet : headline(text, terms);
  };
}

/** The best rows from the cached sets' rows (`rowOf`), with their snippets; null when one is not cached. */
function fromCache(
  best: ReturnType<typeof fuse>,
  rowOf: (chunkId: string) => ReturnType<NonNullable<ReturnType<ExactVectorBackend['peek']>>['row']>,
  gens: NonNullable<LexicalRow['gens']>,
  lexemes: string | null,
  early: EarlySnippets | null = null,
): FusedRow[] | null {
  const terms = lexemes === null ? null : tsqueryLexemes(lexemes);
  const snippetOf = terms && snippetWriter(terms, early);
  const rows: FusedRow[] = [];
  for (const r of best) {
    const c = rowOf(r.id);
    if (!c || !(c.indexId in gens)) return null;
    rows.push({
      id: r.id,
      score: r.score,
      lexical_rank: r.lexical_rank,
      vector_rank: r.vector_rank,
      seq: c.seq,
      text: c.text,
      file_id: c.documentId,
      path: c.path,
      index_name: gens[c.indexId]![2],
      snippet: snippetOf
        ? snippetOf(r.id, c.text)
        : [...c.text.slice(0, 2 * PLAIN_SNIPPET_CHARS)].slice(0, PLAIN_SNIPPET_CHARS).join(''),
    });
  }
  return rows;
}

/**
 * A row with the fusion's score and ranks. Object literals, not spreads, here and in `fromCache`: they run
 * for every row SEARCH answers, and spreading these rows (here, and in the cache's `row` when it copied
 * `ChunkRows`' rows) took V8's slow path: SEARCH's ten rows took 190 µs with the spreads and 110 µs without at 100k chunks.
 */
function withRanks(r: FusedRow, f: ReturnType<typeof fuse>[number]): FusedRow {
  return {
    id: r.id,
    score: f.score,
    lexical_rank: f.lexical_rank,
    vector_rank: f.vector_rank,
    seq: r.seq,
    text: r.text,
    file_id: r.file_id,
    path: r.path,
    index_name: r.index_name,
    snippet: r.snippet,
  };
}

/** The best rows from those the statement read (the same snapshot as the changes), or null when one is missing. */
function fromStatement(best: ReturnType<typeof fuse>, read: readonly FusedRow[]): FusedRow[] | null {
  const byId = new Map(read.map((r) => [r.id, r]));
  return best.every((r) => byId.has(r.id)) ? best.map((r) => byId.get(r.id)!) : null;
}

/**
 * A pgvector search of which some indexes (`awaiting`) have their HNSW build still to come and are not cached:
 * those ranked among the chunks matching a query word (`nearestAmong`), the others by their HNSW indexes, the two
 * merged by similarity, then fused with the lexical ranking in one statement.
 */
async function awaitingSearch(
  em: EntityManager,
  backend: Extract<VectorBackend, { kind: 'pgvector' }>,
  search: VectorSearch,
  awaiting: readonly string[],
  query: string,
  topN: number,
): Promise<FusedRow[]> {
  const { tenant, indexIds, collection, k } = search;
  const others = indexIds.filter((id) => !awaiting.includes(id));
  const among = await backend.cache!.nearestAmong(em, { ...search, indexIds: [...awaiting] }, orQuery(query));
  const top = new TopK(k);
  for (const h of among) top.offer(h.id, h.sim);
  if (others.length)
    for (const h of await backend.nearest(em, tenant, others, collection, search.query, k)) top.offer(h.id, h.sim);
  return fusedSearch(em, tenant, indexIds, query, topN, rankedIds(top.hits));
}

async function fusedRows(
  em: EntityManager,
  backend: VectorBackend,
  search: Omit<VectorSearch, 'query'>,
  vector: QueryVector,
  query: string,
  topN: number,
  trace: Partial<SearchPhases> | null = null,
): Promise<FusedRow[]> {
  const { tenant, indexIds: ids } = search;
  if (backend.kind === 'pgvector') {
    // An index cached in this process (it fits the budget) is ranked by the exact scan; the others by HNSW,
    // and their vectors loaded in the background for the next searches. An index whose HNSW build is still to
    // come (a rechunk's, after its swap) is ranked among the chunks matching a query word meanwhile.
    const cache = backend.cache;
    const cached = cache?.peek(ids, search.collection);
    if (cached) return cachedSearch(em, cache!, cached, search, vector, query, topN, trace);
    cache?.warm(em, tenant, ids, search.collection);
    const [queryVec, awaiting] = await Promise.all([vector.later(), cache ? backend.awaitingHnsw(em, ids) : []]);
    const v = { ...search, query: queryVec };
    if (awaiting.length) return awaitingSearch(em, backend, v, awaiting, query, topN);
    return backend.inSearch<FusedRow>(em, v, (vec) => {
      // One prepared statement (its text is fixed per searched index set and collection).
      const s = fusedStatement(tenant, ids, query, topN, vec);
      return preparedStatement(s.text, s.params);
    });
  }
  const cached = backend.peek(ids, search.collection);
  if (!cached) {
    backend.warm(em, tenant, ids, search.collection);
    const v = { ...search, query: await vector.later() };
    const hits = await backend.nearestAmong(em, v, orQuery(query));
    return fusedSearch(em, tenant, ids, query, topN, rankedIds(hits));
  }
  return cachedSearch(em, backend, cached, search, vector, query, topN, trace);
}
