import { Migration } from '@mikro-orm/migrations';

/**
 * Tracker automation (issue 16): the pollers' state (one row per poller: when a poll last started,
 * last succeeded, last ran, and its last error), the ledger of tracker requests (one row per
 * source and issue key) and its events, unique by (source, issue key, kind, provider stamp) so a
 * repeated poll or a replayed webhook records an event once.
 */
export class Migration20261125140000TrackerAutomation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table tracker_poll_state (
      tenant text not null,
      poller text not null,
      last_poll_started_at timestamptz null,
      last_successful_poll_at timestamptz null,
      poller_last_run_at timestamptz null,
      last_window_start timestamptz null,
      last_error text null,
      last_summary jsonb null,
      primary key (tenant, poller)
    )`);
    this.addSql(`create table tracker_requests (
      tenant text not null,
      source text not null,
      issue_key text not null,
      summary text not null,
      provider_status text null,
      work_state text not null,
      provider_updated_at text null,
      dispatched_run_id text null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      primary key (tenant, source, issue_key)
    )`);
    this.addSql(`create table tracker_ledger_events (
      id bigserial primary key,
      tenant text not null,
      source text not null,
      issue_key text not null,
      kind text not null,
      provider_updated_at text not null,
      detail jsonb not null,
      created_at timestamptz not null,
      unique (tenant, source, issue_key, kind, provider_updated_at)
    )`);
    this.addSql('create index tracker_ledger_events_recent_idx on tracker_ledger_events (tenant, created_at desc)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists tracker_ledger_events');
    this.addSql('drop table if exists tracker_requests');
    this.addSql('drop table if exists tracker_poll_state');
  }
}
