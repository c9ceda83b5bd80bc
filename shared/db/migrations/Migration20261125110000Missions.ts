import { Migration } from '@mikro-orm/migrations';

/**
 * Missions (issue 15): a blueprint run by workflow `mission/<project_id>`. `projects` holds one row
 * per mission (id `prj_` + 32 lowercase hex); `project_goals` and `project_questions` are its goals
 * and the questions it asked people; `project_events` is the append-only log. The mission's
 * activities write each projection change in the same transaction as its event row; rows are never
 * edited in place except their status columns (and `progress`, `blueprint_phase`, `waiting_state`,
 * `root_thread_id`, `agents` of the project).
 */
export class Migration20261125110000Missions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table projects (
      id text primary key,
      tenant text not null,
      name text not null,
      blueprint_name text not null,
      blueprint_id text not null,
      blueprint_commit text not null,
      parameters jsonb not null default '{}'::jsonb,
      status text not null check (status in ('running', 'paused', 'completed', 'cancelled', 'closed')),
      waiting_state text not null default 'NONE' check (waiting_state in ('NONE', 'IN_PROGRESS_NEEDING_INPUT', 'STUCK')),
      closed_reason text null,
      requested_by text not null,
      root_thread_id text null,
      agents jsonb not null default '[]'::jsonb,
      blueprint_phase text null,
      phases_total integer not null,
      phases_done integer not null default 0,
      progress double precision not null default 0,
      started_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      closed_at timestamptz null
    )`);
    this.addSql('create index projects_tenant_started_idx on projects (tenant, started_at desc)');
    this.addSql('create index projects_waiting_idx on projects (tenant, waiting_state, updated_at desc)');
    this.addSql(`create table project_goals (
      project_id text not null references projects(id) on delete cascade,
      id text not null,
      phase text not null,
      name text not null,
      acceptance_criterion text null,
      status text not null check (status in ('planned', 'in_progress', 'met', 'waived')),
      position integer not null,
      updated_at timestamptz not null default now(),
      primary key (project_id, id)
    )`);
    this.addSql(`create table project_questions (
      project_id text not null references projects(id) on delete cascade,
      question_set_id text not null,
      question_id text not null,
      phase text not null,
      position integer not null,
      priority text not null check (priority in ('high', 'normal', 'low')),
      category text null,
      content text not null,
      expected_response_type text null,
      options jsonb null,
      recommended text null,
      status text not null check (status in ('open', 'answered')),
      answer text null,
      answered_by text null,
      answered_at timestamptz null,
      primary key (question_set_id, question_id)
    )`);
    this.addSql('create index project_questions_project_idx on project_questions (project_id, status)');
    this.addSql(`create table project_events (
      id bigserial primary key,
      project_id text not null references projects(id) on delete cascade,
      seq integer not null,
      kind text not null,
      payload jsonb not null,
      at timestamptz not null default now(),
      unique (project_id, seq)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists project_events');
    this.addSql('drop table if exists project_questions');
    this.addSql('drop table if exists project_goals');
    this.addSql('drop table if exists projects');
  }
}
