import { Migration } from '@mikro-orm/migrations';

/**
 * Hosted demo versions and runs (issue 18): a version names a profile and the agents, blueprints and
 * connections it binds; validation (workflow `demo-version/<id>`) moves it `draft` → `validating` →
 * `ready` or `failed` with `error_code`. A run (workflow `demo-run/<id>`) of a ready version keeps its
 * steps. `demo_user_info` holds the demo user's profile form, one row per person.
 */
export class Migration20261125170000DemoVersions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table demo_versions (
      id text primary key,
      tenant text not null,
      name text not null,
      profile text not null,
      bindings jsonb not null,
      status text not null,
      error_code text null,
      error text null,
      presenter_session_id text null,
      created_by text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`);
    this.addSql(`create index demo_versions_tenant_idx on demo_versions (tenant, created_at)`);
    this.addSql(`create table demo_runs (
      id text primary key,
      tenant text not null,
      version_id text not null references demo_versions (id),
      status text not null,
      steps jsonb not null default '[]',
      error text null,
      presenter_session_id text null,
      created_by text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      started_at timestamptz null,
      finished_at timestamptz null
    )`);
    this.addSql(`create index demo_runs_tenant_idx on demo_runs (tenant, version_id, created_at)`);
    this.addSql(`create table demo_user_info (
      tenant text not null,
      subject text not null,
      name text not null,
      email text not null,
      company text null,
      submitted_at timestamptz not null,
      primary key (tenant, subject)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists demo_user_info');
    this.addSql('drop table if exists demo_runs');
    this.addSql('drop table if exists demo_versions');
  }
}
