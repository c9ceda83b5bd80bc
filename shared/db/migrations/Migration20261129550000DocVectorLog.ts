import { Migration } from '@mikro-orm/migrations';

/**
 * Search at scale (issue 32).
 *
 * - `doc_vector_log`: which chunks' vectors each write changed (of active indexes; see VECTOR_LOG_TRIGGER), stamped with the index's new
 *   `vector_generation`. The statement-level triggers on `doc_embeddings` that bump the generation now
 *   also log the changed chunk ids, in the writing transaction; the bump updates the index's row, so
 *   writers of one index commit their generations in order and a reader that sees generation `g` in a
 *   snapshot sees every log row up to `g`. An API process that cached the index's vectors at an older
 *   generation reads only the changed chunks (their current vectors, or none when deleted) instead of
 *   reloading the index, and every process catches up at its next search.
 * - `doc_indexes.vector_log_floor`: the generation up to which the log was pruned; a cache older than
 *   it reloads whole. Log rows older than a few minutes are pruned (`pruneVectorLog`), which also drops
 *   the rows of deleted indexes (no foreign key, so logging costs no per-row check at ingestion).
 * - `doc_documents (index_id, id)`: the rechunk's copy batches page an index's documents by id (without
 *   it every batch sorted the whole index, so a rechunk grew quadratically).
 * - `doc_embeddings (index_id)`: deleting an index's vectors (rechunk swap, cleanup) without a scan.
 */
/**
 * The statement-level trigger function on `doc_embeddings`: bumps each changed index's generation and logs the
 * changed chunks of active indexes (a `building` index, a rechunk's temporary or retired one, is cached by no
 * process, so logging it was only cost: migration 13, which installs this body where this migration ran before).
 */
export const VECTOR_LOG_TRIGGER = `create or replace function doc_embeddings_bump_generation() returns trigger language plpgsql as $$
      begin
        with bumped as (
          update doc_indexes set vector_generation = vector_generation + 1
            where id in (select distinct index_id from changed_rows)
            returning id, vector_generation, state)
        insert into doc_vector_log (index_id, gen, collection, chunk_id)
          select b.id, b.vector_generation, c.collection, c.chunk_id from changed_rows c join bumped b on b.id = c.index_id
            where b.state = 'active';
        return null;
      end $$`;

export class Migration20261129550000DocVectorLog extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table doc_vector_log (
      index_id uuid not null,
      gen bigint not null,
      collection text not null,
      chunk_id uuid not null,
      logged_at timestamptz not null default now()
    )`);
    this.addSql('create index doc_vector_log_gen on doc_vector_log (index_id, gen)');
    this.addSql('create index doc_vector_log_logged on doc_vector_log (logged_at)');
    this.addSql('alter table doc_indexes add column vector_log_floor bigint not null default 0');
    // Generations before this migration have no log rows: a cache from before reloads once.
    this.addSql('update doc_indexes set vector_log_floor = vector_generation');
    this.addSql(VECTOR_LOG_TRIGGER);
    this.addSql('create index doc_documents_index_id on doc_documents (index_id, id)');
    this.addSql('create index doc_embeddings_index_only on doc_embeddings (index_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists doc_embeddings_index_only');
    this.addSql('drop index if exists doc_documents_index_id');
    this.addSql(`create or replace function doc_embeddings_bump_generation() returns trigger language plpgsql as $$
      begin
        update doc_indexes set vector_generation = vector_generation + 1
          where id in (select distinct index_id from changed_rows);
        return null;
      end $$`);
    this.addSql('alter table doc_indexes drop column if exists vector_log_floor');
    this.addSql('drop table if exists doc_vector_log');
  }
}
