import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ClientBase } from 'pg';
import { onOwnConnection, sql, sqlBound } from '../db/sql.js';
import { nativeVectorType } from './native-vector-writer.js';

/**
 * pgvector's HNSW indexes (issue 32): one per (document index, collection), a partial index over the
 * native column, `emb::vector(dim)` with `where collection = '…' and index_id = '…'`. Built in bulk
 * (`CREATE INDEX` over rows already stored) at the ingestion checkpoint, never by a SEARCH: the ingestion
 * workflow's last activity, and `vectorIndexBuildWorkflow` after a rechunk's swap (its new index's rows were
 * stored with no HNSW index to insert into, then indexed at once). No SEARCH waits for a build: a SEARCH of
 * an index that has none yet is ranked by the process's vector cache once cached, before that among the chunks
 * matching a query word when its build was requested after a rechunk's swap (`requestHnswBuild`,
 * `PgvectorBackend.awaitingHnsw`), else by the
 * same statement, which PostgreSQL then answers with an exact scan of that index's rows (by the
 * `(collection, index_id)` btree). Rows written after the build go into the index one by one (pgvector's
 * incremental insert), as any write to an indexed table does.
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
  return `${hnswPrefix(indexId)}${collectionTag(collection)}`;
}

/**
 * SQL: whether the document index whose id is the SQL expression `indexId` has a valid HNSW index (its names start
 * with `hnswPrefix`, spelled here in SQL).
 */
export function validHnswExistsSql(indexId: string): string {
  return `exists (select 1 from pg_class c join pg_index i on i.indexrelid = c.oid
    where starts_with(c.relname, 'doc_hnsw_' || replace((${indexId})::text, '-', '') || '_')
      and c.relnamespace = current_schema()::regnamespace and i.indisvalid)`;
}

/** What the names of a document index's HNSW indexes start with. */
function hnswPrefix(indexId: string): string {
  return `doc_hnsw_${indexId.replace(/-/g, '').toLowerCase()}_`;
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

/** Whether the HNSW index `name` exists, and is valid (null: none). */
async function hnswState(query: (text: string, params: unknown[]) => Promise<{ valid: boolean }[]>, name: string) {
  const rows = await query(
    `select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid
       where c.relname = $1 and c.relnamespace = current_schema()::regnamespace`,
    [name],
  );
  return rows[0] ? rows[0].valid : null;
}

/**
 * Builds the HNSW index of each collection of a document index that has none yet and at least `minRows`
 * vectors, in bulk: `CREATE INDEX CONCURRENTLY` on a connection of its own, with `maintenance_work_mem` (the
 * graph of 100k vectors of 384 floats needed about 250 MB, and a vector of 1,536 floats is 4x larger; with
 * less, pgvector finishes the build on disk, much slower) and `max_parallel_maintenance_workers` set for it,
 * then reset. Writes to `doc_embeddings` and searches go on during the build, and rows written meanwhile
 * are in the index when it becomes valid; a build first waits for the transactions older than it. Builds and
 * drops run one at a time (`withHnswDdl`; `signal`, the activity's cancellation, ends a wait for the lock).
 * Idempotent: an index that exists and is valid is kept; an invalid one (a build that failed or was cut off
 * leaves one, which writes keep up to date and no search uses) is dropped and built again, or only dropped when
 * its collection has fewer than `minRows` vectors now. Nothing to do
 * without pgvector's native column. Never inside a transaction.
 */
export async function buildHnswIndexes(
  em: EntityManager,
  indexId: string,
  settings: HnswBuildSettings,
  signal?: AbortSignal,
): Promise<HnswBuild[]> {
  if (!(await nativeVectorType(em))) return [];
  const built = await buildEach(em, indexId, settings, signal);
  // A build requested after a rechunk's swap (`requestHnswBuild`) has happened: searches may use it.
  await sql(
    em,
    'update doc_indexes set hnsw_build_requested_at = null where id = ? and hnsw_build_requested_at is not null',
    [indexId],
  );
  return built;
}

async function buildEach(
  em: EntityManager,
  indexId: string,
  settings: HnswBuildSettings,
  signal?: AbortSignal,
): Promise<HnswBuild[]> {
  const collections = await sql<{ collection: string; dim: number; n: string }>(
    em,
    `select collection, vector_dims(emb) as dim, count(*) as n from doc_embeddings
       where index_id = ? and emb is not null group by 1, 2 order by 1, 2`,
    [indexId],
  );
  const out: HnswBuild[] = [];
  const byEm = (text: string, params: unknown[]) => sqlBound<{ valid: boolean }>(em, text, params);
  const toBuild: typeof collections = [];
  /** Invalid indexes of collections now too small for one (a build failed, then rows were deleted): dropped. */
  const toDrop: string[] = [];
  for (const c of collections) {
    const rows = Number(c.n);
    const name = hnswIndexName(indexId, c.collection);
    const valid = await hnswState(byEm, name);
    if (valid) out.push({ collection: c.collection, rows, outcome: 'exists', ms: 0 });
    else if (rows < settings.minRows) {
      out.push({ collection: c.collection, rows, outcome: 'small', ms: 0 });
      if (valid === false) toDrop.push(name);
    } else toBuild.push(c);
  }
  // Invalid indexes of collections with no vectors left (the query above lists only collections that have some).
  const listed = new Set(collections.map((c) => hnswIndexName(indexId, c.collection)));
  const invalid = await sql<{ name: string }>(
    em,
    `select c.relname as name from pg_class c join pg_index i on i.indexrelid = c.oid
       where starts_with(c.relname, ?) and c.relnamespace = current_schema()::regnamespace and not i.indisvalid`,
    [hnswPrefix(indexId)],
  );
  for (const { name } of invalid) if (!listed.has(name)) toDrop.push(name);
  if (!toBuild.length && !toDrop.length) {
    // Nothing to build: the deleted indexes' HNSW indexes are dropped all the same, if the lock is free.
    await withHnswDdl(em, { wait: false }, async () => undefined);
    return out;
  }
  await withHnswDdl(em, { wait: true, signal }, async (connection) => {
    const byConnection = async (text: string, params: unknown[]) =>
      (await connection.query<{ valid: boolean }>(text, params)).rows;
    // Still invalid under the lock (another attempt may have dropped it, or built it valid since).
    for (const name of toDrop)
      if ((await hnswState(byConnection, name)) === false) await dropConcurrently(connection, name);
    for (const c of toBuild) {
      const started = performance.now();
      const name = hnswIndexName(indexId, c.collection);
      const done = (outcome: HnswBuild['outcome']) =>
        out.push({ collection: c.collection, rows: Number(c.n), outcome, ms: performance.now() - started });
      // Again under the lock: another attempt of this build may have finished it meanwhile.
      const valid = await hnswState(byConnection, name);
      if (valid) {
        done('exists');
        continue;
      }
      if (valid === false) await dropConcurrently(connection, name);
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
      done('built');
    }
  });
  return out;
}

/**
 * In a rechunk's swap (its transaction, `tx`): whether its new index is due an HNSW build, which the rechunk then
 * starts (`vectorIndexBuildWorkflow`). Due when pgvector's native column exists, the index holds at least `minRows`
 * vectors (a rechunk's new index has one collection, its copy's embedder's) and has no valid HNSW index yet. A due
 * build is recorded on the index (`hnsw_build_requested_at`, cleared when a build of it ends), so searches know
 * one is coming from the moment the index serves (`PgvectorBackend.awaitingHnsw`). Reads at most `minRows` rows.
 */
export async function requestHnswBuild(em: EntityManager, indexId: string, minRows: number): Promise<boolean> {
  if (!(await nativeVectorType(em))) return false;
  const least = Math.max(1, Math.floor(minRows));
  const [row] = await sql<{ due: boolean }>(
    em,
    `update doc_indexes set hnsw_build_requested_at = coalesce(hnsw_build_requested_at, now())
       where id = ?
         and (select count(*) from (select 1 from doc_embeddings where index_id = ? and emb is not null limit ?) x) >= ?
         and not ${validHnswExistsSql('id')}
       returning true as due`,
    [indexId, indexId, least, least],
  );
  return Boolean(row?.due);
}

/**
 * The session advisory lock every concurrent build and drop of an HNSW index on `doc_embeddings` holds (and the
 * migrations that change the table or its HNSW indexes, as a transaction lock: `lockHnswDdlInTransaction`).
 */
const HNSW_DDL_LOCK = `hashtextextended('doc_embeddings hnsw ddl', 32)`;

/**
 * For a migration that changes `doc_embeddings` or its HNSW indexes in its transaction: takes the HNSW DDL lock
 * for the rest of that transaction, so it does not run beside a concurrent build or drop (a worker of the
 * version before may be building). Call it before the migration's first statement on `doc_embeddings`. As in
 * `withHnswDdl`, the lock is tried between pauses (50 ms, doubling up to 1 s) rather than waited for inside a
 * statement: a waiting statement holds a snapshot, and the build's last phase waits for every older snapshot.
 * Migrations run in one transaction (`allOrNothing`): when an earlier one of the batch already holds a lock on
 * `doc_embeddings` a build may be queued behind, polling could wait forever, so the lock is then waited for
 * inside the statement, where PostgreSQL's deadlock detector ends a cycle. After 10 s of waiting it says so.
 */
export async function lockHnswDdlInTransaction(
  execute: (text: string) => Promise<unknown[]>,
  say: (line: string) => void = (line) => process.stdout.write(`[migration] ${line}\n`),
): Promise<void> {
  const started = Date.now();
  let said = false;
  for (let pause = 50; ; pause = Math.min(2 * pause, 1_000)) {
    const [row] = (await execute(
      `select pg_try_advisory_xact_lock(${HNSW_DDL_LOCK}) as held,
         exists (select 1 from pg_locks where pid = pg_backend_pid() and locktype = 'relation'
           and relation = 'doc_embeddings'::regclass) as holds_table`,
    )) as { held: boolean; holds_table: boolean }[];
    if (row?.held) return;
    if (row?.holds_table) {
      await execute(`select pg_advisory_xact_lock(${HNSW_DDL_LOCK})`);
      return;
    }
    if (!said && Date.now() - started >= 10_000) {
      said = true;
      say('waiting for a running HNSW index build on doc_embeddings to end (pgvector) before changing the table');
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * `work` on a connection of its own that holds the HNSW DDL lock: one concurrent build or drop at a time.
 * Two at once deadlock (PostgreSQL then cancels one): the one queued for the table's SHARE UPDATE EXCLUSIVE
 * lock holds a snapshot while it waits, and the running one's last phase waits for every older snapshot. So
 * the lock is tried between pauses (50 ms, doubling up to 1 s), never waited for inside a statement, which
 * would hold a snapshot too; between tries no pooled connection is kept, and an aborted `signal` (the
 * activity's cancellation) ends the wait. With `wait` false a held lock answers null at once. Every holder,
 * after its work, drops the HNSW indexes of deleted document indexes (a DELETE_INDEX that found the lock held
 * left its drop to the holder). The lock is released with the work; should the release fail, the session is
 * ended rather than handed back to the pool holding it.
 */
async function withHnswDdl<R>(
  em: EntityManager,
  options: { wait: boolean; signal?: AbortSignal },
  work: (connection: ClientBase) => Promise<R>,
): Promise<R | null> {
  for (let pause = 50; ; pause = Math.min(2 * pause, 1_000)) {
    options.signal?.throwIfAborted();
    const attempt = await onOwnConnection(em, async (connection) => {
      const { rows } = await connection.query<{ held: boolean }>(
        `select pg_try_advisory_lock(${HNSW_DDL_LOCK}) as held`,
      );
      if (!rows[0]?.held) return null;
      try {
        const done = await work(connection);
        await dropOrphans(connection).catch(() => undefined); // left to the next holder
        return { done };
      } finally {
        const released = await connection
          .query<{ unlocked: boolean }>(`select pg_advisory_unlock(${HNSW_DDL_LOCK}) as unlocked`)
          .then((r) => r.rows[0]?.unlocked === true)
          .catch(() => false);
        if (!released) await (connection as unknown as { end(): Promise<void> }).end().catch(() => undefined);
      }
    });
    if (attempt) return attempt.done;
    if (!options.wait) return null;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Drops the HNSW indexes whose document index is gone (deleted while another build or drop held the lock). */
async function dropOrphans(connection: ClientBase): Promise<void> {
  const orphans = await connection.query<{ name: string }>(
    `select i.indexname as name from pg_indexes i
       where i.schemaname = current_schema() and i.tablename = 'doc_embeddings'
         and i.indexname ~ '^doc_hnsw_[0-9a-f]{32}_[0-9a-f]{8}$'
         and not exists (select 1 from doc_indexes d where replace(d.id::text, '-', '') = substr(i.indexname, 10, 32))`,
  );
  for (const r of orphans.rows) await dropConcurrently(connection, r.name);
}

function dropConcurrently(connection: ClientBase, name: string) {
  return connection.query(`drop index concurrently if exists ${name.replace(/[^a-z0-9_]/g, '')}`);
}

/**
 * Drops a document index's HNSW indexes (every collection), concurrently: before its rows are deleted (a
 * rechunk's retired or abandoned index) or after (DELETE_INDEX), so no index over nothing is left behind.
 * A plain `DROP INDEX` would take an ACCESS EXCLUSIVE lock on `doc_embeddings`, and while it waited (for a
 * build, or a long write) every search and write of every index would queue behind it. With `wait` false
 * (a request, or an activity that must not wait minutes for a build) a build or drop in progress leaves the
 * drop to the lock's holder, which drops the HNSW indexes of deleted document indexes when its work ends (or
 * to the next holder: every build, and every ingestion's checkpoint when the lock is free); answers whether it
 * dropped them. Never inside a transaction.
 */
export async function dropHnswIndexes(em: EntityManager, indexId: string, wait = true): Promise<boolean> {
  const prefix = hnswPrefix(indexId);
  const rows = await sql<{ name: string }>(
    em,
    `select indexname as name from pg_indexes
       where schemaname = current_schema() and tablename = 'doc_embeddings' and starts_with(indexname, ?)`,
    [prefix],
  );
  if (!rows.length) return true;
  const dropped = await withHnswDdl(em, { wait }, async (connection) => {
    for (const r of rows) await dropConcurrently(connection, r.name);
    return true;
  });
  return dropped === true;
}

/**
 * The ingestion checkpoint's build for an index named in a tenant (active): the ingestion workflow's
 * last step. A missing index (deleted meanwhile) builds nothing.
 */
export async function buildHnswIndexesOf(
  em: EntityManager,
  config: AppConfig,
  target: { tenant: string; indexName: string } | { indexId: string },
  signal?: AbortSignal,
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
  return indexId ? buildHnswIndexes(em, indexId, hnswBuildSettings(config), signal) : [];
}
