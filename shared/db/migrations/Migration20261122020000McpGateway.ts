import { Migration } from '@mikro-orm/migrations';

/** MCP gateway: OAuth-proxy sign-ins in flight, files agents produced, and used signed download URLs. */
export class Migration20261122020000McpGateway extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table mcp_oauth_authorizations (
      id text primary key,
      client_id text not null,
      redirect_uri text not null,
      client_state text null,
      code_challenge text not null,
      scope text null,
      callback_uri text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      callback_at timestamptz null,
      upstream_code text null,
      code_hash text null unique,
      code_expires_at timestamptz null,
      redeemed_at timestamptz null
    )`);
    this.addSql(`create index mcp_oauth_authorizations_expires_idx on mcp_oauth_authorizations (expires_at)`);
    this.addSql(`create table downloads (
      id uuid primary key,
      tenant text not null,
      file_name text not null,
      content_type text not null,
      content bytea not null,
      byte_size integer not null,
      created_at timestamptz not null default now()
    )`);
    this.addSql(`create table download_grants (
      jti uuid primary key,
      download_id uuid not null references downloads (id) on delete cascade,
      tenant text not null,
      used_at timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists download_grants');
    this.addSql('drop table if exists downloads');
    this.addSql('drop table if exists mcp_oauth_authorizations');
  }
}
