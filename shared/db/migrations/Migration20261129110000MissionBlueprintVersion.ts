import { Migration } from '@mikro-orm/migrations';

/**
 * A mission of a versioned blueprint runs its production version (issue 31 item 1): the mission
 * records which saved version it ran (`blueprint_version_number`; null for a standard or built-in
 * blueprint, whose working-copy HEAD runs).
 */
export class Migration20261129110000MissionBlueprintVersion extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table projects add column blueprint_version_number integer null');
  }

  override async down(): Promise<void> {
    this.addSql('alter table projects drop column blueprint_version_number');
  }
}
