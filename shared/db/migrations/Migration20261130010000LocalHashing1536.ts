import { Migration } from '@mikro-orm/migrations';
import { DOC_VEC_FLOATS_DENSE } from './Migration20261125050000DocVectorsBinary.js';
import { localEmbedAt } from '../../document-index/local-embedding.js';
import { hnswIndexName, hnswPredicate, lockHnswDdlInTransaction } from '../../document-index/hnsw.js';
import { encodeVector } from '../../document-index/vector-sets.js';

/**
 * Search at scale (issue 32): the local embedder hashes into 1,536 buckets instead of 384
 * (`hashing-1536-v1`, collection `local_hashing_1536_v1_index`), and vectors with few non-zero values are
 * stored sparse (`encodeVector`: the tag byte `s`, the dimension, then (uint16 dimension, float4 value)
 * entries; an odd length, where the dense form's is a multiple of 4).
 *
 * 1. `doc_vec_floats` reads both forms (pgvector's trigger and backfill, and the down migrations, use it).
 * 2. Every vector of the old local collection is embedded again from its chunk's text into the new one
 *    (the local embedder needs no provider: this is the re-embedding an identity change would start, done
 *    here so no index is left searching lexically only after the upgrade), with `emb` where pgvector's
 *    column exists; an HNSW index of the old collection is replaced by one of the new; the old rows go.
 *    Pages of 1,000 chunks; all in the migration's transaction, so a failure leaves the old collection whole.
 */
export const LOCAL_384 = 'local_hashing_384_v1_index';
export const LOCAL_1536 = 'local_hashing_1536_v1_index';
const PAGE = 1000;
/** Progress lines only for a migration that takes a while (about 7 s and more). */
const PROGRESS_FROM = 20_000;

/** SQL: the float4 at byte `o` of `v`, little-endian (normal and subnormal values; vectors hold no NaN or infinity). */
const FLOAT_AT = `create or replace function doc_vec_float_at(v bytea, o int) returns real
  language sql immutable strict parallel safe as $$
    select ((case when (w >> 31) = 1 then -1 else 1 end) * case when ((w >> 23) & 255) = 0
        then (w & 8388607) * power(2::float8, -149)
        else (1 + (w & 8388607) / 8388608.0::float8) * power(2::float8, ((w >> 23) & 255) - 127) end)::real
      from (select (get_byte(v, o + 3)::bigint << 24) | (get_byte(v, o + 2)::bigint << 16)
        | (get_byte(v, o + 1)::bigint << 8) | get_byte(v, o)::bigint as w) x
  $$`;

/** SQL: a stored vector of either form as `real[]`. */
const FLOATS_BOTH = `create or replace function doc_vec_floats(v bytea) returns real[]
  language sql immutable strict parallel safe as $$
    select case when length(v) % 2 = 1 and get_byte(v, 0) = 115 then (
        select coalesce(array_agg(coalesce(s.x, 0::real) order by d.d), '{}')
          from generate_series(0, ((get_byte(v, 4)::bigint << 24) | (get_byte(v, 3) << 16)
              | (get_byte(v, 2) << 8) | get_byte(v, 1)) - 1) d(d)
          left join (select get_byte(v, 5 + 6 * i) | (get_byte(v, 6 + 6 * i) << 8) as d,
                       doc_vec_float_at(v, 7 + 6 * i) as x
                     from generate_series(0, (length(v) - 5) / 6 - 1) i) s on s.d = d.d)
      else (select coalesce(array_agg(doc_vec_float_at(v, 4 * i) order by i), '{}')
              from generate_series(0, length(v) / 4 - 1) i)
      end
  $$`;

/** The dense-only reader of before (`Migration20261125050000DocVectorsBinary`'s), for `down`. */
const FLOATS_DENSE = `create or replace function doc_vec_floats(v bytea) ${DOC_VEC_FLOATS_DENSE}`;

/** The dense form alone (little-endian float4), which the code before this migration reads. */
function denseVector(v: readonly number[]): Buffer {
  const b = Buffer.allocUnsafe(v.length * 4);
  v.forEach((x, i) => b.writeFloatLE(x, i * 4));
  return b;
}

type Execute = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/** A float4 as text pgvector reads back to the same float4 (the shortest form of its double). */
const vectorText = (v: readonly number[]) => `[${v.map((x) => String(Math.fround(x))).join(',')}]`;

/**
 * Moves every vector of collection `from` to collection `to`, embedding each chunk's text with the
 * local embedder at `dimensions`; HNSW indexes follow; returns the chunks moved.
 */
export async function reembedLocalCollection(
  execute: Execute,
  from: string,
  to: string,
  dimensions: number,
  encode: (v: readonly number[]) => Buffer = encodeVector,
): Promise<number> {
  const native =
    (
      await execute(`select 1 from pg_attribute
        where attrelid = 'doc_embeddings'::regclass and attname = 'emb' and not attisdropped`)
    ).length > 0;
  // The HNSW indexes are replaced below in this transaction: not beside a concurrent build or drop.
  if (native) await lockHnswDdlInTransaction((text) => execute(text));
  const total = Number(
    (await execute('select count(*)::int as n from doc_embeddings where collection = ?', [from]))[0]!.n,
  );
  // About 3,000 vectors a second (100k in 34 s): a large install is told what the start is waiting for.
  const say = (line: string) => total >= PROGRESS_FROM && process.stdout.write(`[migration] ${line}\n`);
  say(`embedding ${total} local vectors again (${from} to ${to}), about ${Math.ceil(total / 3000)} s`);
  // Both sides of the join bounded by the cursor (else a merge join reads doc_chunks from its start each page).
  let after = '00000000-0000-0000-0000-000000000000';
  let moved = 0;
  for (;;) {
    const rows = (await execute(
      `select e.chunk_id::text as id, c.text from doc_embeddings e join doc_chunks c on c.id = e.chunk_id
         where e.collection = ? and e.chunk_id > ?::uuid and c.id > ?::uuid order by e.chunk_id limit ?`,
      [from, after, after, PAGE],
    )) as { id: string; text: string }[];
    if (!rows.length) break;
    const vectors = rows.map((r) => localEmbedAt(r.text, dimensions));
    await execute(
      `insert into doc_embeddings (collection, chunk_id, tenant, index_id, vec${native ? ', emb' : ''})
         select ?, e.chunk_id, e.tenant, e.index_id, decode(v.vec, 'base64')${native ? ', v.emb::vector' : ''}
           from jsonb_to_recordset(?::jsonb) v(id uuid, vec text, emb text)
           join doc_embeddings e on e.collection = ? and e.chunk_id = v.id
         on conflict (collection, chunk_id) do update set vec = excluded.vec${native ? ', emb = excluded.emb' : ''}`,
      [
        to,
        JSON.stringify(
          rows.map((r, i) => ({
            id: r.id,
            vec: encode(vectors[i]!).toString('base64'),
            emb: native ? vectorText(vectors[i]!) : null,
          })),
        ),
        from,
      ],
    );
    moved += rows.length;
    after = rows[rows.length - 1]!.id;
    if (moved % (PAGE * 100) === 0) say(`${moved} of ${total} local vectors embedded again`);
  }
  say(`${moved} local vectors embedded again`);
  if (native) {
    const indexes = (await execute(`select distinct index_id::text as id from doc_embeddings where collection = ?`, [
      from,
    ])) as { id: string }[];
    for (const { id } of indexes) {
      const old = hnswIndexName(id, from);
      const had = await execute(
        `select 1 from pg_class where relname = ? and relnamespace = current_schema()::regnamespace`,
        [old],
      );
      if (!had.length) continue;
      await execute(`drop index if exists ${old}`);
      await execute(
        `create index if not exists ${hnswIndexName(id, to)} on doc_embeddings
           using hnsw ((emb::vector(${dimensions})) vector_cosine_ops) where ${hnswPredicate(id, to)}`,
      );
    }
  }
  await execute('delete from doc_embeddings where collection = ?', [from]);
  return moved;
}

export class Migration20261130010000LocalHashing1536 extends Migration {
  override async up(): Promise<void> {
    await this.execute(FLOAT_AT);
    await this.execute(FLOATS_BOTH);
    await reembedLocalCollection((s, p) => this.execute(s, p), LOCAL_384, LOCAL_1536, 1536);
  }

  override async down(): Promise<void> {
    await reembedLocalCollection((s, p) => this.execute(s, p), LOCAL_1536, LOCAL_384, 384, denseVector);
    await this.execute(FLOATS_DENSE);
    await this.execute('drop function if exists doc_vec_float_at(bytea, int)');
  }
}
