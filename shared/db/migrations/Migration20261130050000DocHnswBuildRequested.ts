import { Migration } from '@mikro-orm/migrations';

/**
 * `doc_indexes.hnsw_build_requested_at`: set when a rechunk's swap leaves its new index due a pgvector HNSW build
 * that runs after it (`vectorIndexBuildWorkflow`), cleared when a build of that index ends. While set, a search the
 * process's vector cache cannot answer yet ranks that index among the chunks matching a query word rather than by
 * PostgreSQL's exact scan of all its rows. A nullable column without a default: no table rewrite.
 */
export class Migration20261130050000DocHnswBuildRequested extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table doc_indexes add column if not exists hnsw_build_requested_at timestamptz');
  }

  override async down(): Promise<void> {
    this.addSql('alter table doc_indexes drop column if exists hnsw_build_requested_at');
  }
}
