import { Migration } from '@mikro-orm/migrations';

/**
 * Egress registrations (issue 31, item 7): in container-service mode the hosts a CRM connection declares
 * (`login_host`, `instance_url`) or discovers at authorization are registered here as `host:port`
 * entries; a person with `manage_secrets` approves them into the enforced egress list (`mesh.egress`)
 * or rejects them.
 */
export class Migration20261129770000EgressRegistrations extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table egress_registrations (
      id text primary key,
      registered_at timestamptz not null,
      tenant text not null,
      connection_name text not null,
      entry text not null,
      origin text not null check (origin in ('declared', 'discovered')),
      status text not null check (status in ('pending', 'approved', 'rejected')),
      decided_by text null,
      decided_at timestamptz null,
      unique (tenant, connection_name, entry)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table egress_registrations');
  }
}
