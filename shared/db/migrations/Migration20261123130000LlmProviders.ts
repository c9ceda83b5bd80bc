import { Migration } from '@mikro-orm/migrations';

/**
 * Language-model providers per tenant (issue 10): one row per saved provider (kind, and the vendor
 * for the multi-vendor `other` kind), secrets sealed with the secret box; and per tenant the active
 * chat provider, `main` model assignments per provider, the embedding identity, and a version every
 * write bumps so API and worker drop their cached resolution on the next call.
 */
export class Migration20261123130000LlmProviders extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table llm_providers (
      tenant text not null,
      provider_kind text not null,
      sub_provider text not null default '',
      settings jsonb not null default '{}',
      secrets jsonb not null default '{}',
      admission text not null default 'auto' check (admission in ('auto', 'deny')),
      configured boolean not null default true,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      updated_by text not null,
      primary key (tenant, provider_kind, sub_provider)
    )`);
    this.addSql(`create table llm_settings (
      tenant text primary key,
      active_kind text null,
      active_sub_provider text not null default '',
      assignments jsonb not null default '{}',
      embeddings jsonb null,
      reindex jsonb null,
      version bigint not null default 0,
      updated_at timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists llm_settings');
    this.addSql('drop table if exists llm_providers');
  }
}
