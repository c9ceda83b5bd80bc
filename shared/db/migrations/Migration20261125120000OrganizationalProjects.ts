import { Migration } from '@mikro-orm/migrations';

/**
 * Organizational projects (issue 15): a tenant's named folders grouping apps, flows, missions and chat
 * threads. A name is unique (case-insensitively) among a tenant's non-archived projects. An item
 * belongs to at most one project (`organizational_project_assignments`, unique per tenant, kind and
 * item); a project with assignments cannot be deleted (`on delete restrict`).
 */
export class Migration20261125120000OrganizationalProjects extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table organizational_projects (
      id text primary key,
      tenant text not null,
      name text not null,
      description text not null default '',
      created_by text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      archived_at timestamptz null
    )`);
    this.addSql(
      'create unique index organizational_projects_active_name on organizational_projects (tenant, lower(name)) where archived_at is null',
    );
    this.addSql('create index organizational_projects_tenant on organizational_projects (tenant, created_at)');
    this.addSql(`create table organizational_project_assignments (
      tenant text not null,
      kind text not null check (kind in ('app', 'flow', 'mission', 'thread')),
      ref_id text not null,
      project_id text not null references organizational_projects (id) on delete restrict,
      assigned_by text not null,
      assigned_at timestamptz not null,
      primary key (tenant, kind, ref_id)
    )`);
    this.addSql(
      'create index organizational_project_assignments_project on organizational_project_assignments (project_id, kind)',
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists organizational_project_assignments');
    this.addSql('drop table if exists organizational_projects');
  }
}
