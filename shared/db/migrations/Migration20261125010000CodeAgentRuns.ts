import { Migration } from '@mikro-orm/migrations';

/**
 * Code-agent runs (issue 16): one row per run of workflow `code-agent/<run_id>`, written by its
 * activities; readable (status, steps, PR URL, output) while the run goes on and after it ends.
 */
export class Migration20261125010000CodeAgentRuns extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table code_agent_runs (
      run_id text primary key,
      tenant text not null,
      adapter text not null check (adapter in ('cloud', 'local')),
      status text not null check (status in
        ('queued', 'creating', 'running', 'finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted')),
      prompt text not null,
      ticket_key text null,
      connection_name text null,
      target_repo_url text null,
      target_base_ref text not null,
      auto_create_pr boolean not null,
      timeout_seconds integer not null,
      remote_agent_id text null,
      remote_run_id text null,
      remote_status text null,
      pr_url text null,
      branch text null,
      summary text null,
      exit_code integer null,
      error text null,
      steps jsonb not null default '[]'::jsonb,
      output text not null default '',
      output_bytes bigint not null default 0,
      output_truncated boolean not null default false,
      worker_host text null,
      process_id integer null,
      requested_by text not null,
      created_at timestamptz not null,
      started_at timestamptz null,
      finished_at timestamptz null,
      updated_at timestamptz not null
    )`);
    this.addSql('create index code_agent_runs_tenant on code_agent_runs (tenant, created_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists code_agent_runs');
  }
}
