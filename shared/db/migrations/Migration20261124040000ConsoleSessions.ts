import { Migration } from '@mikro-orm/migrations';

/**
 * The review console's server-side sessions (`console_sessions`, keyed by the SHA-256 of the cookie
 * value, holding the signed-in principal and the session's CSRF token until `expires_at`) and the
 * sign-ins in flight (`console_sign_ins`: the OAuth `state`'s hash, the PKCE verifier, where to go back).
 */
export class Migration20261124040000ConsoleSessions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table console_sessions (
      id_hash text primary key,
      tenant text not null,
      principal_id text not null,
      principal_kind text not null,
      display_name text not null,
      roles jsonb not null,
      credential text not null,
      csrf_token text not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`);
    this.addSql(`create index console_sessions_expires_at on console_sessions (expires_at)`);
    this.addSql(`create table console_sign_ins (
      state_hash text primary key,
      code_verifier text not null,
      return_to text not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists console_sign_ins`);
    this.addSql(`drop table if exists console_sessions`);
  }
}
