import { Migration } from '@mikro-orm/migrations';

/**
 * Desktop mode (issue 18): the laptop's one activation record (`desktop_state`, a single row keyed
 * `desktop`: the device credential and AI key sealed together in `credentials_sealed`, everything
 * else in `state`) and the sign-in attempts (`desktop_sign_in_attempts`, keyed by the SHA-256 of the
 * OAuth `state`: waiting, then succeeded or failed) and the diagnostics previews
 * (`desktop_diagnostics_previews`: the exact log bytes a send uploads, until expiry or the send).
 */
export class Migration20261125020000Desktop extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table desktop_state (
      id text primary key,
      credentials_sealed text null,
      state jsonb not null,
      updated_at timestamptz not null default now()
    )`);
    this.addSql(`create trigger desktop_state_sealed_key before insert or update on desktop_state
      for each row execute function refuse_retired_secret_key('credentials_sealed')`);
    this.addSql(`create table desktop_sign_in_attempts (
      state_hash text primary key,
      status text not null check (status in ('waiting', 'succeeded', 'failed', 'cancelled')),
      port integer not null,
      redirect_uri text not null,
      failure_reason text null,
      created_at timestamptz not null default now(),
      finished_at timestamptz null,
      expires_at timestamptz not null
    )`);
    this.addSql('create index desktop_sign_in_attempts_created_at on desktop_sign_in_attempts (created_at)');
    this.addSql(`create table desktop_diagnostics_previews (
      id text primary key,
      trigger text not null check (trigger in ('manual', 'automatic')),
      content bytea not null,
      total_bytes integer not null,
      files jsonb not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      sent_at timestamptz null,
      result jsonb null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists desktop_diagnostics_previews');
    this.addSql('drop table if exists desktop_sign_in_attempts');
    this.addSql('drop table if exists desktop_state');
  }
}
