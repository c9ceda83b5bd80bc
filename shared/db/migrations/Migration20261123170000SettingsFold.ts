import { Migration } from '@mikro-orm/migrations';

/**
 * One store for settings: branding fields (were `deployment_settings` key `branding`) and the mesh
 * egress list and advertise tags (were columns of `mesh_settings`) move into `platform_settings` as
 * `branding.<field>`, `mesh.egress`, `mesh.advertise_tags`; the version moves so every process re-reads.
 */
export class Migration20261123170000SettingsFold extends Migration {
  override async up(): Promise<void> {
    this.addSql(`insert into platform_settings (path, value, sealed, updated_at, updated_by)
      select 'branding.' || f.key, f.value, null, d.updated_at, d.updated_by
      from deployment_settings d, jsonb_each(d.value) f
      where d.key = 'branding' and jsonb_typeof(d.value) = 'object' and jsonb_typeof(f.value) = 'string'
        and f.key in ('product_name', 'primary_color', 'accent_color', 'support_url', 'support_email', 'sign_in_message')
      on conflict (path) do nothing`);
    this.addSql(`delete from deployment_settings where key = 'branding'`);
    this.addSql(`insert into platform_settings (path, value, sealed, updated_at, updated_by)
      select 'mesh.egress', egress, null, updated_at, coalesce(updated_by, 'migration')
      from mesh_settings where egress is not null and jsonb_array_length(egress) > 0
      on conflict (path) do nothing`);
    this.addSql(`insert into platform_settings (path, value, sealed, updated_at, updated_by)
      select 'mesh.advertise_tags', advertise_tags, null, updated_at, coalesce(updated_by, 'migration')
      from mesh_settings where advertise_tags is not null
      on conflict (path) do nothing`);
    this.addSql(`alter table mesh_settings drop column egress, drop column advertise_tags`);
    this.addSql(`update platform_settings_version set version = version + 1 where id = 1`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table mesh_settings add column egress jsonb null, add column advertise_tags jsonb null`);
  }
}
