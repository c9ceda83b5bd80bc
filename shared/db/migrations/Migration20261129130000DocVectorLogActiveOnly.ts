import { Migration } from '@mikro-orm/migrations';
import { VECTOR_LOG_TRIGGER } from './Migration20261129550000DocVectorLog.js';

/**
 * Rechunk at scale (issue 32): the vector change log (`doc_vector_log`) records changes to active indexes
 * only. A `building` index (a rechunk's temporary index, or the old index it replaced, retired until its
 * rows are deleted) is invisible to every search, so no process caches its vectors: logging it cost one
 * log row per chunk the rechunk's copy wrote and per chunk of the old index deleted after the swap, each
 * deleted again unread. The generation is still bumped for every index.
 *
 * This migration's timestamp sorts before the one that created the log (DocVectorLog): on a database
 * where that one ran already this installs the new trigger body; on a new database it does nothing and
 * DocVectorLog, run after it, installs the same body (`VECTOR_LOG_TRIGGER`).
 */
export class Migration20261129130000DocVectorLogActiveOnly extends Migration {
  override async up(): Promise<void> {
    this.addSql(`do $block$ begin
      if to_regclass('doc_vector_log') is not null then execute ${quoted(VECTOR_LOG_TRIGGER)}; end if;
    end $block$`);
  }

  override async down(): Promise<void> {
    this.addSql(`do $block$ begin
      if to_regclass('doc_vector_log') is not null then execute ${quoted(ALL_INDEXES_TRIGGER)}; end if;
    end $block$`);
  }
}

/** The body before this migration: every index's changes logged. */
const ALL_INDEXES_TRIGGER = `create or replace function doc_embeddings_bump_generation() returns trigger language plpgsql as $$
      begin
        with bumped as (
          update doc_indexes set vector_generation = vector_generation + 1
            where id in (select distinct index_id from changed_rows)
            returning id, vector_generation)
        insert into doc_vector_log (index_id, gen, collection, chunk_id)
          select b.id, b.vector_generation, c.collection, c.chunk_id from changed_rows c join bumped b on b.id = c.index_id;
        return null;
      end $$`;

/** A SQL string literal of `text`. */
const quoted = (text: string) => `'${text.replace(/'/g, "''")}'`;
