import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
import { onProcessReset } from '../process-state.js';

/**
 * The write side of pgvector's native column (`doc_embeddings.emb`, native-vectors.ts): where the column
 * exists, ingestion sets it itself from the same numbers it stores in `vec`, so the row trigger that
 * would decode `vec` in SQL (about 1 ms a 384-float row) returns at once. The vectors travel as one
 * bound parameter in PostgreSQL's binary format (`vector[]`: pgvector's own binary form of each, the
 * float4 values bit for bit), so `emb` equals `vec` exactly and nothing is printed or parsed as text.
 * Where the column is absent (the default install, no extension) nothing changes: `vec` alone.
 */

/** The native column's type (oid, and its name as SQL spells it), when `doc_embeddings.emb` exists. */
export interface NativeVectorType {
  oid: number;
  name: string;
}

/** What `nativeVectorType` read, per ORM (its configuration: the test suite runs several databases in one process). */
let known = new WeakMap<object, Promise<NativeVectorType | null>>();
onProcessReset('shared/document-index/native-vector-writer.ts#known', () => {
  known = new WeakMap();
});

/** The native column's type, or null where the column is absent (no pgvector); read once, then cached. */
export function nativeVectorType(em: EntityManager): Promise<NativeVectorType | null> {
  const key = em.config;
  let found = known.get(key);
  if (!found) {
    found = sql<{ oid: number; name: string }>(
      em.fork(),
      `select atttypid::int as oid, atttypid::regtype::text as name from pg_attribute
         where attrelid = 'doc_embeddings'::regclass and attname = 'emb' and not attisdropped`,
    ).then(
      (rows) => (rows[0] ? { oid: Number(rows[0].oid), name: rows[0].name } : null),
      (err: unknown) => {
        known.delete(key);
        throw err;
      },
    );
    known.set(key, found);
  }
  return found;
}

/** Forgets what `nativeVectorType` read (the column was just added, e.g. by the backend's detection). */
export function forgetNativeVectorType(em: EntityManager): void {
  known.delete(em.config);
}

/**
 * Vectors as a PostgreSQL binary `vector[]` (array_recv's format, one dimension, no nulls), each element
 * in pgvector's binary form (vector_recv: int16 dimensions, int16 unused, float4 values), big-endian.
 */
export function encodeNativeVectorArray(vectors: ReadonlyArray<ArrayLike<number>>, vectorOid: number): Buffer {
  const size = 20 + vectors.reduce((n, v) => n + 8 + 4 * v.length, 0);
  const out = Buffer.allocUnsafe(size);
  let at = out.writeInt32BE(1, 0); // dimensions
  at = out.writeInt32BE(0, at); // no nulls
  at = out.writeUInt32BE(vectorOid, at);
  at = out.writeInt32BE(vectors.length, at);
  at = out.writeInt32BE(1, at); // lower bound
  for (const v of vectors) {
    at = out.writeInt32BE(4 + 4 * v.length, at);
    at = out.writeInt16BE(v.length, at);
    at = out.writeInt16BE(0, at);
    for (let i = 0; i < v.length; i++) at = out.writeFloatBE(v[i]!, at);
  }
  return out;
}
