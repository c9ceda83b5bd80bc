import type { EntityManager } from '@mikro-orm/postgresql';
import { BUILT_IN_ROLES, isPermission, permissionsFor, type Permission } from './rbac.js';
import { sql } from '../db/sql.js';

/**
 * Custom roles (imported from managed sources, `roles/<role_name>/role.yaml`): per tenant, a name and
 * the permissions it grants. Built-in role names are never custom roles, and a custom role never
 * holds an admin-level permission (the import refuses such files), so a role file cannot make
 * anyone an administrator.
 */
export const ADMIN_LEVEL_PERMISSIONS: readonly Permission[] = ['manage_users', 'manage_secrets', 'access_config_panel'];

export function isBuiltInRole(name: string): boolean {
  return Object.hasOwn(BUILT_IN_ROLES, name);
}

/** The permissions of built-in roles plus the tenant's custom roles among `roles`. */
export async function resolvePermissions(
  em: EntityManager,
  tenant: string,
  roles: readonly string[],
): Promise<Set<Permission>> {
  const granted = permissionsFor(roles);
  const custom = roles.filter((r) => !isBuiltInRole(r));
  if (!custom.length) return granted;
  const rows = await sql<{ permissions: string[] }>(
    em,
    `select permissions from custom_roles where tenant = ? and name in (${custom.map(() => '?').join(', ')})`,
    [tenant, ...custom],
  );
  for (const row of rows)
    for (const p of row.permissions) if (isPermission(p) && !ADMIN_LEVEL_PERMISSIONS.includes(p)) granted.add(p);
  return granted;
}
