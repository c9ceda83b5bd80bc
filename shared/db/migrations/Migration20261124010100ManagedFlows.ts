import { Migration } from '@mikro-orm/migrations';

/** Promoted flows of managed sources (issue 12): pending changes are the working tree against these rows. */
export class Migration20261124010100ManagedFlows extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table managed_flows (
      source_id text not null references managed_sources (id) on delete cascade,
      flow_name text not null,
      tenant text not null,
      content_hash text not null,
      commit_sha text not null,
      manifest_path text not null,
      promoted_at timestamptz not null,
      promoted_by text not null,
      primary key (source_id, flow_name)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists managed_flows');
  }
}
