import { Migration } from '@mikro-orm/migrations';

/**
 * Managed missions (scan type `missions`, issue 31 item 8): each `missions/<mission_key>/mission.yaml` of a
 * source starts one mission, recorded here so later syncs never start it again (`project_id` is null only
 * while the start is under way). The rows go with their source.
 */
export class Migration20261129110200ManagedSourceMissions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table managed_source_missions (
      source_id text references managed_sources (id) on delete cascade, mission_key text,
      tenant text not null, commit_sha text not null, imported_at timestamptz not null default now(),
      project_id text null,
      primary key (source_id, mission_key)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists managed_source_missions');
  }
}
