import { Migration } from '@mikro-orm/migrations';

/**
 * Document feed adoption (issue 13): a sync with `overwrite_indexes` adopts a conflicting hand-made
 * index (its documents replaced by the folder's, `managed_source_id` set); `adopted_at` records it so
 * later syncs keep reporting `adopted: true`. Cleared when the source is deleted (the index is ordinary again).
 */
export class Migration20261126001200DocIndexAdopted extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table doc_indexes add column adopted_at timestamptz null');
  }

  override async down(): Promise<void> {
    this.addSql('alter table doc_indexes drop column if exists adopted_at');
  }
}
