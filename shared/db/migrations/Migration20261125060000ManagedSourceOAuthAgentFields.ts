import { Migration } from '@mikro-orm/migrations';

/**
 * Managed sources, part 4 (issue 12): a source's credentials may be a saved OAuth grant (kind `oauth`,
 * `credential_expires_at` when it lapses: syncs then answer `OAUTH_RENEWAL_REQUIRED`), and agents keep
 * what an agent manifest declares beyond the registry's fields: `llm_provider` (null: the tenant's
 * default) and `skill_groups` (the default skill groups).
 */
export class Migration20261125060000ManagedSourceOAuthAgentFields extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table managed_sources drop constraint if exists managed_sources_credential_kind_check');
    this.addSql(
      `alter table managed_sources add constraint managed_sources_credential_kind_check check (credential_kind in ('token', 'basic', 'oauth'))`,
    );
    this.addSql('alter table managed_sources add column credential_expires_at timestamptz null');
    this.addSql('alter table agents add column llm_provider text null');
    this.addSql(`alter table agents add column skill_groups jsonb not null default '[]'`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table agents drop column if exists skill_groups');
    this.addSql('alter table agents drop column if exists llm_provider');
    this.addSql('alter table managed_sources drop column if exists credential_expires_at');
    this.addSql(`delete from managed_sources where credential_kind = 'oauth'`);
    this.addSql('alter table managed_sources drop constraint if exists managed_sources_credential_kind_check');
    this.addSql(
      `alter table managed_sources add constraint managed_sources_credential_kind_check check (credential_kind in ('token', 'basic'))`,
    );
  }
}
