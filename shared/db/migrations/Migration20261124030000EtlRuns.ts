import { Migration } from '@mikro-orm/migrations';

/**
 * ETL runs (issue 17): one row per run of a built job, written by the `etl-run` workflow's
 * activities; the output kept (head and tail, capped) for paging. Context parameters are sealed.
 */
export class Migration20261124030000EtlRuns extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table etl_runs (
      run_id text primary key,
      tenant text not null,
      job_name text not null,
      runner text not null check (runner in ('local', 'remote')),
      status text not null check (status in ('queued', 'running', 'succeeded', 'failed', 'timed_out', 'interrupted')),
      context_name text null,
      context_keys jsonb not null,
      context_sealed text null,
      timeout_seconds integer not null,
      exit_code integer null,
      error text null,
      output text not null default '',
      output_bytes bigint not null default 0,
      output_truncated boolean not null default false,
      remote_run_id text null,
      worker_host text null,
      process_id integer null,
      requested_by text not null,
      created_at timestamptz not null,
      started_at timestamptz null,
      finished_at timestamptz null,
      updated_at timestamptz not null
    )`);
    this.addSql('create index etl_runs_tenant on etl_runs (tenant, created_at)');
    this.addSql(`create trigger etl_runs_sealed_key before insert or update on etl_runs
      for each row execute function refuse_retired_secret_key('context_sealed')`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists etl_runs');
  }
}
