import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { sql } from '../db/sql.js';
import { CHUNK_PAGE, pgArray } from './pages.js';
import { onProcessReset } from '../process-state.js';

/**
 * Vector ranking behind one interface, two implementations:
 *
 * - `pgvector` (PostgreSQL with the `vector` extension, e.g. the `pgvector/pgvector:pg16` image of
 *   docker-compose): an HNSW index per collection over the expression `doc_vec_floats(vec)::vector(n)`
 *   (cosine distance), created on first use; PostgreSQL answers the nearest chunks.
 * - `exact` (the embedded PostgreSQL, which has no pgvector): an exact cosine scan in the API process
 *   over an in-memory `Float32Array` of the index's unit vectors, cached per (index, collection) and
 *   keyed by the index's `vector_generation`, which triggers on `doc_embeddings` bump in the writing
 *   transaction on every insert, update and delete (ingestion, document deletion, the rechunk swap,
 *   re-embedding). A search reads the current generation first and reloads when it differs, and a
 *   load reads the generation and the vectors in one repeatable-read snapshot, so a search never sees
 *   vectors older than a write committed before it started.
 *
 * Which one serves is decided once per process (`vectorBackend`): `CREATE EXTENSION IF NOT EXISTS
 * vector` succeeding selects pgvector, anything else the exact path.
 */
export interface VectorHit {
  id: string;
  sim: number;
}

export interface VectorBackend {
  kind: 'pgvector' | 'exact';
  nearest(
    em: EntityManager,
    tenant: string,
    indexIds: string[],
    collection: string,
    query: readonly number[],
    k: number,
  ): Promise<VectorHit[]>;
}

/** A vector as stored in `doc_embeddings.vec`: little-endian float4 bytes. */
export function encodeVector(v: readonly number[]): Buffer {
  const b = Buffer.allocUnsafe(v.length * 4);
  v.forEach((x, i) => b.writeFloatLE(x, i * 4));
  return b;
}

export function decodeVector(b: Uint8Array): Float32Array {
  const out = new Float32Array(b.length >> 2);
  new Uint8Array(out.buffer).set(b.subarray(0, out.length * 4));
  if (!LITTLE_ENDIAN) for (let i = 0; i < out.length; i++) out[i] = Buffer.from(b).readFloatLE(i * 4);
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function unit(q: readonly number[], dim: number): Float32Array {
  const out = new Float32Array(dim);
  let n = 0;
  for (let i = 0; i < Math.min(dim, q.length); i++) {
    out[i] = q[i]!;
    n += q[i]! * q[i]!;
  }
  if (n > 0) {
    const s = 1 / Math.sqrt(n);
    for (let i = 0; i < dim; i++) out[i]! *= s;
  }
  return out;
}

/** Keeps the best `k` hits, ordered by similarity (higher first), then chunk id. */
class TopK {
  readonly hits: VectorHit[] = [];
  constructor(private readonly k: number) {}
  get floor(): number {
    return this.hits.length < this.k ? 0 : this.hits[this.hits.length - 1]!.sim;
  }
  offer(id: string, sim: number): void {
    if (sim <= 0 || this.k <= 0) return;
    const h = this.hits;
    if (h.length >= this.k) {
      const last = h[h.length - 1]!;
      if (sim < last.sim || (sim === last.sim && id > last.id)) return;
    }
    let i = h.length;
    while (i > 0 && (h[i - 1]!.sim < sim || (h[i - 1]!.sim === sim && h[i - 1]!.id > id))) i--;
    h.splice(i, 0, { id, sim });
    if (h.length > this.k) h.pop();
  }
}

interface CacheEntry {
  generation: string;
  ids: string[];
  /** Unit vectors, `dim` floats per chunk. */
  data: Float32Array;
  dim: number;
}

/** Vectors of one (index, collection) with the generation they were read at, in one snapshot. */
async function loadVectors(em: EntityManager, indexId: string, collection: string): Promise<CacheEntry | null> {
  return em.fork().transactional(
    async (tx) => {
      const gen = await sql<{ g: string }>(tx, 'select vector_generation::text as g from doc_indexes where id = ?', [
        indexId,
      ]);
      if (!gen[0]) return null;
      const ids: string[] = [];
      const raw: Buffer[] = [];
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        const page = await sql<{ chunk_id: string; vec: Buffer }>(
          tx,
          `select chunk_id, vec from doc_embeddings where collection = ? and index_id = ? and chunk_id > ?
             order by chunk_id limit ?`,
          [collection, indexId, after, CHUNK_PAGE],
        );
        for (const r of page) {
          ids.push(r.chunk_id);
          raw.push(r.vec);
        }
        if (page.length < CHUNK_PAGE) break;
        after = page[page.length - 1]!.chunk_id;
      }
      const dim = raw.reduce((m, b) => Math.max(m, b.length >> 2), 0);
      const data = new Float32Array(ids.length * dim);
      raw.forEach((b, row) => {
        const v = decodeVector(b);
        let n = 0;
        for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!;
        const s = n > 0 ? 1 / Math.sqrt(n) : 0;
        const base = row * dim;
        for (let i = 0; i < v.length; i++) data[base + i] = v[i]! * s;
      });
      return { generation: gen[0].g, ids, data, dim };
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ },
  );
}

/**
 * The exact path: an LRU of (index, collection) vector sets within a byte budget
 * (`PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB`, default 512). A set larger than the budget is scanned without being
 * kept. Concurrent searches needing the same missing set share one load.
 */
export class ExactVectorBackend implements VectorBackend {
  readonly kind = 'exact' as const;
  private readonly entries = new Map<string, CacheEntry>();
  private readonly loading = new Map<string, Promise<CacheEntry | null>>();
  private bytes = 0;
  /** Loads from PostgreSQL and searches served from memory (for tests and the benchmark). */
  readonly stats = { loads: 0, hits: 0 };

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
    const top = new TopK(k);
    for (const { id, g } of gens) {
      const entry = await this.entry(em, id, collection, g);
      if (!entry || !entry.ids.length) continue;
      const q = unit(query, entry.dim);
      const { data, dim, ids } = entry;
      for (let row = 0, base = 0; row < ids.length; row++, base += dim) {
        let dot = 0;
        for (let i = 0; i < dim; i++) dot += q[i]! * data[base + i]!;
        if (dot > 0 && dot >= top.floor) top.offer(ids[row]!, dot);
      }
    }
    return top.hits;
  }

  private async entry(em: EntityManager, indexId: string, collection: string, generation: string) {
    const key = `${indexId}|${collection}`;
    const cached = this.entries.get(key);
    if (cached && cached.generation === generation) {
      this.stats.hits++;
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    const flightKey = `${key}|${generation}`;
    let flight = this.loading.get(flightKey);
    if (!flight) {
      flight = loadVectors(em, indexId, collection).finally(() => this.loading.delete(flightKey));
      this.loading.set(flightKey, flight);
      this.stats.loads++;
    }
    const loaded = await flight;
    if (loaded) this.keep(key, loaded);
    // A load may read a newer generation than the one asked for (a write committed in between): newer is fine.
    return loaded;
  }

  private keep(key: string, entry: CacheEntry): void {
    const size = entry.data.byteLength + entry.ids.length * 80;
    const old = this.entries.get(key);
    if (old) {
      if (BigInt(old.generation) > BigInt(entry.generation)) return;
      this.entries.delete(key);
      this.bytes -= old.data.byteLength + old.ids.length * 80;
    }
    if (size > this.budgetBytes) return;
    while (this.bytes + size > this.budgetBytes && this.entries.size) {
      const [k0, e0] = this.entries.entries().next().value as [string, CacheEntry];
      this.entries.delete(k0);
      this.bytes -= e0.data.byteLength + e0.ids.length * 80;
    }
    this.entries.set(key, entry);
    this.bytes += size;
  }
}

/**
 * The pgvector path: one HNSW index per collection over `doc_vec_floats(vec)::vector(dim)` (partial,
 * `where collection = …`), created when the collection is first searched; the query orders by cosine
 * distance with a wider candidate list (`hnsw.ef_search`, and pgvector 0.8's iterative scan when
 * present) so the index and tenant filters still leave `k` rows.
 */
export class PgvectorBackend implements VectorBackend {
  readonly kind = 'pgvector' as const;
  private readonly ensured = new Map<string, Promise<void>>();

  constructor(private readonly iterativeScan: boolean) {}

  async nearest(
    em: EntityManager,
    tenant: string,
    indexIds: string[],
    collection: string,
    query: readonly number[],
    k: number,
  ): Promise<VectorHit[]> {
    if (!indexIds.length || !query.length) return [];
    const dim = query.length;
    await this.ensureIndex(em, collection, dim);
    const literal = `[${Array.from(query, (x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;
    return em.fork().transactional(async (tx) => {
      await sql(tx, `select set_config('hnsw.ef_search', ?, true)`, [String(Math.max(200, k * 4))]);
      if (this.iterativeScan) await sql(tx, `select set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
      const rows = await sql<{ id: string; d: number }>(
        tx,
        `select chunk_id as id, (doc_vec_floats(vec)::vector(${dim}) <=> ?::vector(${dim})) as d from doc_embeddings
           where collection = ? and tenant = ? and index_id = any(?::uuid[])
           order by doc_vec_floats(vec)::vector(${dim}) <=> ?::vector(${dim}) limit ?`,
        [literal, collection, tenant, pgArray(indexIds), literal, k],
      );
      return rows
        .map((r) => ({ id: r.id, sim: 1 - Number(r.d) }))
        .filter((r) => r.sim > 0)
        .sort((a, b) => b.sim - a.sim || (a.id < b.id ? -1 : 1));
    });
  }

  private ensureIndex(em: EntityManager, collection: string, dim: number): Promise<void> {
    const key = `${collection}|${dim}`;
    let p = this.ensured.get(key);
    if (!p) {
      // Collection names are `[a-z0-9_]` (collectionOf), so they are safe in an identifier and a literal.
      const safe = collection.replace(/[^a-z0-9_]/g, '_');
      p = sql(
        em.fork(),
        `create index if not exists ${`doc_emb_hnsw_${safe}_${dim}`.slice(0, 63)} on doc_embeddings
           using hnsw ((doc_vec_floats(vec)::vector(${dim})) vector_cosine_ops) where collection = '${safe}'`,
      ).then(
        () => undefined,
        (err: unknown) => {
          this.ensured.delete(key);
          throw err;
        },
      );
      this.ensured.set(key, p);
    }
    return p;
  }
}

/**
 * Detects pgvector: `CREATE EXTENSION IF NOT EXISTS vector` succeeding (and `doc_vec_floats` present)
 * selects the pgvector backend; a failure (extension not installed, no privilege) the exact one.
 */
export async function detectVectorBackend(em: EntityManager, budgetBytes: number): Promise<VectorBackend> {
  try {
    await sql(em.fork(), 'create extension if not exists vector');
    const v = await sql<{ extversion: string }>(
      em.fork(),
      `select extversion from pg_extension where extname = 'vector'`,
    );
    const [major, minor] = (v[0]?.extversion ?? '0.0').split('.').map(Number);
    return new PgvectorBackend(major! > 0 || minor! >= 8);
  } catch {
    return new ExactVectorBackend(budgetBytes);
  }
}

let shared: Promise<VectorBackend> | undefined;
onProcessReset('shared/document-index/vectors.ts#shared', () => {
  shared = undefined;
});

/** The process's vector backend, detected once. */
export function vectorBackend(em: EntityManager, config: AppConfig): Promise<VectorBackend> {
  shared ??= detectVectorBackend(em, config.documentIndex.vectorCacheMb * 1024 * 1024).catch((err: unknown) => {
    shared = undefined;
    throw err;
  });
  return shared;
}
