import { Migration } from '@mikro-orm/migrations';

/**
 * Blueprint versioned mode (issue 14): `blueprint_versioning` (one row per versioned blueprint: when
 * enabled and the one production assignment), `blueprint_versions` (immutable saved versions, numbered
 * 1, 2, … per blueprint, with the Git commit tagged `version/<n>` and the working-copy fingerprint),
 * `blueprint_version_files` (each version's files as paths onto content-addressed `blueprint_blobs`, so
 * a lost repository volume loses no saved version) and `blueprint_promotions` (promotion history).
 * Everything but the shared blobs goes with the blueprint row; unreferenced blobs are removed on delete.
 */
export class Migration20261125090000BlueprintVersions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table blueprint_versioning (
      blueprint_id text primary key references blueprints (blueprint_id) on delete cascade,
      enabled_at timestamptz not null default now(),
      enabled_by text not null,
      production_version_number integer,
      promoted_by text,
      promoted_at timestamptz
    )`);
    this.addSql(`create table blueprint_blobs (
      sha256 text primary key,
      size integer not null,
      content bytea not null
    )`);
    this.addSql(`create table blueprint_versions (
      version_id text primary key,
      blueprint_id text not null references blueprints (blueprint_id) on delete cascade,
      number integer not null check (number > 0),
      commit_sha text not null,
      fingerprint text not null,
      label text,
      note text,
      source text not null default 'working_copy' check (source in ('working_copy', 'import')),
      created_by text not null,
      created_at timestamptz not null default now(),
      constraint blueprint_versions_number unique (blueprint_id, number)
    )`);
    this.addSql(`create table blueprint_version_files (
      version_id text not null references blueprint_versions (version_id) on delete cascade,
      path text not null,
      blob_sha256 text not null references blueprint_blobs (sha256),
      primary key (version_id, path)
    )`);
    this.addSql(`create index blueprint_version_files_blob on blueprint_version_files (blob_sha256)`);
    this.addSql(`create table blueprint_promotions (
      id bigserial primary key,
      blueprint_id text not null references blueprints (blueprint_id) on delete cascade,
      version_number integer not null,
      previous_version_number integer,
      promoted_by text not null,
      promoted_at timestamptz not null default now(),
      via text not null default 'promote' check (via in ('promote', 'import'))
    )`);
    this.addSql(`create index blueprint_promotions_blueprint on blueprint_promotions (blueprint_id, id)`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists blueprint_promotions');
    this.addSql('drop table if exists blueprint_version_files');
    this.addSql('drop table if exists blueprint_versions');
    this.addSql('drop table if exists blueprint_blobs');
    this.addSql('drop table if exists blueprint_versioning');
  }
}
