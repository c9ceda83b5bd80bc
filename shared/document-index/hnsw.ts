import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { onOwnConnection, sql } from '../db/sql.js';
import { nativeVectorType } from './native-vector-writer.js';

/**
 * pgvector's HNSW indexes (issue 32): one per (document index, collection), a partial index over the
 * native column, `emb::vector(dim)` with `where collection = '…' and index_id = '…'`. Built in bulk
 * (`CREATE INDEX` over rows already stored) at the ingestion checkpoint, never by a SEARCH: the ingestion
 * workflow's last activity, and a rechunk's after its copy (its temporary index's rows were stored with
 * no HNSW index to insert into, then indexed at once). A SEARCH of an index that has none yet runs the same
 * statement, which PostgreSQL then answers with an exact scan of that index's rows (by the
 * `(collection, index_id)` btree), so no SEARCH waits for a build. Rows written after the build go into
 * the index one by one (pgvector's incremental insert), as any write to an indexed table does.
 */

/** What a build may use: `maintenance_work_mem` and parallel workers, and the rows below which none is built. */
export interface HnswBuildSettings {
  memoryMb: number;
  workers: number;
  minRows: number;
}

export function hnswBuildSettings(config: AppConfig): HnswBuildSettings {
  const d = config.documentIndex;
  return { memoryMb: d.hnswBuildMemoryMb, workers: d.hnswBuildWorkers, minRows: d.hnswMinRows };
}

/** A collection name as it may appear in SQL (collectionOf's names are `[a-z0-9_]` already). */
export function safeCollection(collection: string): string {
  return collection.replace(/[^a-z0-9_]/g, '_');
}

/** A short stable hash of a collection name (FNV-1a, 32 bits), so the index name stays within 63 bytes. */
function collectionTag(collection: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < collection.length; i++) h = Math.imul(h ^ collection.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** The HNSW index of one (document index, collection): `doc_hnsw_<index uuid, hex>_<collection hash>`. */
export function hnswIndexName(indexId: string, collection: string): string {
  return `doc_hnsw_${indexId.replace(/-/g, '').toLowerCase()}_${collectionTag(collection)}`;
}

/** The partial index's predicate, with the index id and collection as literals (uuid and `[a-z0-9_]`). */
export function hnswPredicate(indexId: string, collection: string, alias = ''): string {
  const id = indexId.replace(/[^0-9a-fA-F-]/g, '');
  return `${alias}collection = '${safeCollection(collection)}' and ${alias}index_id = '${id}'::uuid`;
}

export interface HnswBuild {
  collection: string;
  rows: number;
  /** `built` now, `exists` already, `small` (fewer rows than `minRows`: the exact scan serves). */
  outcome: 'built' | 'exists' | 'small';
  ms: number;
}

/**
 * Builds the HNSW index of each collection of a document index that has none yet and at least `minRows`
 * vectors, in bulk: `CREATE INDEX CONCURRENTLY` on a connection of its own, with `maintenance_work_mem` (the
 * graph of 100k vectors of 384 floats needed about 250 MB, and a vector of 1,536 floats is 4x larger; with
 * less, pgvector finishes the build on disk, much slower) and `max_parallel_maintenance_workers` set for it.
 * Writes to `doc_embeddings` and searches go on during the build; two builds on the table run one after the
 * other (their locks conflict), and a build first waits for transactions older than it to end. Idempotent (an
 * index that exists and is valid is kept; an invalid one, left by a build that failed or was cut off, is
 * dropped and rebuilt). Nothing to do without pgvector's native column. Never inside a transaction.
 */
export async function buildHnswIndexes(
  em: EntityManager,
  indexId: string,
  settings: HnswBuildSettings,
): Promise<HnswBuild[]> {
  if (!(await nativeVectorType(em))) return [];
  const collections = await sql<{ collection: string; dim: number; n: string }>(
    em,
    `select collection, vector_dims(emb) as dim, count(*) as n from doc_embeddings
       where index_id = ? and emb is not null group by 1, 2 order by 1, 2`,
    [indexId],
  );
  const out: HnswBuild[] = [];
  for (const c of collections) {
    const started = performance.now();
    const rows = Number(c.n);
    const name = hnswIndexName(indexId, c.collection);
    const done = (outcome: HnswBuild['outcome']) =>
      out.push({ collection: c.collection, rows, outcome, ms: performance.now() - started });
    const state = await sql<{ valid: boolean }>(
      em,
      `select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid
         where c.relname = ? and c.relnamespace = current_schema()::regnamespace`,
      [name],
    );
    if (state[0]?.valid) {
      done('exists');
      continue;
    }
    if (rows < settings.minRows) {
      done('small');
      continue;
    }
    // Concurrently: the build takes a SHARE UPDATE EXCLUSIVE lock, so writes to `doc_embeddings` (every
    // index's) go on while it runs, and rows written meanwhile are added before the index becomes valid.
    // Its settings are the session's for the build, then reset (the connection returns to the pool).
    await onOwnConnection(em, async (connection) => {
      if (state[0]) await connection.query(`drop index concurrently if exists ${name}`);
      await connection.query(
        `select set_config('maintenance_work_mem', $1, false), set_config('max_parallel_maintenance_workers', $2, false)`,
        [`${Math.max(64, Math.floor(settings.memoryMb))}MB`, String(Math.max(0, Math.floor(settings.workers)))],
      );
      try {
        await connection.query(
          `create index concurrently if not exists ${name} on doc_embeddings
             using hnsw ((emb::vector(${Number(c.dim)})) vector_cosine_ops) where ${hnswPredicate(indexId, c.collection)}`,
        );
      } finally {
        await connection.query('reset maintenance_work_mem').catch(() => undefined);
        await connection.query('reset max_parallel_maintenance_workers').catch(() => undefined);
      }
    });
    done('built');
  }
  return out;
}

/**
 * Drops a document index's HNSW indexes (every collection), concurrently: before its rows are deleted (a
 * rechunk's retired or abandoned index) or after (DELETE_INDEX), so no index over nothing is left behind.
 * A plain `DROP INDEX` would take an ACCESS EXCLUSIVE lock on `doc_embeddings`, and while it waited (for a
 * build, or a long write) every search and write of every index would queue behind it. Never inside a
 * transaction.
 */
export async function dropHnswIndexes(em: EntityManager, indexId: string): Promise<void> {
  const prefix = `doc_hnsw_${indexId.replace(/-/g, '').toLowerCase()}_`;
  const rows = await sql<{ name: string }>(
    em,
    `select indexname as name from pg_indexes
       where schemaname = current_schema() and tablename = 'doc_embeddings' and starts_with(indexname, ?)`,
    [prefix],
  );
  if (!rows.length) return;
  await onOwnConnection(em, async (connection) => {
    for (const r of rows)
      await connection.query(`drop index concurrently if exists ${r.name.replace(/[^a-z0-9_]/g, '')}`);
  });
}

/**
 * The ingestion checkpoint's build for an index named in a tenant (active): the ingestion workflow's
 * last step. A missing index (deleted meanwhile) builds nothing.
 */
export async function buildHnswIndexesOf(
  em: EntityManager,
  config: AppConfig,
  target: { tenant: string; indexName: string } | { indexId: string },
): Promise<HnswBuild[]> {
  let indexId: string | undefined;
  if ('indexId' in target) indexId = target.indexId;
  else
    indexId = (
      await sql<{ id: string }>(em, `select id from doc_indexes where tenant = ? and name = ? and state = 'active'`, [
        target.tenant,
        target.indexName,
      ])
    )[0]?.id;
  return indexId ? buildHnswIndexes(em, indexId, hnswBuildSettings(config)) : [];
}
