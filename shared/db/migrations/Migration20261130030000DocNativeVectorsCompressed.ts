import { Migration } from '@mikro-orm/migrations';
import { NATIVE_VECTOR_STORAGE } from '../../document-index/native-vectors.js';

/**
 * Search at scale (issue 32), pgvector: the native column `doc_embeddings.emb` compressed in the row where it
 * compresses (`NATIVE_VECTOR_STORAGE`), for installs whose column the earlier migration added as pgvector
 * declares it (out of line, uncompressed). A catalog change: rows written before stay as they are. A no-op
 * where the column does not exist (no pgvector: the default install). The change takes an ACCESS EXCLUSIVE lock
 * on `doc_embeddings`: it first waits for a running HNSW build to end under the builds' advisory lock
 * (`withHnswDdl` in `shared/document-index/hnsw.ts`), which holds no lock on the table, so that searches and
 * writes do not queue behind the migration for a build's minutes.
 */
const IF_NATIVE_COLUMN = (statement: string) => `do $block$
  begin
    if exists (select 1 from information_schema.columns
        where table_schema = current_schema() and table_name = 'doc_embeddings' and column_name = 'emb') then
      perform pg_advisory_xact_lock(hashtextextended('doc_embeddings hnsw ddl', 32));
      ${statement};
    end if;
  end $block$`;

export class Migration20261130030000DocNativeVectorsCompressed extends Migration {
  override async up(): Promise<void> {
    this.addSql(IF_NATIVE_COLUMN(NATIVE_VECTOR_STORAGE));
  }

  override async down(): Promise<void> {
    this.addSql(IF_NATIVE_COLUMN('alter table doc_embeddings alter column emb set storage external'));
  }
}
