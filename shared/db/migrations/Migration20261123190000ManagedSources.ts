import { Migration } from '@mikro-orm/migrations';

/**
 * Managed sources (issue 12, part 1): Git repositories synced by the `source-sync` workflow, their
 * credentials sealed with the secret box, and one row per sync job. The partial unique index lets
 * at most one running sync exist per source (a second start is refused, never queued).
 */
export class Migration20261123190000ManagedSources extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table managed_sources (
      id text primary key,
      tenant text not null,
      name text not null,
      repo_url text not null,
      release_ref text null,
      settings jsonb not null,
      credential_kind text null check (credential_kind in ('token', 'basic')),
      credential_username text null,
      credentials_sealed text null,
      synced_commit_sha text null,
      checkout_rules_hash text null,
      tag_anchor jsonb null,
      release_poll jsonb null,
      last_sync jsonb null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      created_by text not null
    )`);
    this.addSql('create index managed_sources_tenant on managed_sources (tenant, created_at)');
    this.addSql(`create trigger managed_sources_sealed_key before insert or update on managed_sources
      for each row execute function refuse_retired_secret_key('credentials_sealed')`);
    this.addSql(`create table managed_source_sync_jobs (
      job_id text primary key,
      source_id text not null references managed_sources (id) on delete cascade,
      tenant text not null,
      status text not null check (status in ('running', 'complete', 'error')),
      phase text not null,
      files_scanned integer not null default 0,
      expected_release_commit text null,
      result jsonb null,
      error jsonb null,
      requested_by text not null,
      started_at timestamptz not null,
      updated_at timestamptz not null,
      finished_at timestamptz null
    )`);
    this.addSql(`create unique index managed_source_sync_jobs_one_running
      on managed_source_sync_jobs (source_id) where status = 'running'`);
    this.addSql('create index managed_source_sync_jobs_source on managed_source_sync_jobs (source_id, started_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists managed_source_sync_jobs');
    this.addSql('drop table if exists managed_sources');
  }
}
