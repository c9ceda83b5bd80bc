import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
import { createLogger } from '../log.js';

const log = createLogger({ base: { component: 'document-index' } });

/**
 * The planner's statistics of the document tables' `index_id` column, for an index that grew past what they say.
 *
 * Every statement on the document tables is scoped by `index_id`. An index the last ANALYZE did not see (one
 * created since, such as a rechunk's temporary index) is estimated at one row, so PostgreSQL plans for one row:
 * the paths an ingestion batch looks up are then matched by reading every document of the index, once per path
 * (a nested loop over the path list), and a rechunk's copy slowed batch after batch (the lookup 16 ms at 1,300
 * documents, 40 ms at 2,500; the batches 80 to 100 ms slower at 9,000) until autovacuum happened to analyze the table. Refreshed, the same lookup probes the
 * `(index_id, path)` index once per path.
 *
 * `skip_locked`: a table another session holds (a running ANALYZE, or an HNSW index being built on
 * `doc_embeddings`, for minutes) is skipped rather than waited for; its statistics stay as they were, until
 * autovacuum's (a column's ANALYZE leaves the table's count of changes for autovacuum as it was). Best-effort:
 * it runs after writes that committed, so a failure is logged, never thrown.
 */
export async function analyzeIndexIds(
  em: EntityManager,
  tables: readonly DocumentTable[] = DOCUMENT_TABLES,
): Promise<void> {
  await sql(em, `analyze (skip_locked) ${tables.map((t) => `${t} (index_id)`).join(', ')}`).catch((err: unknown) =>
    log.warn("refreshing the document tables' planner statistics failed", { tables, error: String(err) }),
  );
}

export type DocumentTable = 'doc_documents' | 'doc_chunks' | 'doc_embeddings';
export const DOCUMENT_TABLES: readonly DocumentTable[] = ['doc_documents', 'doc_chunks', 'doc_embeddings'];

/** The first document count at which a growing index's statistics are refreshed, then at every fourth power after it. */
export const STATISTICS_FIRST_AT = 256;

/**
 * Whether an index that grew from `before` to `after` documents passed a refresh point (256, 1,024, 4,096, ...):
 * the planner's estimate then stays within a factor of four of the index's size, for a handful of ANALYZEs
 * whatever the size (three for 9,000 documents, five for 90,000).
 */
export function statisticsDue(before: number, after: number): boolean {
  for (let at = STATISTICS_FIRST_AT; at <= after; at *= 4) if (at > before) return true;
  return false;
}
