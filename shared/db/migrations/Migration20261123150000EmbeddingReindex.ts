import { Migration } from '@mikro-orm/migrations';

/**
 * Re-embedding after an embedding identity change (issue 10): one row per tenant with the progress of
 * its latest re-embedding run (`embeddingReindexWorkflow`). A newer identity change replaces the row
 * (new `run_id`); writes of a superseded run are conditional on `run_id` and so change nothing.
 */
export class Migration20261123150000EmbeddingReindex extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table embedding_reindex_runs (
      tenant text primary key,
      run_id text not null,
      status text not null check (status in ('running', 'completed', 'failed', 'superseded')),
      identity jsonb not null,
      previous jsonb null,
      consumers jsonb not null default '[]',
      consumers_done integer not null default 0,
      total integer not null default 0,
      done integer not null default 0,
      failed integer not null default 0,
      over_window integer not null default 0,
      error text null,
      started_at timestamptz not null,
      finished_at timestamptz null,
      updated_at timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists embedding_reindex_runs');
  }
}
