import { Migration } from '@mikro-orm/migrations';

/**
 * The configuration store (shared/settings): saved values by dotted path (secrets sealed), one
 * version row every process polls to see a change without a restart, the record of every apply,
 * and per-user preferences.
 */
export class Migration20261123100000Settings extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table platform_settings (
      path text primary key,
      value jsonb null,
      sealed text null,
      updated_at timestamptz not null,
      updated_by text not null,
      check ((value is null) <> (sealed is null))
    )`);
    this.addSql(`create table platform_settings_version (
      id smallint primary key default 1 check (id = 1),
      version bigint not null
    )`);
    this.addSql(`insert into platform_settings_version (id, version) values (1, 0)`);
    this.addSql(`create table platform_settings_applies (
      id bigserial primary key,
      mode text not null,
      applied_by text not null,
      applied_at timestamptz not null,
      version bigint not null,
      added integer not null,
      updated integer not null,
      deleted integer not null,
      skipped integer not null,
      changes jsonb not null
    )`);
    this.addSql(`create table user_configs (
      tenant text not null,
      user_id text not null,
      config jsonb not null,
      updated_at timestamptz not null,
      primary key (tenant, user_id)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists user_configs');
    this.addSql('drop table if exists platform_settings_applies');
    this.addSql('drop table if exists platform_settings_version');
    this.addSql('drop table if exists platform_settings');
  }
}
