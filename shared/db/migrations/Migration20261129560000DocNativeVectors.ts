import { Migration } from '@mikro-orm/migrations';
import { NATIVE_VECTOR_BLOCK, NATIVE_VECTOR_DROP } from '../../document-index/native-vectors.js';

/**
 * Search at scale (issue 32), pgvector: where the `vector` extension can be created, a native column
 * `doc_embeddings.emb vector` kept equal to `vec` by a row trigger (backfilled here), so the HNSW index
 * and the search read vectors without decoding bytes per row; the old expression indexes over
 * `doc_vec_floats(vec)` are dropped. A no-op where the extension is not available (the default
 * install's embedded PostgreSQL).
 */
export class Migration20261129560000DocNativeVectors extends Migration {
  override async up(): Promise<void> {
    this.addSql(NATIVE_VECTOR_BLOCK);
  }

  override async down(): Promise<void> {
    for (const s of NATIVE_VECTOR_DROP) this.addSql(s);
  }
}
