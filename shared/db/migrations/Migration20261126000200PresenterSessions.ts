import { Migration } from '@mikro-orm/migrations';

/**
 * Presenter sessions of the hosted demo (issue 18): `POST /api/demo/rca/fresh-session` opens one (an
 * agent thread seeded with the RCA scenario), `POST /api/demo/rca/reset` closes its thread and marks
 * it `reset`. `presenter_session_missions` tags the missions started through
 * `POST /api/demo/presenter-missions` with their session.
 */
export class Migration20261126000200PresenterSessions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table presenter_sessions (
      id text primary key,
      tenant text not null,
      status text not null check (status in ('active', 'reset')),
      demo_version_id text null,
      agent_id text not null,
      thread_id text not null,
      scenario_prompt text not null,
      created_by text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      reset_at timestamptz null
    )`);
    this.addSql(`create index presenter_sessions_tenant_idx on presenter_sessions (tenant, created_at desc)`);
    this.addSql(`create table presenter_session_missions (
      project_id text primary key references projects (id) on delete cascade,
      presenter_session_id text not null references presenter_sessions (id) on delete cascade,
      tenant text not null,
      created_at timestamptz not null
    )`);
    this.addSql(
      `create index presenter_session_missions_session_idx on presenter_session_missions (presenter_session_id, created_at desc)`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists presenter_session_missions');
    this.addSql('drop table if exists presenter_sessions');
  }
}
