import { Migration } from '@mikro-orm/migrations';

/**
 * Branding logos (bytes and a per-type version that changes with every upload) and external access
 * integration assignments. Branding fields, the license, the demo owner and the default e-mail
 * address are rows of `deployment_settings`.
 */
export class Migration20261123120000ConfigMisc extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table branding_logos (
      logo_type text primary key,
      media_type text not null,
      content bytea not null,
      sha256 text not null,
      version integer not null,
      uploaded_at timestamptz not null,
      uploaded_by text not null
    )`);
    this.addSql(`create table eai_assignments (
      reference_name text primary key,
      integration_type text not null,
      assigned_at timestamptz not null,
      assigned_by text not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists eai_assignments');
    this.addSql('drop table if exists branding_logos');
  }
}
