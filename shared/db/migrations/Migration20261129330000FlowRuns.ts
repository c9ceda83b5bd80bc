import { Migration } from '@mikro-orm/migrations';

/**
 * Flow runs (issue 31, item 3): a promoted flow keeps the manifest it was promoted with (so a run
 * executes what was promoted, not a later sync), and each run of it is a row with one row per step
 * (its outcome), written by workflow `flow-run/<run_id>`.
 */
export class Migration20261129330000FlowRuns extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table managed_flows add column definition text null');
    this.addSql(`create table flow_runs (
      run_id text primary key,
      tenant text not null,
      source_id text not null,
      flow_name text not null,
      commit_sha text not null,
      content_hash text not null,
      status text not null check (status in ('running', 'succeeded', 'failed', 'cancelled')),
      started_by text not null,
      started_by_roles jsonb not null,
      error text null,
      created_at timestamptz not null,
      finished_at timestamptz null
    )`);
    this.addSql('create index flow_runs_tenant_created on flow_runs (tenant, created_at desc)');
    this.addSql(`create table flow_run_steps (
      run_id text not null references flow_runs (run_id) on delete cascade,
      step_index integer not null,
      name text not null,
      kind text not null,
      definition jsonb not null,
      run_concurrently boolean not null,
      status text not null
        check (status in ('pending', 'running', 'succeeded', 'failed', 'skipped', 'cancelled')),
      attempts integer not null default 0,
      result jsonb null,
      error jsonb null,
      started_at timestamptz null,
      finished_at timestamptz null,
      primary key (run_id, step_index)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists flow_run_steps');
    this.addSql('drop table if exists flow_runs');
    this.addSql('alter table managed_flows drop column if exists definition');
  }
}
