import type { EntityManager } from '@mikro-orm/postgresql';
import type { Embedder } from './embedder.js';
import { pgArray } from './pages.js';
import { sql, type Row } from './store.js';
import type { VectorBackend, VectorHit } from './vectors.js';

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

/** The query's words OR-ed into a `to_tsquery` expression (null when it has none). */
export function orQuery(query: string): string | null {
  const words = [...query.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0].toLowerCase());
  return words.length ? [...new Set(words)].join(' | ') : null;
}

/**
 * Matching chunks the lexical ranking scores at most: a query of very common words ranks this many of
 * its matches (in storage order), so its cost stays bounded at any index size.
 */
export const LEXICAL_CANDIDATE_CAP = 5000;

/**
 * Lexical ranking: PostgreSQL full text (`ts_rank_cd` over the chunk's stored tsvector, GIN-indexed),
 * any query word matching; at most `LEXICAL_CANDIDATE_CAP` matches are scored, the best 50 kept.
 */
export async function lexicalRanking(em: EntityManager, tenant: string, indexIds: string[], query: string) {
  const q = orQuery(query);
  if (!q) return [];
  return sql<{ id: string }>(
    em,
    `select m.id from (
         select c.id, c.tsv from doc_chunks c
           where c.tsv @@ to_tsquery('english', ?) and c.tenant = ? and c.index_id = any(?::uuid[]) limit ?
       ) m, to_tsquery('english', ?) q
       order by ts_rank_cd(m.tsv, q) desc, m.id limit ?`,
    [q, tenant, pgArray(indexIds), LEXICAL_CANDIDATE_CAP, q, CANDIDATES],
  );
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

/**
 * Hybrid search: the lexical and the vector rankings (50 candidates each) fused by reciprocal rank
 * fusion, score = sum over the rankings of 1 / (60 + rank), ties broken by chunk id.
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
  // The two halves on two connections at once.
  const [lexical, vector] = await Promise.all([
    lexicalRanking(em, tenant, ids, query),
    vectorRanking(em, backend, tenant, ids, embedder.collection, qv!),
  ]);
  const fused = new Map<string, { score: number; lexical: number | null; vector: number | null }>();
  lexical.forEach((r, n) => fused.set(r.id, { score: 1 / (RRF_K + n + 1), lexical: n + 1, vector: null }));
  vector.forEach((r, n) => {
    const f = fused.get(r.id) ?? { score: 0, lexical: null, vector: null };
    f.score += 1 / (RRF_K + n + 1);
    f.vector = n + 1;
    fused.set(r.id, f);
  });
  const ranked = [...fused.entries()].sort((a, b) => b[1].score - a[1].score || (a[0] < b[0] ? -1 : 1)).slice(0, topN);
  if (!ranked.length) return [];
  const q = orQuery(query);
  const rows = await sql<Row>(
    em,
    `select c.id, c.seq, c.text, d.id as file_id, d.path, i.name as index_name,
        ${q ? `ts_headline('english', c.text, to_tsquery('english', ?), 'MaxWords=40, MinWords=15, MaxFragments=1')` : 'left(c.text, 300)'} as snippet
       from doc_chunks c join doc_documents d on d.id = c.document_id join doc_indexes i on i.id = c.index_id
       where c.id = any(?::uuid[])`,
    [...(q ? [q] : []), pgArray(ranked.map(([id]) => id))],
  );
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  return ranked
    .filter(([id]) => byId.has(id))
    .map(([id, f]) => {
      const r = byId.get(id)!;
      return {
        index_name: r.index_name as string,
        filepath: r.path as string,
        file_id: r.file_id as string,
        chunk_id: id,
        chunk_index: Number(r.seq),
        score: Math.round(f.score * 1e6) / 1e6,
        lexical_rank: f.lexical,
        vector_rank: f.vector,
        snippet: r.snippet as string,
        text: r.text as string,
      };
    });
}
