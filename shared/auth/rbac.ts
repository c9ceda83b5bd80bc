// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/** The permissions the spec names (Authentication, item 7). */
export const PERMISSIONS = [
  'access_config_panel',
  'manage_users',
  'manage_secrets',
  'manage_repos',
  'manage_agents',
  'manage_flows',
  'manage_skills',
  'manage_git',
  'view_git',
  'view_connections',
  'manage_all_connections',
  'view_all_blueprints',
  'manage_all_blueprints',
  'APPROVE_AGENT_ACTION',
  /** Hosted demo presenter routes (with the role `staff` or `admin`); granted to admin, or through a custom role. */
  'present_demos',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/**
 * Built-in roles. `admin` holds every permission. Role names in a token that are not listed here
 * grant nothing (they may still matter to other checks, e.g. agent access by role).
 */
export const BUILT_IN_ROLES: Readonly<Record<string, readonly Permission[]>> = {
  admin: PERMISSIONS,
  reviewer: ['APPROVE_AGENT_ACTION', 'view_connections', 'view_git', 'view_all_blueprints'],
  developer: [
    'manage_repos',
    'manage_flows',
    'manage_skills',
    'manage_git',
    'view_git',
    'view_connections',
    'view_all_blueprints',
  ],
  member: ['view_git'],
};

export function permissionsFor(roles: readonly string[]): Set<Permission> {
  const granted = new Set<Permission>();
  for (const role of roles) for (const p of BUILT_IN_ROLES[role] ?? []) granted.add(p);
  return granted;
}

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}
