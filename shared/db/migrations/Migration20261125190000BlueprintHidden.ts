import { Migration } from '@mikro-orm/migrations';

/**
 * Mission-aware blueprint delete (issue 14): DELETE of a custom blueprint that missions reference
 * hides it (`hidden` true) instead of deleting it, so those missions still resolve it; hidden rows
 * are left out of the inventory and the wizard, and the blueprint routes answer them as 404.
 */
export class Migration20261125190000BlueprintHidden extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table blueprints add column hidden boolean not null default false`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table blueprints drop column hidden`);
  }
}
