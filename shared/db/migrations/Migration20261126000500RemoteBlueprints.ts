import { Migration } from '@mikro-orm/migrations';

/**
 * Remote-backed blueprints (issue 14): a managed source with scan type `blueprints` imports each
 * `blueprints/<name>/blueprint_manifest.yaml` as a blueprint row whose origin is the source
 * (`source_id`, the directory `source_path`, the commit `source_commit`); `pending_rename` holds a
 * rename waiting for its pull request to be merged and synced (workflow `blueprint-rename/<id>`).
 * A source's blueprints go with it.
 */
export class Migration20261126000500RemoteBlueprints extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table blueprints
      add column source_id text references managed_sources(id) on delete cascade,
      add column source_path text,
      add column source_commit text,
      add column pending_rename jsonb`);
    this.addSql(`create index blueprints_source_idx on blueprints (source_id) where source_id is not null`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists blueprints_source_idx`);
    this.addSql(
      `alter table blueprints drop column source_id, drop column source_path, drop column source_commit, drop column pending_rename`,
    );
  }
}
