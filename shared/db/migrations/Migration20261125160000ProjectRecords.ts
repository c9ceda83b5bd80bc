import { Migration } from '@mikro-orm/migrations';

/**
 * Project records (issue 15, part 3): `project_notes` is append-only (one row per recorded note,
 * `sequence` per project, never updated); each note is written with its `project_events` row and the
 * goal's status change in one transaction. `project_server_records` are the copy, notebook and
 * job-run records agents report through the `mission` tool (one row per project, kind and
 * evidence id; a repeated report updates state, reason and attempts).
 */
export class Migration20261125160000ProjectRecords extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table project_notes (
      id text primary key,
      project_id text not null references projects(id) on delete cascade,
      sequence integer not null,
      goal text not null,
      actor text not null,
      principal text not null,
      at timestamptz not null default now(),
      evidence text null,
      asset text null,
      finding text null,
      waive_reason text null,
      person_turn boolean not null default false,
      verification text null check (verification in ('passed', 'failed', 'inconclusive')),
      verification_reason text null,
      server_check_result text null check (server_check_result in ('matched', 'not_found')),
      previous_status text not null,
      status text not null check (status in ('planned', 'in_progress', 'met', 'waived')),
      input_versions jsonb not null default '{}'::jsonb,
      unique (project_id, sequence)
    )`);
    this.addSql(`create table project_server_records (
      id bigserial primary key,
      project_id text not null references projects(id) on delete cascade,
      goal text not null,
      kind text not null check (kind in ('foundry_copy_receipt', 'notebook_publish', 'notebook_overwritten', 'databricks_run')),
      evidence_id text not null,
      asset_id text null,
      target_table text null,
      state text not null check (state in ('pending', 'running', 'succeeded', 'failed')),
      reason text null,
      attempts integer not null default 1,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (project_id, kind, evidence_id)
    )`);
    this.addSql('create index project_server_records_goal_idx on project_server_records (project_id, goal)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists project_server_records');
    this.addSql('drop table if exists project_notes');
  }
}
