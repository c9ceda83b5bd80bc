import { Migration } from '@mikro-orm/migrations';

/**
 * The name a person's identity-provider token carried (`users.name_claim`), kept apart from
 * `display_name`, which falls back to the e-mail or the login id when the token carries no name. Hosted
 * AI activation refuses `profile_incomplete` only when no name was carried, not when the name happens to
 * equal the login id (issue 31). Existing rows keep what `display_name` told before: a name unless it is
 * the id or the e-mail (their next sign-in records the claim itself).
 */
export class Migration20261129110100UserNameClaim extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table users add column name_claim text null');
    this.addSql(
      `update users set name_claim = display_name
        where display_name is not null and btrim(display_name) <> '' and display_name <> id
          and display_name is distinct from email`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('alter table users drop column name_claim');
  }
}
