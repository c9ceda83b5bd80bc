import { Migration } from '@mikro-orm/migrations';

/**
 * Managed sources, part 2 (issue 12): hydrated artifacts and lifecycles. Imported agents name their
 * source (`agents.managed_source_id`); imported roles are custom roles RBAC reads (`custom_roles`,
 * one name per tenant); a source records its deletion (`deletion_state`, pending until the cleanup
 * of its artifacts succeeds) and the auto-sync schedule's last check (`auto_sync_state`).
 */
export class Migration20261124000000ManagedSourceArtifacts extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table agents add column managed_source_id text null');
    this.addSql('create index agents_managed_source on agents (managed_source_id) where managed_source_id is not null');
    this.addSql(`create table custom_roles (
      tenant text not null,
      name text not null,
      description text null,
      permissions jsonb not null,
      managed_source_id text null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      primary key (tenant, name)
    )`);
    this.addSql('alter table managed_sources add column deletion_state jsonb null');
    this.addSql('alter table managed_sources add column auto_sync_state jsonb null');
  }

  override async down(): Promise<void> {
    this.addSql('alter table managed_sources drop column if exists auto_sync_state');
    this.addSql('alter table managed_sources drop column if exists deletion_state');
    this.addSql('drop table if exists custom_roles');
    this.addSql('drop index if exists agents_managed_source');
    this.addSql('alter table agents drop column if exists managed_source_id');
  }
}
