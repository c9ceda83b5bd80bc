import { Migration } from '@mikro-orm/migrations';

/**
 * The ticket-RCA presenter vignette (issue 18): one row per (tenant, presenter session), the PG
 * projection of workflow `ticket-rca/<tenant>/<presenter_session_id>`. The partial unique index lets
 * one session per tenant hold the build provider (`preparing` or `running`): a second is
 * `BUILD_PROVIDER_BUSY`.
 */
export class Migration20261126000100TicketRca extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table ticket_rca_sessions (
      tenant text not null,
      presenter_session_id text not null,
      state text not null,
      attempt integer not null default 0,
      project_key text null,
      issue_type text null,
      demo_version_id text null,
      summary text null,
      ticket_key text null,
      run_id text null,
      run_status text null,
      error_code text null,
      error text null,
      created_by text not null,
      prepared_at timestamptz null,
      finished_at timestamptz null,
      updated_at timestamptz not null,
      primary key (tenant, presenter_session_id)
    )`);
    this.addSql(
      `create unique index ticket_rca_sessions_one_active on ticket_rca_sessions (tenant) where state in ('preparing', 'running')`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists ticket_rca_sessions');
  }
}
