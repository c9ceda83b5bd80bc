import type { EntityManager } from '@mikro-orm/postgresql';
import type { Embedder } from './embedder.js';
import { pgArray } from './pages.js';
import { sql } from './store.js';
import type { VectorBackend, VectorCte, VectorHit, VectorSearch } from './vectors.js';

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

/** The query's distinct words (letters and digits), lower-cased. */
function queryWords(query: string): string[] {
  return [...new Set([...query.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0].toLowerCase()))];
}

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
function lexicalCte(tenant: string, indexIds: string[], query: string): { text: string; params: unknown[] } {
  const and = andQuery(query);
  const or = orQuery(query);
  if (!and || !or) return { text: 'lex as (select null::uuid as id, null::bigint as rank where false)', params: [] };
  const scope = [tenant, pgArray(indexIds), LEXICAL_CANDIDATE_CAP];
  const tier = (tsq: string) => `select m.id, ts_rank_cd(m.tsv, to_tsquery('english', ?)) as r from (
       select c.id, c.tsv from doc_chunks c
         where c.tsv @@ to_tsquery('english', ?) and c.tenant = ? and c.index_id = any(?::uuid[]) limit ?
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
      ...[and, and, ...scope, CANDIDATES],
      ...[or, or, ...scope, AND_MATCHES_ENOUGH, CANDIDATES + AND_MATCHES_ENOUGH],
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

/** A row of the fused statement: `gens` (index id to vector generation) on every row, the hit's columns unless none. */
interface FusedRow {
  gens: Record<string, string> | null;
  id: string | null;
  score: number;
  lexical_rank: string | null;
  vector_rank: string | null;
  seq: number;
  text: string;
  file_id: string;
  path: string;
  index_name: string;
  snippet: string;
}

/**
 * One statement for the whole search: the lexical ranking (`lexicalCte`), the vector ranking (`vec`),
 * their reciprocal rank fusion (score = sum of 1 / (60 + rank), ties by chunk id), the best `topN`
 * chunks with their documents, and a `ts_headline` snippet for those rows only. Every row also carries
 * the searched indexes' vector generations, so the exact path knows its cached ranking was current.
 */
async function fusedSearch(
  em: EntityManager,
  tenant: string,
  indexIds: string[],
  query: string,
  topN: number,
  vec: VectorCte,
): Promise<FusedRow[]> {
  const lex = lexicalCte(tenant, indexIds, query);
  const q = orQuery(query);
  return sql<FusedRow>(
    em,
    `with ${lex.text}, ${vec.text},
     fused as (
       select c.id, c.seq, c.text, c.document_id, c.index_id, l.rank as lexical_rank, v.rank as vector_rank,
           coalesce(1::float8 / (${RRF_K} + l.rank), 0) + coalesce(1::float8 / (${RRF_K} + v.rank), 0) as score
         from lex l full join vec v on v.id = l.id
         join doc_chunks c on c.id = coalesce(l.id, v.id) and c.tenant = ? and c.index_id = any(?::uuid[])
         order by score desc, c.id limit ?)
     select g.gens, r.* from
       (select json_object_agg(id, vector_generation::text) as gens from doc_indexes
          where tenant = ? and id = any(?::uuid[])) g
       left join lateral (
         select f.id, f.score, f.lexical_rank, f.vector_rank, f.seq, f.text, d.id as file_id, d.path,
             i.name as index_name,
             ${q ? `ts_headline('english', f.text, to_tsquery('english', ?), 'MaxWords=40, MinWords=15, MaxFragments=1')` : 'left(f.text, 300)'} as snippet
           from fused f join doc_documents d on d.id = f.document_id join doc_indexes i on i.id = f.index_id
       ) r on true
     order by r.score desc, r.id`,
    [...lex.params, ...vec.params, tenant, pgArray(indexIds), topN, tenant, pgArray(indexIds), ...(q ? [q] : [])],
  );
}

function hitOf(r: FusedRow): SearchHit {
  return {
    index_name: r.index_name,
    filepath: r.path,
    file_id: r.file_id,
    chunk_id: r.id!,
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
 * fusion, score = sum over the rankings of 1 / (60 + rank), ties broken by chunk id; one statement
 * (`fusedSearch`) in the usual case.
 *
 * - pgvector: the vector ranking is a CTE of the same statement (HNSW over the native `emb` column).
 * - exact, every searched index cached in this process: the cached sets are scanned first, then the
 *   statement runs with that ranking and reports the indexes' generations; only when a write committed
 *   since (a generation newer than the cached set's) does the cache catch up from the change log and
 *   the statement run again.
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
  const ids = indexes.map((i) => i.id);
  const [qv] = (await embedder.embed([query])).vectors;
  const v = { tenant, indexIds: ids, collection: embedder.collection, query: qv!, k: CANDIDATES };
  const rows = await fusedRows(em, backend, v, query, topN);
  return rows.filter((r) => r.id !== null).map(hitOf);
}

async function fusedRows(
  em: EntityManager,
  backend: VectorBackend,
  v: VectorSearch,
  query: string,
  topN: number,
): Promise<FusedRow[]> {
  const { tenant, indexIds: ids } = v;
  if (backend.kind === 'pgvector')
    return backend.inSearch(em, v, (tx, vec) => fusedSearch(tx, tenant, ids, query, topN, vec));
  const cached = backend.peek(ids, v.collection);
  if (!cached) {
    backend.warm(em, tenant, ids, v.collection);
    const hits = await backend.nearestAmong(em, v, orQuery(query));
    return fusedSearch(em, tenant, ids, query, topN, rankedIds(hits));
  }
  const first = await fusedSearch(em, tenant, ids, query, topN, rankedIds(cached.scan(v.query, v.k)));
  const gens = first[0]?.gens ?? {};
  if (!cached.staleAt(gens)) return first;
  const hits = await backend.nearestAt(em, gens, v.collection, v.query, v.k);
  return fusedSearch(em, tenant, ids, query, topN, rankedIds(hits));
}
