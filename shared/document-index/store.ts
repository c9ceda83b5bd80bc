import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../errors.js';
import { chunkText, type ChunkConfig, type ChunkStrategy } from './chunking.js';
import type { Embedder } from './embedder.js';
import { encodeVector, pruneVectorLog } from './vectors.js';
import { type BoundStatement, sql, sqlBound, sqlBoundStatement, sqlBoundWhile } from '../db/sql.js';
import { encodeNativeVectorArray, type NativeVectorType, nativeVectorType } from './native-vector-writer.js';
import { createLogger } from '../log.js';

const log = createLogger({ base: { component: 'document-index' } });

export type Row = Record<string, unknown>;

// Raw SQL inside the caller's transaction when there is one (re-exported for this module's importers).
export { sql };

/** System indexes excluded from the statistics. */
export const SYSTEM_INDEXES = new Set(['twin', 'harvester']);

export interface IndexRow {
  id: string;
  tenant: string;
  name: string;
  state: 'active' | 'building';
  chunk_size: number | null;
  chunk_overlap: number | null;
  chunk_strategy: ChunkStrategy | null;
  managed_source_id: string | null;
  /** Set when a source's document feed adopted this hand-made index (`overwrite_indexes`). */
  adopted_at: Date | null;
  created_at: Date;
}

export const configOf = (r: IndexRow): ChunkConfig => ({
  chunk_size: r.chunk_size,
  chunk_overlap: r.chunk_overlap,
  chunk_strategy: r.chunk_strategy,
});

export const contentHash = (text: string) => createHash('sha256').update(text).digest('hex');

/** An active index by name, or null. */
export async function findIndex(em: EntityManager, tenant: string, name: string): Promise<IndexRow | null> {
  const rows = await sql<IndexRow>(em, `select * from doc_indexes where tenant = ? and name = ? and state = 'active'`, [
    tenant,
    name,
  ]);
  return rows[0] ?? null;
}

export async function requireIndex(em: EntityManager, tenant: string, name: string): Promise<IndexRow> {
  const row = await findIndex(em, tenant, name);
  if (!row)
    throw new NotFoundError(`No document index named "${name}". LIST_INDICES lists the existing ones.`, {
      index_name: name,
    });
  return row;
}

export async function createIndex(
  em: EntityManager,
  tenant: string,
  name: string,
  config: ChunkConfig,
  state: 'active' | 'building' = 'active',
): Promise<IndexRow> {
  const rows = await sql<IndexRow>(
    em,
    `insert into doc_indexes (id, tenant, name, state, chunk_size, chunk_overlap, chunk_strategy)
       values (?, ?, ?, ?, ?, ?, ?) on conflict (tenant, name) do nothing returning *`,
    [randomUUID(), tenant, name, state, config.chunk_size, config.chunk_overlap, config.chunk_strategy],
  );
  if (!rows[0]) throw new ConflictError(`A document index named "${name}" already exists.`, { index_name: name });
  return rows[0];
}

/**
 * Serialises writers of one index (deletion, renames, the rechunk swap, adoption; ingestion of a batch
 * whose paths another writer touched meanwhile) inside a transaction. Batch ingestions take it shared
 * (`ingestDocuments`), so two of them write their chunks at once.
 */
export async function lockIndex(tx: EntityManager, indexId: string, mode: 'exclusive' | 'shared' = 'exclusive') {
  const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await sql(tx, `select ${fn}(hashtextextended(?, 13))`, [indexId]);
}

/**
 * The index a writer resolved changed while it waited for the index's lock: a rechunk swap retired it (its
 * rows are dropped next, with anything written to them), it was deleted, renamed, or adopted by a managed
 * source. The writer writes nothing;
 * `onCurrentIndex` runs it again on the index the name now resolves to. A 409 if it keeps happening.
 */
export class IndexReplaced extends ConflictError {
  override name = 'IndexReplaced';
  constructor(index: Pick<IndexRow, 'name'>) {
    super(
      `Index "${index.name}" was rechunked or deleted while this write waited for it; nothing was written. Retry the call.`,
      { index_name: index.name },
    );
  }
}

/**
 * Locks an index the caller resolved (`lockIndex`) and checks, in a statement after the lock (a fresh
 * snapshot), that it is still as it was resolved: same state, name and managed source (a rechunk swap,
 * a deletion, a rename or a source's adoption meanwhile: `IndexReplaced`, so the caller's checks, such as
 * the managed-repository guard, run again on the index as it is).
 */
export async function lockResolvedIndex(
  tx: EntityManager,
  index: Pick<IndexRow, 'id' | 'name' | 'state' | 'managed_source_id'>,
  mode: 'exclusive' | 'shared' = 'exclusive',
): Promise<void> {
  await lockIndex(tx, index.id, mode);
  const [now] = await sql<Pick<IndexRow, 'name' | 'state' | 'managed_source_id'>>(
    tx,
    'select state, name, managed_source_id from doc_indexes where id = ?',
    [index.id],
  );
  if (
    now?.state !== index.state ||
    now.name !== index.name ||
    (now.managed_source_id ?? null) !== (index.managed_source_id ?? null)
  )
    throw new IndexReplaced(index);
}

/** Runs a write that resolves its index by name again (up to three times) while `IndexReplaced` says it changed meanwhile. */
export async function onCurrentIndex<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!(err instanceof IndexReplaced) || attempt >= 3) throw err;
    }
  }
}

/** A batch ingestion under the shared lock met another writer of one of its paths: it runs again under the exclusive lock. */
class PathRaced extends Error {
  constructor() {
    super("another writer stored one of the batch's paths meanwhile");
  }
}

/** PostgreSQL's `deadlock_detected` (two writers of the same paths, each waiting on the other's rows). */
const isDeadlock = (err: unknown) => (err as { code?: string } | null)?.code === '40P01';

export interface IngestInput {
  path: string;
  kind: 'file' | 'text';
  content: string;
  metadata?: Record<string, unknown>;
  id?: string;
  /** A Git-backed knowledge-base document: the managed source whose sync feeds it. */
  managedSourceId?: string;
}

export interface IngestOutcome {
  file_id: string;
  filepath: string;
  status: 'added' | 'updated' | 'unchanged';
  chunks: number;
  warnings: string[];
}

/**
 * Adds (or replaces) one document: `ingestDocuments` with a batch of one.
 */
export async function ingestDocument(
  em: EntityManager,
  index: IndexRow,
  doc: IngestInput,
  config: ChunkConfig,
  embedder: Embedder,
): Promise<IngestOutcome> {
  return (
    await ingestDocuments(em, index, [doc], config, embedder, { pendingListKb: SMALL_WRITE_PENDING_LIST_KB })
  )[0]!;
}

/**
 * The full-text index's pending list a write outside the checkpointed ingestions (ADD_TEXT) leaves at
 * most, in kB. New tsvectors wait in the GIN index's pending list, which every full-text query scans
 * linearly, until a checkpoint merges it (`compactionCheckpoint`), autovacuum does (after thousands of
 * inserted rows), or it passes `gin_pending_list_limit` (4 MB by default). A write of one document past
 * this limit merges the whole list itself: a few milliseconds when small writes built it, more when a
 * running batch ingestion left up to 50 documents' entries since its last checkpoint (the merge then does
 * that checkpoint's work early, inside this write's transaction). So SEARCH after a stream of ADD_TEXT calls
 * does not scan up to 4 MB (once for each of its AND and OR tiers that runs). At 100k chunks the first
 * SEARCH after an ADD_TEXT waited 150 to 300 µs more for PostgreSQL without it.
 */
export const SMALL_WRITE_PENDING_LIST_KB = 64;

/**
 * Adds (or replaces) documents: chunks each and embeds its chunks with a provider's embedder before any
 * write (so a provider failure writes nothing and no provider call holds the index's lock), then in one
 * transaction replaces the documents of the same paths and inserts the documents, their chunks (one
 * statement) and their vectors (one statement). The local embedder (`embedNow`) embeds while PostgreSQL
 * inserts the chunks' rows instead (their full-text vectors and indexes: most of the write's time there),
 * so neither side waits for the other. The transaction holds the index's lock shared, so batches of
 * other paths (ADD_DOCUMENTS' two activities at once) write their chunks side by side; a batch that meets
 * another writer of one of its paths runs again under the exclusive lock. An index a rechunk swap retired
 * or a deletion removed while the write waited for the lock: `IndexReplaced`, nothing written. Idempotent
 * per content hash: the same text at the same path is `unchanged` and writes nothing, so a retried
 * ingestion never duplicates chunks. Outcomes are in the order of `docs`. `pendingListKb`: the full-text
 * index's pending list this write leaves at most (`SMALL_WRITE_PENDING_LIST_KB`); unset, PostgreSQL's
 * setting (the checkpointed ingestions merge it at their checkpoints).
 */
export async function ingestDocuments(
  em: EntityManager,
  index: IndexRow,
  docs: IngestInput[],
  config: ChunkConfig,
  embedder: Embedder,
  options: { pendingListKb?: number } = {},
): Promise<IngestOutcome[]> {
  if (new Set(docs.map((d) => d.path)).size < docs.length) {
    // The same path twice: one after the other, so the later text replaces the earlier one.
    const out: IngestOutcome[] = [];
    for (const d of docs) out.push(...(await ingestDocuments(em, index, [d], config, embedder, options)));
    return out;
  }
  // `path = any(array)`: probes of the (index_id, path) index; where the statistics do not know the index yet
  // (statistics.ts) a hashed filter over its documents, where a subquery's path list was rescanned per document.
  const existing = await sqlBound<{ id: string; path: string; content_hash: string; chunk_count: number }>(
    em,
    `select id, path, content_hash, chunk_count from doc_documents where index_id = $1 and path = any($2::text[])`,
    [index.id, docs.map((d) => d.path)],
  );
  const byPath = new Map(existing.map((r) => [r.path, r]));
  const planned = [];
  for (const doc of docs) {
    const hash = contentHash(doc.content);
    const before = byPath.get(doc.path);
    if (before?.content_hash === hash) {
      planned.push({ doc, hash, before, unchanged: true as const });
      continue;
    }
    const chunks = chunkText(doc.content, config);
    // A provider's vectors before any write; the local embedder's while PostgreSQL writes the chunks (below).
    const { vectors, warnings } = embedder.embedNow ? { vectors: [], warnings: [] } : await embedder.embed(chunks);
    planned.push({
      doc,
      hash,
      before,
      unchanged: false as const,
      id: doc.id ?? randomUUID(),
      chunks,
      vectors,
      warnings,
    });
  }
  // In path order: batches writing the same new paths insert them in one order, so one waits for the
  // other (then runs again under the exclusive lock) instead of each waiting on the other's rows until
  // PostgreSQL's deadlock check (a second) picks one to fail.
  const writes = planned.filter((p) => !p.unchanged).sort((a, b) => (a.doc.path < b.doc.path ? -1 : 1));
  // The statements' parameters before the index is locked.
  const documentRows = JSON.stringify(
    writes.map((w) => ({
      id: w.id,
      path: w.doc.path,
      kind: w.doc.kind,
      content: w.doc.content,
      content_hash: w.hash,
      metadata: w.doc.metadata ?? {},
      chunk_count: w.chunks.length,
      managed_source_id: w.doc.managedSourceId ?? null,
    })),
  );
  const chunks = chunkRows(
    index,
    writes.map((w) => ({ documentId: w.id, chunks: w.chunks })),
  );
  const native = writes.length ? await nativeVectorType(em) : null;
  // A provider's vectors are known: their bytes too, before the lock.
  const provided = embedder.embedNow
    ? null
    : vectorPayload(
        writes.flatMap((w) => w.vectors),
        native,
      );
  // Under the index's shared lock first, so batches of other paths write at once (the generation bump of
  // `doc_embeddings`' trigger still orders their commits); a batch that met another writer of its paths
  // (its documents' insert found one taken, or the two deadlocked) runs again under the exclusive lock.
  const write = (mode: 'shared' | 'exclusive') =>
    em.fork().transactional(async (tx) => {
      const pendingKb = options.pendingListKb;
      if (pendingKb !== undefined && Number.isFinite(pendingKb))
        await sql(tx, `set local gin_pending_list_limit = ${Math.max(64, Math.floor(pendingKb))}`);
      await lockResolvedIndex(tx, index, mode);
      const replaced = await sqlBound<{ path: string }>(
        tx,
        'delete from doc_documents where index_id = $1 and path = any($2::text[]) returning path',
        [index.id, writes.map((w) => w.doc.path)],
      );
      const inserted = await sqlBound(
        tx,
        `insert into doc_documents (id, tenant, index_id, path, kind, content, content_hash, metadata, chunk_count,
             managed_source_id)
           select r.id, $1, $2, r.path, r.kind, r.content, r.content_hash, r.metadata, r.chunk_count, r.managed_source_id
             from jsonb_to_recordset($3::jsonb) as r(id uuid, path text, kind text, content text, content_hash text,
               metadata jsonb, chunk_count integer, managed_source_id text)
           on conflict (index_id, path) do nothing
           returning id`,
        [index.tenant, index.id, documentRows],
      );
      if (inserted.length < writes.length) throw new PathRaced();
      const embedNow = embedder.embedNow?.bind(embedder);
      const [, payload] = embedNow
        ? await sqlBoundWhile(tx, chunks.statement, () => {
            for (const w of writes) Object.assign(w, embedNow(w.chunks));
            return vectorPayload(
              writes.flatMap((w) => w.vectors),
              native,
            );
          })
        : [await sqlBoundStatement(tx, chunks.statement), provided!];
      await insertVectors(tx, index, chunks.ids, payload, embedder.collection);
      return new Set(replaced.map((r) => r.path));
    });
  // The paths whose documents the committed write replaced (`updated`; another writer's may have come meanwhile).
  const replaced = writes.length
    ? await write('shared').catch((err: unknown) => {
        if (err instanceof PathRaced || isDeadlock(err)) return write('exclusive');
        throw err;
      })
    : new Set<string>();
  // The vector change log's old rows (usually none: one index range on `logged_at`), so writers that never
  // reach an ingestion checkpoint (ADD_TEXT) do not grow it without bound.
  // Housekeeping after the commit: a failure (a deadlock with a rechunk swap's log deletion) is logged, and
  // the write, committed, still answers (the next prune deletes the rows).
  if (writes.length)
    await pruneVectorLog(em).catch((err: unknown) =>
      log.warn('pruning the vector change log after an ingestion failed', { error: String(err) }),
    );
  return planned.map((p) =>
    p.unchanged
      ? { file_id: p.before.id, filepath: p.doc.path, status: 'unchanged', chunks: p.before.chunk_count, warnings: [] }
      : {
          file_id: p.id,
          filepath: p.doc.path,
          status: replaced.has(p.doc.path) ? 'updated' : 'added',
          chunks: p.chunks.length,
          warnings: p.warnings,
        },
  );
}

/**
 * The statement inserting documents' chunks (one statement with bound parameters, the chunks as arrays,
 * whatever their number) and the new chunks' ids in the order of their rows (each document's, in order).
 */
function chunkRows(
  index: IndexRow,
  docs: ReadonlyArray<{ documentId: string; chunks: readonly string[] }>,
): { statement: BoundStatement; ids: string[] } {
  const ids: string[] = [];
  const documents: string[] = [];
  const seqs: number[] = [];
  const texts: string[] = [];
  for (const d of docs)
    d.chunks.forEach((text, seq) => {
      ids.push(randomUUID());
      documents.push(d.documentId);
      seqs.push(seq);
      texts.push(text);
    });
  return {
    ids,
    statement: {
      text: `insert into doc_chunks (id, tenant, index_id, document_id, seq, text)
       select u.id, $1, $2, u.d, u.s, u.t from unnest($3::uuid[], $4::uuid[], $5::int[], $6::text[]) u(id, d, s, t)`,
      params: [index.tenant, index.id, ids, documents, seqs, texts],
    },
  };
}

/** What `insertVectors` writes: each vector's `encodeVector` bytes, and pgvector's `vector[]` where its column exists. */
interface VectorPayload {
  encoded: Buffer[];
  native: { name: string; array: Buffer } | null;
}

/** `vectors` as `insertVectors` writes them (`native`: `nativeVectorType`'s answer). */
function vectorPayload(vectors: readonly number[][], native: NativeVectorType | null): VectorPayload {
  return {
    encoded: vectors.map((v) => encodeVector(v)),
    native: native && { name: native.name, array: encodeNativeVectorArray(vectors, native.oid) },
  };
}

/**
 * Inserts the vectors of chunks (`ids[i]`'s is the payload's `i`th) in `collection`: one statement with bound
 * parameters (the vectors as one binary string cut by offsets), whatever their number, so the vector
 * triggers (generation bump, change log) run once. With pgvector the native column is written here too
 * (the same float4 values), so its trigger decodes nothing.
 */
async function insertVectors(
  tx: EntityManager,
  index: IndexRow,
  ids: readonly string[],
  { encoded, native }: VectorPayload,
  collection: string,
): Promise<void> {
  if (!ids.length) return;
  // Each vector's byte offset in the concatenation (vectors of one embedder have one length; offsets keep it general).
  const offsets: number[] = [];
  let at = 1;
  for (const v of encoded) {
    offsets.push(at);
    at += v.length;
  }
  const params = [
    collection,
    index.tenant,
    index.id,
    Buffer.concat(encoded),
    ids,
    offsets,
    encoded.map((v) => v.length),
  ];
  if (native)
    await sqlBound(
      tx,
      `insert into doc_embeddings (collection, chunk_id, tenant, index_id, vec, emb)
         select $1, u.id, $2, $3, substring($4::bytea from u.o for u.l), u.e
           from unnest($5::uuid[], $6::int[], $7::int[], $8::${native.name}[]) u(id, o, l, e)`,
      [...params, native.array],
    );
  else
    await sqlBound(
      tx,
      `insert into doc_embeddings (collection, chunk_id, tenant, index_id, vec)
         select $1, u.id, $2, $3, substring($4::bytea from u.o for u.l)
           from unnest($5::uuid[], $6::int[], $7::int[]) u(id, o, l)`,
      params,
    );
}

export interface IndexStats {
  name: string;
  file_count: number;
  document_count: number;
  chunk_count: number;
  created_at: string;
  needs_reindex: boolean;
  chunk_config: ChunkConfig | null;
  embedding_collection: string;
  collections: string[];
  managed: boolean;
}

/**
 * Statistics of the tenant's active indexes (system indexes excluded). An index whose chunks lack
 * vectors in the current collection is stranded: `needs_reindex` true and `chunk_config` null.
 */
export async function indexStats(em: EntityManager, tenant: string, collection: string): Promise<IndexStats[]> {
  const rows = await sql<Row>(
    em,
    `select i.*,
        (select count(*) from doc_documents d where d.index_id = i.id and d.managed_source_id is null) as file_count,
        (select count(*) from doc_documents d where d.index_id = i.id) as document_count,
        (select count(*) from doc_chunks c where c.index_id = i.id) as chunk_count,
        (select count(*) from doc_embeddings e where e.collection = ? and e.index_id = i.id) as current_vectors,
        (select coalesce(array_agg(distinct e.collection order by e.collection), '{}') from doc_embeddings e
           where e.index_id = i.id) as collections
       from doc_indexes i where i.tenant = ? and i.state = 'active' order by i.name`,
    [collection, tenant],
  );
  return rows
    .filter((r) => !SYSTEM_INDEXES.has(r.name as string))
    .map((r) => {
      const chunks = Number(r.chunk_count);
      const stranded = Number(r.current_vectors) < chunks;
      return {
        name: r.name as string,
        file_count: Number(r.file_count),
        document_count: Number(r.document_count),
        chunk_count: chunks,
        created_at: new Date(r.created_at as string).toISOString(),
        needs_reindex: stranded,
        chunk_config: stranded ? null : configOf(r as unknown as IndexRow),
        embedding_collection: collection,
        collections: r.collections as string[],
        managed: r.managed_source_id != null,
      };
    });
}

/** A document of an index by id or by path (a leading or trailing `/` tolerated on either side). */
export async function findDocument(
  em: EntityManager,
  index: IndexRow,
  ref: { file_id?: string; filepath?: string },
): Promise<Row | null> {
  if (ref.file_id) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref.file_id)) return null;
    const rows = await sql(em, 'select * from doc_documents where index_id = ? and id = ?', [index.id, ref.file_id]);
    return rows[0] ?? null;
  }
  const path = trimSlashes(ref.filepath ?? '');
  const rows = await sql(
    em,
    `select * from doc_documents where index_id = ? and btrim(path, '/') = ? order by created_at limit 1`,
    [index.id, path],
  );
  return rows[0] ?? null;
}

export const trimSlashes = (p: string) => p.replace(/^\/+|\/+$/g, '');
