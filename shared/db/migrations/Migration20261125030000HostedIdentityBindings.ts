import { Migration } from '@mikro-orm/migrations';

/**
 * Hosted mode's explicit identity links (spec, Hosted identity; Authentication 4): a verified
 * assertion's subject acts only through an `active` binding of its tenant and installation.
 * - one initial admin binding per tenant and installation, ever (partial unique index: concurrent
 *   bootstrap calls create exactly one);
 * - at most one active binding per subject;
 * - operation ids make invitation and revoke idempotent (unique per tenant and installation).
 */
export class Migration20261125030000HostedIdentityBindings extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table hosted_identity_bindings (
      binding_id text primary key,
      tenant text not null,
      installation text not null,
      subject text not null,
      role text not null check (role in ('admin', 'member')),
      initial_admin boolean not null default false,
      state text not null check (state in ('active', 'revoked')),
      create_operation_id text,
      revoke_operation_id text,
      created_by text not null,
      created_at timestamptz not null default now(),
      revoked_by text,
      revoked_at timestamptz
    )`);
    this.addSql(`create unique index hosted_identity_bindings_initial_admin
      on hosted_identity_bindings (tenant, installation) where initial_admin`);
    this.addSql(`create unique index hosted_identity_bindings_active_subject
      on hosted_identity_bindings (tenant, installation, subject) where state = 'active'`);
    this.addSql(`create unique index hosted_identity_bindings_create_op
      on hosted_identity_bindings (tenant, installation, create_operation_id) where create_operation_id is not null`);
    this.addSql(`create unique index hosted_identity_bindings_revoke_op
      on hosted_identity_bindings (tenant, installation, revoke_operation_id) where revoke_operation_id is not null`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists hosted_identity_bindings`);
  }
}
