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
      -- Every secret field in one sealed JSON object (shared/secrets/sealed-columns.ts lists the column,
      -- so key rotation re-seals it); secret_fields names which are set, for masked reads.
      secrets_sealed text null,
      secret_fields jsonb not null default '[]',
      id text generated always as (tenant || '/' || provider_kind || '/' || sub_provider) stored unique,
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
    // Sealed columns refuse a value under a retired key (Migration20261123110000Secrets); platform_settings
    // (created before that migration) joins here too.
    this.addSql(`create trigger llm_providers_sealed_key before insert or update on llm_providers
      for each row execute function refuse_retired_secret_key('secrets_sealed')`);
    this.addSql(`create trigger platform_settings_sealed_key before insert or update on platform_settings
      for each row execute function refuse_retired_secret_key('sealed')`);
  }

  override async down(): Promise<void> {
    this.addSql('drop trigger if exists platform_settings_sealed_key on platform_settings');
    this.addSql('drop table if exists llm_settings');
    this.addSql('drop table if exists llm_providers');
  }
}
