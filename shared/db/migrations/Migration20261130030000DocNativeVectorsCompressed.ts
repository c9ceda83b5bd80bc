import { Migration } from '@mikro-orm/migrations';
import { NATIVE_VECTOR_STORAGE } from '../../document-index/native-vectors.js';
import { lockHnswDdlInTransaction } from '../../document-index/hnsw.js';

/**
 * Search at scale (issue 32), pgvector: the native column `doc_embeddings.emb` compressed in the row where it
 * compresses (`NATIVE_VECTOR_STORAGE`), for installs whose column the earlier migration added as pgvector
 * declares it (out of line, uncompressed). A catalog change: rows written before stay as they are. A no-op
 * where the column does not exist (no pgvector: the default install). The change takes an ACCESS EXCLUSIVE lock
 * on `doc_embeddings`: it first waits for a running HNSW build to end under the builds' advisory lock
 * (`lockHnswDdlInTransaction` in `shared/document-index/hnsw.ts`), which holds no lock on the table, so that
 * searches and writes do not queue behind the migration for a build's minutes.
 */
async function alterNativeColumn(execute: (text: string) => Promise<unknown[]>, statement: string): Promise<void> {
  const column = await execute(`select 1 from information_schema.columns
    where table_schema = current_schema() and table_name = 'doc_embeddings' and column_name = 'emb'`);
  if (!column.length) return;
  await lockHnswDdlInTransaction(execute);
  await execute(statement);
}

export class Migration20261130030000DocNativeVectorsCompressed extends Migration {
  override async up(): Promise<void> {
    await alterNativeColumn((text) => this.execute(text), NATIVE_VECTOR_STORAGE);
  }

  override async down(): Promise<void> {
    await alterNativeColumn(
      (text) => this.execute(text),
      'alter table doc_embeddings alter column emb set storage external',
    );
  }
}
