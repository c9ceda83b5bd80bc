import { Migration } from '@mikro-orm/migrations';

/**
 * Search at scale (issue 32), pgvector: the HNSW indexes become one per (document index, collection),
 * built in bulk at the ingestion checkpoint (shared/document-index/hnsw.ts). The per-collection ones a
 * first search created (`doc_emb_hnsw_e_<collection>_<dim>`) are dropped: every row written to the
 * collection paid an incremental insert into them (about 3 ms at 100k rows, a rechunk's temporary rows
 * included), and a search filtered their answers by index afterwards. Indexes ingested before are
 * served by PostgreSQL's exact scan until their next ingestion or rechunk builds theirs. A no-op
 * without pgvector.
 */
export class Migration20261129991700DocHnswPerIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(`do $block$
      declare old record;
      begin
        for old in select indexname from pg_indexes
            where schemaname = current_schema() and tablename = 'doc_embeddings' and indexname like 'doc\\_emb\\_hnsw\\_e\\_%' loop
          execute format('drop index if exists %I', old.indexname);
        end loop;
      end $block$`);
  }

  override async down(): Promise<void> {
    // The per-collection indexes were created on demand by the search of before; nothing to restore.
  }
}
