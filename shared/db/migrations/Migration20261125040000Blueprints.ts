import { Migration } from '@mikro-orm/migrations';

/**
 * Blueprints: the registry of custom blueprints (`blueprints`: stable `blueprint_id`, the unique name
 * per tenant, the owner mirrored from the manifest; the files live in one Git repository per blueprint
 * under the blueprints directory) and explicit role grants (`blueprint_grants`: a role may view, edit
 * or manage one blueprint; removed with it).
 */
export class Migration20261125040000Blueprints extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table blueprints (
      blueprint_id text primary key,
      tenant text not null,
      name text not null,
      created_by text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint blueprints_tenant_name unique (tenant, name)
    )`);
    this.addSql(`create table blueprint_grants (
      blueprint_id text not null references blueprints (blueprint_id) on delete cascade,
      role_name text not null,
      action text not null check (action in ('view', 'edit', 'manage')),
      granted_by text not null,
      granted_at timestamptz not null default now(),
      primary key (blueprint_id, role_name, action)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists blueprint_grants');
    this.addSql('drop table if exists blueprints');
  }
}
