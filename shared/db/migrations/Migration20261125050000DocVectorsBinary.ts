import { Migration } from '@mikro-orm/migrations';

/**
 * Document-index vectors as binary float4 (issue 13, search speed): `doc_embeddings.vec` holds the
 * vector as little-endian IEEE-754 float4 bytes (what a `Float32Array` holds on every supported
 * platform), read without parsing a text array; existing `real[]` vectors are converted in place.
 * `doc_indexes.vector_generation` counts writes to the index's vectors: statement-level triggers on
 * `doc_embeddings` bump it on every insert, update and delete (direct or cascaded from a deleted
 * chunk, document or index), in the writing transaction, so an in-process vector cache keyed by
 * (index, collection, generation) can never serve vectors older than a committed write.
 */
/** SQL: a `real[]` as little-endian float4 bytes (`float4send` is big-endian, so each value's 4 bytes are reversed). */
export const realArrayToBytes = (column: string) => `coalesce((
    select string_agg(substring(b from 4 for 1) || substring(b from 3 for 1) || substring(b from 2 for 1)
      || substring(b from 1 for 1), ''::bytea order by u.o)
    from unnest(${column}) with ordinality u(x, o), lateral float4send(u.x) b), ''::bytea)`;

/** `doc_vec_floats`'s definition after its name: dense float4 bytes to `real[]` (later migrations restore it in `down`). */
export const DOC_VEC_FLOATS_DENSE = `returns real[] language sql immutable strict parallel safe as $$
      select coalesce(array_agg(((case when (w >> 31) = 1 then -1 else 1 end) * case when ((w >> 23) & 255) = 0
            then (w & 8388607) * power(2::float8, -149)
            else (1 + (w & 8388607) / 8388608.0::float8) * power(2::float8, ((w >> 23) & 255) - 127) end)::real
          order by i), '{}')
        from generate_series(0, length(v) / 4 - 1) i,
          lateral (select (get_byte(v, 4 * i + 3)::bigint << 24) | (get_byte(v, 4 * i + 2)::bigint << 16)
            | (get_byte(v, 4 * i + 1)::bigint << 8) | get_byte(v, 4 * i)::bigint as w) x
      $$`;

export class Migration20261125050000DocVectorsBinary extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table doc_embeddings add column vec bytea null');
    this.addSql(`update doc_embeddings e set vec = ${realArrayToBytes('e.vector')}`);
    this.addSql('alter table doc_embeddings alter column vec set not null');
    this.addSql('alter table doc_embeddings drop column vector');
    // The stored bytes back to numbers (normal and subnormal values; vectors hold no NaN or infinity):
    // pgvector's expression indexes (`doc_vec_floats(vec)::vector(n)`) and the down migration use it.
    this.addSql(`create function doc_vec_floats(v bytea) ${DOC_VEC_FLOATS_DENSE}`);
    this.addSql('alter table doc_indexes add column vector_generation bigint not null default 0');
    this.addSql(`create function doc_embeddings_bump_generation() returns trigger language plpgsql as $$
      begin
        update doc_indexes set vector_generation = vector_generation + 1
          where id in (select distinct index_id from changed_rows);
        return null;
      end $$`);
    this.addSql(`create trigger doc_embeddings_generation_insert after insert on doc_embeddings
      referencing new table as changed_rows for each statement execute function doc_embeddings_bump_generation()`);
    this.addSql(`create trigger doc_embeddings_generation_update after update on doc_embeddings
      referencing new table as changed_rows for each statement execute function doc_embeddings_bump_generation()`);
    this.addSql(`create trigger doc_embeddings_generation_delete after delete on doc_embeddings
      referencing old table as changed_rows for each statement execute function doc_embeddings_bump_generation()`);
  }

  override async down(): Promise<void> {
    this.addSql('drop trigger if exists doc_embeddings_generation_insert on doc_embeddings');
    this.addSql('drop trigger if exists doc_embeddings_generation_update on doc_embeddings');
    this.addSql('drop trigger if exists doc_embeddings_generation_delete on doc_embeddings');
    this.addSql('drop function if exists doc_embeddings_bump_generation()');
    this.addSql('alter table doc_indexes drop column if exists vector_generation');
    this.addSql('alter table doc_embeddings add column vector real[] null');
    this.addSql('update doc_embeddings set vector = doc_vec_floats(vec)');
    this.addSql('alter table doc_embeddings drop column vec');
    this.addSql('drop function if exists doc_vec_floats(bytea)');
  }
}
