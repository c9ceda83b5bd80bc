import { Migration } from '@mikro-orm/migrations';

/** Identity (users, PATs, sandbox tokens), deployment settings, LLM spend and the echo proof table. */
export class Migration20261122000000Backbone extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table users (
      id text primary key,
      tenant text not null,
      kind text not null default 'person',
      display_name text null,
      email text null,
      roles jsonb not null default '[]',
      first_seen_at timestamptz not null,
      last_sign_in_at timestamptz not null
    )`);
    this.addSql(`create index users_last_sign_in_at_idx on users (last_sign_in_at desc)`);
    this.addSql(`create table personal_access_tokens (
      id uuid primary key,
      owner_id text not null references users (id) on delete cascade,
      tenant text not null,
      name text not null,
      token_hash text not null unique,
      token_prefix text not null,
      created_at timestamptz not null,
      expires_at timestamptz null,
      last_used_at timestamptz null,
      revoked_at timestamptz null
    )`);
    this.addSql(`create index personal_access_tokens_owner_idx on personal_access_tokens (owner_id, created_at desc)`);
    this.addSql(`create table sandbox_tokens (
      id uuid primary key,
      token_hash text not null unique,
      bot_id text not null,
      thread_id text not null,
      tenant text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      revoked_at timestamptz null
    )`);
    this.addSql(`create table llm_usage (
      id bigserial primary key,
      tenant text not null,
      provider text not null,
      model text not null,
      prompt_tokens integer not null default 0,
      completion_tokens integer not null default 0,
      cost_usd numeric(14, 6) not null check (cost_usd >= 0),
      thread_id text null,
      occurred_at timestamptz not null
    )`);
    this.addSql(`create index llm_usage_occurred_at_idx on llm_usage (occurred_at desc)`);
    this.addSql(`create table deployment_settings (
      key text primary key,
      value jsonb not null,
      updated_at timestamptz not null,
      updated_by text not null
    )`);
    this.addSql(`create table echo_jobs (
      job_id text primary key,
      tenant text not null,
      message text not null,
      requested_by text not null,
      workflow_id text not null,
      recorded_at timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    for (const table of [
      'echo_jobs',
      'deployment_settings',
      'llm_usage',
      'sandbox_tokens',
      'personal_access_tokens',
      'users',
    ]) {
      this.addSql(`drop table if exists ${table}`);
    }
  }
}
