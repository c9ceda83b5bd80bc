import { Migration } from '@mikro-orm/migrations';

/**
 * Managed apps (issue 15): a sync of a source with scan type `apps` records each `apps/<name>/app.yaml`
 * (shared/managed-sources/apps.ts); an app is addressed as `<source_id>:<name>` (organizational projects).
 */
export class Migration20261126001100ManagedApps extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table managed_apps (
      source_id text not null references managed_sources (id) on delete cascade,
      name text not null,
      tenant text not null,
      manifest jsonb not null,
      commit_sha text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (source_id, name)
    )`);
    this.addSql('create index managed_apps_tenant on managed_apps (tenant)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists managed_apps');
  }
}
