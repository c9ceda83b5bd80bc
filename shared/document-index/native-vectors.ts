/**
 * The native column compressed where it can be (`extended`; pgvector declares its type `external`: out of line,
 * never compressed). A local hashing vector is sparse (1,536 float4s, a few dozen of them non-zero): stored
 * out of line it took 6,148 bytes in three TOAST rows, which ingestion wrote (and the WAL carried) with every
 * chunk; compressed it takes about 180 bytes and stays in the row. A dense model's vector does not compress and
 * is stored out of line as before.
 */
export const NATIVE_VECTOR_STORAGE = 'alter table doc_embeddings alter column emb set storage extended';

/**
 * pgvector's native column (issue 32): where the `vector` extension exists, `doc_embeddings.emb` holds
 * each stored vector as a pgvector `vector`, kept equal to `vec` (the little-endian float4 bytes every
 * writer stores) by a row trigger, so the HNSW indexes and the search read it without decoding bytes
 * (`doc_vec_floats(vec)`) per row. Without the extension the block does nothing: the default install
 * (embedded PostgreSQL) keeps `vec` alone. Used by the migration and by the backend's detection (an
 * extension created after the migration ran). A leaf module: no imports. The trigger decodes `vec` in
 * SQL (about 1 ms a row), unless the writer set `emb` itself in the same statement (e.g. the text
 * literal `[x,y,…]` of the same numbers): the cheaper path for a pgvector-aware writer.
 */
export const NATIVE_VECTOR_BLOCK = `do $block$
  declare old record;
  begin
    if not exists (select 1 from pg_available_extensions where name = 'vector') then return; end if;
    begin
      create extension if not exists vector;
    exception when others then
      return; -- no privilege: the exact path serves
    end;
    alter table doc_embeddings add column if not exists emb vector;
    ${NATIVE_VECTOR_STORAGE};
    -- A writer that sets emb itself (from its numbers) spares the decode, about 1 ms a 384-float row.
    create or replace function doc_embeddings_emb() returns trigger language plpgsql as $f$
      begin
        if tg_op = 'INSERT' and new.emb is not null then return new; end if;
        if tg_op = 'UPDATE' and new.emb is distinct from old.emb then return new; end if;
        new.emb := doc_vec_floats(new.vec)::vector;
        return new;
      end $f$;
    create or replace trigger doc_embeddings_emb before insert or update of vec on doc_embeddings
      for each row execute function doc_embeddings_emb();
    update doc_embeddings set emb = doc_vec_floats(vec)::vector where emb is null;
    -- The expression indexes over doc_vec_floats(vec) of before: no search uses them any more.
    for old in select indexname from pg_indexes
        where tablename = 'doc_embeddings' and indexdef like '%doc_vec_floats%' loop
      execute format('drop index if exists %I', old.indexname);
    end loop;
  end $block$`;

/** The migration's undo: the column (its HNSW indexes with it), the trigger and its function. */
export const NATIVE_VECTOR_DROP = [
  'drop trigger if exists doc_embeddings_emb on doc_embeddings',
  'drop function if exists doc_embeddings_emb()',
  'alter table doc_embeddings drop column if exists emb',
];
