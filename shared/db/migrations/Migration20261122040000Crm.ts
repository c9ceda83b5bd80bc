import { Migration } from '@mikro-orm/migrations';

/** CRM connections (secrets and tokens sealed) and merge approvals (expiry recorded, never deleted). */
export class Migration20261122040000Crm extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table crm_connections (
      id text primary key,
      tenant text not null,
      name text not null,
      type text not null,
      auth_mode text not null,
      settings jsonb not null,
      secrets_sealed text not null,
      merge_enabled boolean not null default false,
      policy jsonb null,
      egress_hosts jsonb not null default '[]',
      test_result jsonb null,
      tokens_sealed text null,
      oauth_pending_sealed text null,
      created_by text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`);
    this.addSql(`create unique index crm_connections_tenant_name_idx on crm_connections (tenant, name)`);
    this.addSql(`create table crm_merge_approvals (
      approval_id text primary key,
      tenant text not null,
      connection_name text not null,
      record_kind text not null,
      survivor_id text not null,
      loser_ids jsonb not null,
      digest text not null,
      policy_version text not null,
      projection jsonb not null,
      ttl_seconds integer not null,
      expires_at timestamptz not null,
      status text not null check (status in ('open', 'expired')),
      expired_at timestamptz null,
      execution_started_at timestamptz null,
      requested_by jsonb not null,
      approved_by jsonb null,
      created_at timestamptz not null
    )`);
    this.addSql(`create index crm_merge_approvals_tenant_created_idx on crm_merge_approvals (tenant, created_at desc)`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists crm_merge_approvals');
    this.addSql('drop table if exists crm_connections');
  }
}
