import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ClientBase } from 'pg';
import { sql, sqlBound, sqlBoundStatement } from '../db/sql.js';
import { NATIVE_VECTOR_BLOCK } from './native-vectors.js';
import { forgetNativeVectorType } from './native-vector-writer.js';
import { hnswPredicate, validHnswExistsSql } from './hnsw.js';
import { CHUNK_PAGE, pgArray } from './pages.js';
import { onProcessReset } from '../process-state.js';
import { estimatedSetBytes, TopK, VectorSet, type VectorHit } from './vector-sets.js';
import { ChunkRows, type ChunkRowInput } from './chunk-rows.js';

export { decodeVector, encodeVector, TopK, VectorSet, type VectorHit } from './vector-sets.js';

/**
 * Vector ranking behind one interface, two implementations:
 *
 * - `pgvector` (PostgreSQL with the `vector` extension, e.g. the `pgvector/pgvector:pg16` image of
 *   docker-compose): an HNSW index per (index, collection) over the native column `emb::vector(n)` (cosine
 *   distance, `native-vectors.ts`), built at the ingestion checkpoint (`hnsw.ts`); PostgreSQL answers the
 *   nearest chunks.
 * - `exact` (the embedded PostgreSQL, which has no pgvector): an exact cosine scan in the API process
 *   over the index's unit vectors in memory (`VectorSet`, `vector-sets.ts`: per-dimension posting lists
 *   for sparse vectors such as the local embedder's, column-major float32 blocks for dense ones), cached per
 *   (index, collection) at the index's `vector_generation`, which triggers on `doc_embeddings` bump in
 *   the writing transaction on every insert, update and delete (ingestion, document deletion, the
 *   rechunk swap, re-embedding), logging the changed chunks in `doc_vector_log`. A search reads the
 *   current generations first (one query); a set behind it is brought up to date from the log (the
 *   changed chunks only, one query), so a write by any process is seen at the next search without
 *   reloading the index. A set is loaded whole only when first searched or when the log was pruned
 *   past it; a load reads the generation and the vectors in one repeatable-read snapshot. The hybrid
 *   search does not wait for a load: it starts it in the background (`warm`) and ranks among the
 *   chunks matching a query word meanwhile (`nearestAmong`).
 *
 * Which one serves is decided once per process (`vectorBackend`): `CREATE EXTENSION IF NOT EXISTS
 * vector` succeeding selects pgvector, anything else the exact path. With pgvector the exact path's cache
 * is kept too (`PgvectorBackend.cache`): an index whose vectors fit its budget is loaded in the background
 * at its first search and then ranked by the exact scan; HNSW ranks the others.
 */
/** The two implementations; `kind` tells them apart. */
export type VectorBackend = ExactVectorBackend | PgvectorBackend;

/** What a vector ranking is asked: the `k` chunks nearest `query` among the indexes' vectors of `collection`. */
export interface VectorSearch {
  tenant: string;
  indexIds: string[];
  collection: string;
  query: readonly number[];
  k: number;
}

/**
 * A chunk whose vector changed since a cached set's generation: its current vector and row (position,
 * text, document; `row` may be left out by a reader that keeps no rows), or null when deleted.
 */
export interface VectorChange {
  chunk_id: string;
  vec: Uint8Array | null;
  row?: ChunkRowInput | null;
}

/** The columns a load or a catch-up reads with each vector: the chunk's row (`ChunkRowInput`). */
interface StoredChunk {
  chunk_id: string;
  vec: Buffer;
  seq: number;
  text: string;
  document_id: string;
  path: string;
}

const rowOf = (r: StoredChunk): ChunkRowInput => ({
  seq: Number(r.seq),
  text: r.text,
  documentId: r.document_id,
  path: r.path,
});

/** Applies changes to a set: vectors, and rows where the set keeps them (a change without its row drops them). */
function applyChanges(set: VectorSet, changes: readonly VectorChange[]): void {
  for (const c of changes) {
    if (c.vec) set.upsert(c.chunk_id, c.vec);
    else set.remove(c.chunk_id);
    if (!set.chunks) continue;
    if (c.vec && c.row) set.chunks.set(c.chunk_id, c.row);
    else if (c.vec) set.chunks = null;
    else set.chunks.delete(c.chunk_id);
  }
}

/** A vector ranking as a CTE `vec(id, rank)` of a larger statement, with its parameters in order. */
export interface VectorCte {
  text: string;
  params: unknown[];
}

/** Vectors of one (index, collection) with the generation they were read at, in one snapshot. */
async function loadVectors(em: EntityManager, indexId: string, collection: string): Promise<VectorSet | null> {
  return em.fork().transactional(
    async (tx) => {
      const gen = await sql<{ g: string }>(tx, 'select vector_generation::text as g from doc_indexes where id = ?', [
        indexId,
      ]);
      if (!gen[0]) return null;
      // Page by page into the set: a load never holds the index's stored vectors whole beside the set.
      const set = new VectorSet(BigInt(gen[0].g));
      const chunks = (set.chunks = new ChunkRows());
      // The documents' paths first (far fewer rows than chunks), so the pages join only the chunks.
      const paths = new Map(
        (
          await sql<{ id: string; path: string }>(tx, 'select id, path from doc_documents where index_id = ?', [
            indexId,
          ])
        ).map((d) => [d.id, d.path]),
      );
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        // The cursor bounds both sides of the join: with it on `e` alone, PostgreSQL's merge join read
        // `doc_chunks` from its first id on every page (a 1M-chunk load took about 3 s a page).
        const page = await sql<Omit<StoredChunk, 'path'>>(
          tx,
          `select e.chunk_id, e.vec, c.seq, c.text, c.document_id
             from doc_embeddings e join doc_chunks c on c.id = e.chunk_id
             where e.collection = ? and e.index_id = ? and e.chunk_id > ? and c.id > ?
             order by e.chunk_id limit ?`,
          [collection, indexId, after, after, CHUNK_PAGE],
        );
        set.append(
          page.map((r) => r.chunk_id),
          page.map((r) => r.vec),
        );
        for (const r of page) chunks.set(r.chunk_id, rowOf({ ...r, path: paths.get(r.document_id)! }));
        if (page.length < CHUNK_PAGE) break;
        after = page[page.length - 1]!.chunk_id;
      }
      set.trim(); // the growth headroom of the last pages given back
      return set;
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ },
  );
}

/**
 * Brings a cached set up to the index's current generation from `doc_vector_log`: the chunks changed
 * since the set's generation with their current vectors (none when deleted), read with the generation
 * and the log's pruning floor in one statement (one snapshot). Answers false when the log no longer
 * reaches back to the set's generation (pruned), true when applied; null when the index is gone.
 */
async function catchUp(em: EntityManager, indexId: string, collection: string, set: VectorSet) {
  const from = set.generation;
  const rows = await sql<{ g: string; floor: string } & (StoredChunk | { [K in keyof StoredChunk]: null })>(
    em,
    `select i.vector_generation::text as g, i.vector_log_floor::text as floor, l.chunk_id, e.vec,
         c.seq, c.text, c.document_id, d.path
       from doc_indexes i
       left join lateral (select distinct chunk_id from doc_vector_log
           where index_id = i.id and collection = ? and gen > ?::bigint) l on i.vector_log_floor <= ?::bigint
       left join doc_embeddings e on e.collection = ? and e.chunk_id = l.chunk_id
       left join doc_chunks c on c.id = e.chunk_id
       left join doc_documents d on d.id = c.document_id
       where i.id = ?`,
    [collection, from.toString(), from.toString(), collection, indexId],
  );
  if (!rows[0]) return null;
  if (BigInt(rows[0].floor) > from) return false;
  // A search applied newer changes from its answer meanwhile: these are no news (and older states).
  if (BigInt(rows[0].g) <= set.generation) return 'current';
  try {
    applyChanges(
      set,
      rows.flatMap((r) =>
        r.chunk_id === null
          ? []
          : [
              {
                chunk_id: r.chunk_id,
                vec: r.vec,
                row: r.vec && r.document_id !== null ? rowOf(r as StoredChunk) : null,
              },
            ],
      ),
    );
  } catch (err) {
    // Half-written: behind every logged generation, so the next search reloads the set whole.
    set.generation = -1n;
    throw err;
  }
  set.generation = BigInt(rows[0].g);
  return 'applied';
}

/**
 * Deletes log rows older than `seconds` (and those of deleted indexes with them) and raises each
 * index's `vector_log_floor` to the newest generation deleted, so a cache older than that reloads. One
 * pruner at a time (a transaction-scoped try-lock in the statement): another one running meanwhile
 * deletes the same rows, so this one does nothing. Two at once updated the same indexes' rows in their
 * own orders and could deadlock, failing the ingestion (already committed) that ran one.
 */
export async function pruneVectorLog(em: EntityManager, seconds = 600): Promise<void> {
  await sql(
    em,
    `with pruner as (select pg_try_advisory_xact_lock(hashtextextended('doc_vector_log', 15)) as alone),
       d as (delete from doc_vector_log
               where logged_at < now() - make_interval(secs => ?) and (select alone from pruner)
               returning index_id, gen),
       m as (select index_id, max(gen) as gen from d group by index_id)
     update doc_indexes i set vector_log_floor = greatest(i.vector_log_floor, m.gen) from m where i.id = m.index_id`,
    [seconds],
  );
}

/**
 * Records a document's chunks as changed without a vector write (RENAME_DOCUMENT: their rows' path changed):
 * the index's generation bumped and the chunks logged under it, as the vector triggers do for a write
 * (`VECTOR_LOG_TRIGGER`; an index that is not active is bumped, not logged), so every process caching the
 * index's rows reads them again with its next search's changes. The caller holds the index's lock.
 */
export async function logDocumentChanged(tx: EntityManager, indexId: string, documentId: string): Promise<void> {
  await sql(
    tx,
    `with bumped as (
       update doc_indexes set vector_generation = vector_generation + 1 where id = ? returning id, vector_generation, state)
     insert into doc_vector_log (index_id, gen, collection, chunk_id)
       select b.id, b.vector_generation, e.collection, e.chunk_id
         from bumped b, doc_chunks c join doc_embeddings e on e.chunk_id = c.id
         where c.document_id = ? and b.state = 'active'`,
    [indexId, documentId],
  );
}

/** How long a set found larger than the cache's budget is not loaded in the background again. */
const OVERSIZED_RETRY_MS = 10 * 60_000;

/**
 * The exact path: an LRU of (index, collection) vector sets within a byte budget
 * (`PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB`, default an eighth of the memory, at least 512 MB). A set is loaded whole once, then kept
 * current from `doc_vector_log` (each search reads the generations, one query; a changed index costs
 * one more query for the changed chunks only), so writes by any process are seen at the next search
 * without a reload. A set larger than the budget is scanned without being kept. Concurrent searches
 * needing the same set share one load or catch-up.
 */
export class ExactVectorBackend {
  readonly kind = 'exact' as const;
  private readonly entries = new Map<string, VectorSet>();
  /** Each kept set's bytes as counted in `bytes` when it was kept. */
  private readonly counted = new Map<string, number>();
  private readonly refreshing = new Map<string, Promise<VectorSet | null>>();
  /** Changes from searches' answers waiting to be written to the sets (`deferApply`). */
  private readonly applying = new Set<Promise<void>>();
  private bytes = 0;
  private readonly warming = new Set<Promise<void>>();
  /** Sets found larger than the budget (key to when): not loaded in the background again for a while. */
  private readonly oversized = new Map<string, number>();
  /** Sets a background warm-up is sizing or loading now. */
  private readonly sizing = new Set<string>();
  /** Whole loads from PostgreSQL, searches served from memory as cached, and incremental catch-ups (tests, benchmark). */
  readonly stats = { loads: 0, hits: 0, catchUps: 0 };
  /** Searches answered among a candidate set while an index was not cached (`nearestAmong`). */
  amongSearches = 0;
  /** Catch-ups applied from the changes a search's answer carried (`peek().apply`; tests). */
  appliedFromAnswers = 0;
  /** Catch-ups made after this process's own writes (`afterWrite`; tests). */
  appliedAfterWrites = 0;

  constructor(private readonly budgetBytes: number) {}

  async nearest(
    em: EntityManager,
    tenant: string,
    indexIds: string[],
    collection: string,
    query: readonly number[],
    k: number,
  ): Promise<VectorHit[]> {
    if (!indexIds.length) return [];
    const gens = await sql<{ id: string; g: string }>(
      em,
      'select id, vector_generation::text as g from doc_indexes where tenant = ? and id = any(?::uuid[])',
      [tenant, pgArray(indexIds)],
    );
    return this.nearestAt(em, Object.fromEntries(gens.map((r) => [r.id, r.g])), collection, query, k);
  }

  /**
   * `nearest` for generations already read (index id to generation, e.g. returned by SEARCH's
   * statement): each set brought up to its generation (a catch-up, or a load), then scanned.
   */
  async nearestAt(
    em: EntityManager,
    gens: Record<string, string>,
    collection: string,
    query: readonly number[],
    k: number,
  ): Promise<VectorHit[]> {
    const top = new TopK(k);
    for (const [id, g] of Object.entries(gens)) {
      const set = await this.entry(em, id, collection, BigInt(g));
      if (k > 0) set?.scan(query, top); // k 0: a warm-up, the sets loaded and nothing ranked
    }
    return top.hits;
  }

  /** The cached sets of every listed index (`CachedSets`), without any I/O; null when one is not cached. */
  peek(indexIds: string[], collection: string): CachedSets | null {
    const sets: Array<[string, VectorSet]> = [];
    for (const id of indexIds) {
      const set = this.entries.get(`${id}|${collection}`);
      if (!set) return null;
      sets.push([id, set]);
    }
    return new CachedSets(this, sets, collection);
  }

  /**
   * `CachedSets.apply`'s bookkeeping (for it alone): a set applied (counted, and kept in the budget at its size now
   * while it is still this backend's), or failed half-written (dropped while it is: the next search loads it again).
   */
  settleAnswerApply(key: string, set: VectorSet, failed: boolean): void {
    const current = this.entries.get(key) === set;
    if (failed) {
      if (current) this.forget(key);
      return;
    }
    this.stats.catchUps++;
    this.appliedFromAnswers++;
    if (current) this.keep(key, set);
  }

  /**
   * Loads (or catches up) the listed indexes' sets in the background; `settled()` waits for them. Not when
   * one of them was found larger than the budget in the last `OVERSIZED_RETRY_MS` (its load would be thrown
   * away again), nor when its size estimated from its row count and a sample of its vectors
   * (`estimatedSetBytes`) is, nor twice at once.
   */
  warm(em: EntityManager, tenant: string, indexIds: string[], collection: string): void {
    const now = Date.now();
    const key = (id: string) => `${id}|${collection}`;
    if (indexIds.some((id) => now - (this.oversized.get(key(id)) ?? -Infinity) < OVERSIZED_RETRY_MS)) return;
    if (indexIds.some((id) => this.sizing.has(key(id)))) return; // a warm-up of these is under way
    for (const id of indexIds) this.sizing.add(key(id));
    const work = (async () => {
      // A set estimated larger than the budget from its row count and a sample is not loaded at all (a
      // large index of a dense model's vectors would be read whole only to be thrown away).
      for (const id of indexIds) {
        if (this.entries.has(key(id)) || this.refreshing.has(key(id))) continue;
        const [{ n }] = await sql<{ n: number }>(
          em.fork(),
          'select count(*)::int as n from doc_embeddings where index_id = ? and collection = ?',
          [id, collection],
        );
        const sample = await sql<{ vec: Buffer }>(
          em.fork(),
          'select vec from doc_embeddings where index_id = ? and collection = ? limit 200',
          [id, collection],
        );
        if (
          estimatedSetBytes(
            n,
            sample.map((r) => r.vec),
          ) > this.budgetBytes
        ) {
          this.oversized.set(key(id), Date.now());
          return;
        }
      }
      await this.nearest(em.fork(), tenant, indexIds, collection, [], 0);
    })()
      .catch(() => undefined) // a failed load is retried by the next search
      .finally(() => {
        for (const id of indexIds) this.sizing.delete(key(id));
      });
    this.warming.add(work);
    void work.finally(() => this.warming.delete(work));
  }

  /** The cached sets: each one's layout, chunks and bytes (rows included), and the bytes of all (benchmark, tests). */
  usage() {
    const sets = [...this.entries].map(([key, set]) => ({
      key,
      layout: set.layout,
      size: set.size,
      bytes: set.bytes,
      /** The chunks' rows' share of `bytes`, null when the set keeps no rows. */
      rowBytes: set.chunks?.bytes ?? null,
    }));
    return { sets, bytes: this.bytes, budgetBytes: this.budgetBytes };
  }

  /**
   * Brings this process's cached sets of an index up to date after a write this process made (ADD_TEXT,
   * DELETE_DOCUMENT, RENAME_DOCUMENT through this API): the changes since each set's generation read from
   * the vector log and applied in place, so the writer's next SEARCH finds its set current and carries no
   * changes. Sets not cached here, or being loaded or caught up, are left to the next search. Other
   * processes' writes (the worker's ingestions, another API replica) still reach a search with its
   * statement's answer. Never throws: a failed catch-up only leaves the work to that search.
   */
  async afterWrite(em: EntityManager, indexId: string): Promise<void> {
    for (const [key, set] of [...this.entries]) {
      if (!key.startsWith(`${indexId}|`) || this.refreshing.has(key)) continue;
      const collection = key.slice(indexId.length + 1);
      const before = set.generation;
      const outcome = await catchUp(em.fork(), indexId, collection, set).catch(() => false);
      if (outcome !== 'applied' || set.generation === before) continue;
      this.stats.catchUps++;
      this.appliedAfterWrites++;
      if (this.entries.get(key) === set) this.keep(key, set); // its size in the budget as it is now
    }
  }

  /**
   * Runs `apply` (changes a search's answer carried, written to the cached sets) once the search has answered:
   * on the event loop's next check phase, after the response is on its way. `settled()` waits for it.
   */
  deferApply(apply: () => void): void {
    const done: Promise<void> = new Promise<void>((resolve) =>
      setImmediate(() => {
        try {
          apply();
        } catch {
          // Nothing to answer any more: a set that failed to take the changes was dropped (`apply`), and the
          // next search of its index loads it again.
        } finally {
          this.applying.delete(done);
          resolve();
        }
      }),
    );
    this.applying.add(done);
  }

  /** Resolves when every background load and deferred write started so far has ended. */
  async settled(): Promise<void> {
    while (this.warming.size || this.applying.size) await Promise.all([...this.warming, ...this.applying]);
  }

  /**
   * The exact ranking among a bounded candidate set, for an index whose vectors are not cached yet:
   * cached indexes are scanned whole, the others contribute the chunks matching any word of `orQuery`
   * (at most `CHUNK_PAGE` per search, read with their vectors in one statement).
   */
  async nearestAmong(em: EntityManager, search: VectorSearch, orQuery: string | null): Promise<VectorHit[]> {
    const { tenant, indexIds, collection, query, k } = search;
    const top = new TopK(k);
    const missing: string[] = [];
    for (const id of indexIds) {
      const set = this.entries.get(`${id}|${collection}`);
      if (set) set.scan(query, top);
      else missing.push(id);
    }
    if (missing.length && orQuery) {
      const rows = await sql<{ chunk_id: string; vec: Buffer }>(
        em,
        `select e.chunk_id, e.vec from (
             select c.id from doc_chunks c
               where c.tsv @@ to_tsquery('english', ?) and c.tenant = ? and c.index_id = any(?::uuid[]) limit ?
           ) m join doc_embeddings e on e.collection = ? and e.chunk_id = m.id`,
        [orQuery, tenant, pgArray(missing), CHUNK_PAGE, collection],
      );
      this.amongSearches++;
      VectorSet.of(
        0n,
        rows.map((r) => r.chunk_id),
        rows.map((r) => r.vec),
      ).scan(query, top);
    }
    return top.hits;
  }

  /** The set at `generation` or newer (a write committed meanwhile is fine), or null when the index is gone. */
  private async entry(em: EntityManager, indexId: string, collection: string, generation: bigint) {
    const key = `${indexId}|${collection}`;
    const cached = this.entries.get(key);
    if (cached && cached.generation >= generation) {
      this.stats.hits++;
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    for (;;) {
      let flight = this.refreshing.get(key);
      if (!flight) {
        flight = this.refresh(em, key, indexId, collection).finally(() => this.refreshing.delete(key));
        this.refreshing.set(key, flight);
      }
      const set = await flight;
      // A refresh that started before this search read its generation may be older: refresh again.
      if (!set || set.generation >= generation) return set;
    }
  }

  private async refresh(em: EntityManager, key: string, indexId: string, collection: string) {
    const cached = this.entries.get(key);
    if (cached) {
      this.forget(key);
      const applied = await catchUp(em, indexId, collection, cached);
      if (applied === null) return null;
      if (applied) {
        this.stats.catchUps++;
        this.keep(key, cached);
        return cached;
      }
    }
    this.stats.loads++;
    const loaded = await loadVectors(em, indexId, collection);
    if (loaded) this.keep(key, loaded);
    return loaded;
  }

  private forget(key: string): void {
    if (!this.entries.delete(key)) return;
    // The bytes counted when it was kept: a set changed in place since (a catch-up) is larger now.
    this.bytes -= this.counted.get(key) ?? 0;
    this.counted.delete(key);
  }

  private keep(key: string, set: VectorSet): void {
    this.forget(key);
    // The chunks' rows are kept only where the budget holds them with the vectors; the vectors come first.
    if (set.bytes > this.budgetBytes) set.chunks = null;
    if (set.bytes > this.budgetBytes) {
      this.oversized.set(key, Date.now());
      return;
    }
    this.oversized.delete(key);
    while (this.bytes + set.bytes > this.budgetBytes && this.entries.size) {
      const k0 = this.entries.keys().next().value as string;
      this.forget(k0);
    }
    const bytes = set.bytes;
    this.entries.set(key, set);
    this.counted.set(key, bytes);
    this.bytes += bytes;
  }
}

/**
 * The cached sets of the indexes a search reads (`ExactVectorBackend.peek`), without any I/O: `scan` ranks them,
 * `generations` are the sets' generations now (index id to generation), and `apply` brings a set up to a
 * generation from the changed chunks read with it (`VectorChange`, as SEARCH's lexical statement returns them):
 * applied only when that generation is newer than the set's, so changes read in an older snapshot than one
 * already applied are skipped (a set's generation never goes back). A class, not an object of closures: made
 * for every search, and run through `tsx` (as `npm start` runs) each closure is also named by `__name`.
 */
export class CachedSets {
  constructor(
    private readonly backend: ExactVectorBackend,
    private readonly sets: ReadonlyArray<readonly [string, VectorSet]>,
    private readonly collection: string,
  ) {}

  scan(query: readonly number[], k: number): VectorHit[] {
    const top = new TopK(k);
    for (const [, set] of this.sets) set.scan(query, top);
    return top.hits;
  }

  generations(): Map<string, bigint> {
    return new Map(this.sets.map(([id, set]) => [id, set.generation]));
  }

  /** Every set keeps its chunks' rows (`VectorSet.chunks`), so `row` answers for every cached chunk. */
  hasRows(): boolean {
    return this.sets.every(([, set]) => set.chunks !== null);
  }

  /** A cached chunk's row and index, or undefined (not in the sets, or a set keeps no rows). */
  row(chunkId: string) {
    for (const [indexId, set] of this.sets) {
      const row = set.chunks?.get(chunkId);
      if (row) return { indexId, seq: row.seq, text: row.text, documentId: row.documentId, path: row.document.path };
    }
    return undefined;
  }

  /**
   * A ranking (`scan`'s, taken before `changed` chunks were applied) brought up to date without a whole
   * scan: when none of the changed chunks was among its hits, the hits are still the best of the
   * unchanged rows, so the new best `k` are among them and the changed chunks' new scores; otherwise
   * (or when the sets moved in other ways) null, and the caller scans again.
   */
  rerank(query: readonly number[], k: number, hits: readonly VectorHit[], changed: readonly string[]) {
    const ids = new Set(changed);
    if (hits.some((h) => ids.has(h.id))) return null;
    const top = new TopK(k);
    for (const h of hits) top.offer(h.id, h.sim);
    for (const [, set] of this.sets) set.scanRows(query, changed, top);
    return top.hits;
  }

  /**
   * `rerank` without writing the changes first: a ranking (`scan`'s) brought up to date with changed chunks
   * (index id and change) scored from their vectors as the sets will score them once written, when none
   * of them was among its hits; otherwise (or when a changed chunk's set has no rows) null. The changes
   * can then be applied after the search has answered (`deferApply`).
   */
  rankWith(
    query: readonly number[],
    k: number,
    hits: readonly VectorHit[],
    changes: ReadonlyArray<[string, VectorChange]>,
  ) {
    const ids = new Set(changes.map(([, c]) => c.chunk_id));
    if (hits.some((h) => ids.has(h.id))) return null;
    const top = new TopK(k);
    for (const h of hits) top.offer(h.id, h.sim);
    // A scorer per changed set only (the unit query and its dimensions, made once per set).
    const scorers = new Map<string, ReturnType<VectorSet['scorer']>>();
    for (const [indexId, c] of changes) {
      if (!c.vec) continue;
      if (!scorers.has(indexId))
        scorers.set(indexId, this.sets.find(([id]) => id === indexId)?.[1].scorer(query) ?? null);
      const score = scorers.get(indexId);
      if (!score) return null;
      const s = score(c.vec);
      if (s > 0) top.offer(c.chunk_id, s);
    }
    return top.hits;
  }

  apply(indexId: string, generation: bigint, changes: readonly VectorChange[]): boolean {
    const set = this.sets.find(([id]) => id === indexId)?.[1];
    if (!set || generation <= set.generation) return false;
    const key = `${indexId}|${this.collection}`;
    try {
      applyChanges(set, changes);
    } catch (err) {
      // A set left half-written is no longer the index's: dropped, the next search loads it again.
      this.backend.settleAnswerApply(key, set, true);
      throw err;
    }
    set.generation = generation;
    this.backend.settleAnswerApply(key, set, false);
    return true;
  }
}

/**
 * The pgvector path: one HNSW index per (document index, collection) over the native column,
 * `emb::vector(dim)` (partial, `where collection = … and index_id = …`, `hnsw.ts`), built in bulk at
 * the ingestion checkpoint, never by a search; `emb` is set by the writer (or the trigger) equal to `vec`
 * (`native-vectors.ts`). The query ranks each searched index apart (its predicate spelled as literals,
 * so the planner matches the partial index) by cosine distance, `k` rows each with a bounded candidate
 * list (`hnsw.ef_search`), then keeps the best `k`. An index without an HNSW index yet (small, or its
 * ingestion's build still to come) is answered by the same statement with an exact scan of its rows.
 * The ranking is a CTE (`vectorCte`) the hybrid search embeds in its one statement.
 */
export class PgvectorBackend {
  readonly kind = 'pgvector' as const;

  /**
   * `iterativeScan`: pgvector 0.8's iterative index scan is available (not needed: each index is ranked by its
   * own); `efSearch`: HNSW's candidate list (`PLATFORM_DOCUMENT_INDEX_HNSW_EF_SEARCH`; at least `k`).
   */
  constructor(
    readonly iterativeScan: boolean,
    readonly efSearch = DEFAULT_EF_SEARCH,
    /**
     * The in-process exact cache (as on the embedded PostgreSQL) for the indexes that fit its budget: once an
     * index is cached there, SEARCH ranks it by the exact scan (faster than the HNSW scan, and exact); null
     * (`PLATFORM_DOCUMENT_INDEX_HNSW_ONLY`): PostgreSQL ranks every search.
     */
    readonly cache: ExactVectorBackend | null = null,
  ) {}

  /**
   * Those of `indexIds` whose HNSW build is requested and not done yet (a rechunk's new index, built after its
   * swap: `hnsw_build_requested_at`, `requestHnswBuild`): PostgreSQL would answer a search of one with an exact
   * scan of all its rows, so a search the cache cannot answer yet ranks those among the chunks matching a query
   * word instead (`ExactVectorBackend.nearestAmong`, as on the embedded PostgreSQL). Asked only by such a search.
   * An index with a valid HNSW index is not awaiting, whatever the request says (a worker of the version before
   * built it without clearing the request).
   */
  async awaitingHnsw(em: EntityManager, indexIds: readonly string[]): Promise<string[]> {
    const rows = await sql<{ id: string }>(
      em,
      `select d.id from doc_indexes d where d.id = any(?::uuid[]) and d.hnsw_build_requested_at is not null
         and not ${validHnswExistsSql('d.id')}`,
      [pgArray([...new Set(indexIds)])],
    );
    return rows.map((r) => r.id);
  }

  async nearest(
    em: EntityManager,
    tenant: string,
    indexIds: string[],
    collection: string,
    query: readonly number[],
    k: number,
  ): Promise<VectorHit[]> {
    if (!indexIds.length || !query.length) return [];
    const rows = await this.inSearch<{ id: string; d: number }>(
      em,
      { tenant, indexIds, collection, query, k },
      (vec) => {
        let n = 0;
        const text = `with ${vec.text} select id, d from vec order by rank`.replace(/\?/g, () => `$${++n}`);
        return { text, params: vec.params };
      },
    );
    return rows.map((r) => ({ id: r.id, sim: 1 - Number(r.d) }));
  }

  /**
   * The rows of `statement` (built around the ranking, a CTE `vec(id, rank, d)`: the `k` nearest chunks
   * of the indexes with a positive cosine, closest first, ties by chunk id), run as one bound statement
   * on a connection whose HNSW candidate list (`hnsw.ef_search`) covers `k` rows: a session setting,
   * set once per pooled connection (only these statements scan HNSW indexes), or for the transaction
   * when `em` is in one (a rolled-back transaction would undo a session setting).
   */
  async inSearch<T extends object>(
    em: EntityManager,
    search: VectorSearch,
    statement: (vec: VectorCte) => { text: string; params: unknown[]; name?: string },
  ): Promise<T[]> {
    const { tenant, indexIds, collection, query, k } = search;
    const dim = query.length;
    if (!dim || !indexIds.length) {
      const s = statement({ text: 'vec as (select null::uuid as id, null::bigint as rank where false)', params: [] });
      return sqlBound<T>(em, s.text, s.params, s.name);
    }
    const literal = `[${Array.from(query, (x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;
    // One branch per index, each ordered by the distance its HNSW index (when built) answers: the query
    // vector a bound parameter of each (an ordered index scan needs a constant operand, not a joined value).
    const ids = [...new Set(indexIds)];
    const branches = ids.map(
      (id) => `(select e.chunk_id as id, e.emb::vector(${dim}) <=> ?::vector(${dim}) as d from doc_embeddings e
           where ${hnswPredicate(id, collection, 'e.')} and e.tenant = ?
           order by e.emb::vector(${dim}) <=> ?::vector(${dim}) limit ?)`,
    );
    const s = statement({
      // The branches' rows materialized, then sorted: an HNSW scan's order is approximate, but the planner
      // takes it as sorted by distance (it would only re-sort ties, or merge the branches as they come).
      text: `vec_near as materialized (${branches.join(' union all ')}),
       vec as (select n.id, row_number() over (order by n.d, n.id) as rank, n.d from (
           select u.id, u.d from vec_near u order by u.d, u.id limit ?
         ) n where n.d < 1)`,
      params: [...ids.flatMap(() => [literal, tenant, literal, k]), k],
    });
    const ef = hnswEfSearch(k, this.efSearch);
    const local = Boolean(em.getTransactionContext());
    const setup = async (connection: ClientBase) => {
      if (!local && efSearchOf.get(connection) === ef) return;
      await connection.query(`select set_config('hnsw.ef_search', '${ef}', ${local})`);
      if (!local) efSearchOf.set(connection, ef);
    };
    return sqlBoundStatement<T>(em, { ...s, setup });
  }
}

/** Each pooled connection's session `hnsw.ef_search`, as the pgvector path set it. */
let efSearchOf = new WeakMap<object, number>();
onProcessReset('shared/document-index/vectors.ts#efSearchOf', () => {
  efSearchOf = new WeakMap();
});

/**
 * HNSW's candidate list by default: 0.69 to 0.71 of the exact top 10 at 100k local hashing vectors of 1,536 buckets
 * and 0.92 to 0.955 at 10k (with 384 buckets it was 0.85 and 0.97). Only indexes the vector cache does not hold
 * (and the first searches before it loads one) are ranked by HNSW.
 */
export const DEFAULT_EF_SEARCH = 100;

/** HNSW's candidate list for `k` results: `ef`, at least `k` (pgvector answers at most `ef_search` rows). */
export function hnswEfSearch(k: number, ef = DEFAULT_EF_SEARCH): number {
  return Math.max(ef, k);
}

/**
 * Detects pgvector: `CREATE EXTENSION IF NOT EXISTS vector` succeeding and the native `emb` column
 * present (added here when the extension came after the migration) selects the pgvector backend; a
 * failure (extension not installed, no privilege) the exact one.
 */
export async function detectVectorBackend(
  em: EntityManager,
  budgetBytes: number,
  efSearch = DEFAULT_EF_SEARCH,
  hnswOnly = false,
): Promise<VectorBackend> {
  try {
    await sql(em.fork(), 'create extension if not exists vector');
    const v = await sql<{ extversion: string }>(
      em.fork(),
      `select extversion from pg_extension where extname = 'vector'`,
    );
    // An extension created after the migration ran: the native column is added (and backfilled) now.
    if (!(await hasNativeColumn(em))) {
      await sql(em.fork(), NATIVE_VECTOR_BLOCK);
      forgetNativeVectorType(em); // this process's writers set the new column from now on
    }
    if (!(await hasNativeColumn(em))) throw new Error('doc_embeddings.emb missing');
    const [major, minor] = (v[0]?.extversion ?? '0.0').split('.').map(Number);
    return new PgvectorBackend(
      major! > 0 || minor! >= 8,
      efSearch,
      hnswOnly ? null : new ExactVectorBackend(budgetBytes),
    );
  } catch {
    return new ExactVectorBackend(budgetBytes);
  }
}

async function hasNativeColumn(em: EntityManager): Promise<boolean> {
  const rows = await sql(
    em.fork(),
    `select 1 from information_schema.columns
       where table_schema = current_schema() and table_name = 'doc_embeddings' and column_name = 'emb'`,
  );
  return rows.length > 0;
}

let shared: Promise<VectorBackend> | undefined;
onProcessReset('shared/document-index/vectors.ts#shared', () => {
  shared = undefined;
});

/**
 * The process's vector backend if it has been detected (a search or a write needing it ran), else undefined:
 * for work that only matters to a process that already has one (its cached sets), so it never starts a
 * detection (`CREATE EXTENSION`, the native column's backfill) inside a request that does not need it.
 */
export function detectedVectorBackend(): VectorBackend | undefined {
  return detected;
}
let detected: VectorBackend | undefined;
onProcessReset('shared/document-index/vectors.ts#detected', () => {
  detected = undefined;
});

/** The process's vector backend, detected once. */
export function vectorBackend(em: EntityManager, config: AppConfig): Promise<VectorBackend> {
  const { vectorCacheMb, hnswEfSearch: ef, hnswOnly } = config.documentIndex;
  shared ??= detectVectorBackend(em, vectorCacheMb * 1024 * 1024, ef, hnswOnly).then(
    (backend) => (detected = backend),
    (err: unknown) => {
      shared = undefined;
      throw err;
    },
  );
  return shared;
}
