/**
 * Blueprint access (spec, Blueprints, access rules): admin bypass, then ownership, then an explicit
 * `blueprint:<name>` grant to one of the caller's roles for the action, else the role-level
 * permissions `view_all_blueprints` (view) and `manage_all_blueprints` (view, edit, manage). Actions
 * nest: manage implies edit implies view. Built-in defaults are viewable by everyone and editable by
 * no one. The caller's permissions already include its custom roles (`shared/auth/custom-roles.ts`).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { isBuiltInRole } from '../auth/custom-roles.js';
import { ForbiddenError, NotFoundError } from '../errors.js';
import { resolveOwner } from './manifest.js';
import { readManifestAt, repoDir, type BlueprintRow, type Resolved } from './store.js';
import { sql } from '../db/sql.js';

export const ACTIONS = ['view', 'edit', 'manage'] as const;
export type BlueprintAction = (typeof ACTIONS)[number];

export interface AccessFlags {
  is_owner: boolean;
  can_view: boolean;
  can_edit: boolean;
  can_manage: boolean;
}

export function isAdmin(p: Principal): boolean {
  return p.roles.includes('admin') || p.credential === 'auth_disabled';
}

export interface Grant {
  blueprint_id: string;
  role_name: string;
  action: BlueprintAction;
  granted_by: string;
  granted_at: Date;
}

export async function grantsOf(em: EntityManager, blueprintIds: string[]): Promise<Grant[]> {
  if (!blueprintIds.length) return [];
  return sql<Grant>(
    em,
    `select * from blueprint_grants where blueprint_id in (${blueprintIds.map(() => '?').join(', ')}) order by role_name, action`,
    blueprintIds,
  );
}

/** The caller's flags on one blueprint, given the grants of that blueprint. */
export function flagsFor(p: Principal, b: Resolved, grants: Grant[]): AccessFlags {
  if (b.kind === 'default') {
    return { is_owner: false, can_view: true, can_edit: false, can_manage: false };
  }
  const owner = resolveOwner(b.manifest) ?? b.row.created_by;
  const isOwner = owner !== null && owner === p.id;
  if (isAdmin(p) || isOwner) return { is_owner: isOwner, can_view: true, can_edit: true, can_manage: true };
  const mine = new Set(grants.filter((g) => p.roles.includes(g.role_name)).map((g) => g.action));
  const manage = mine.has('manage') || p.permissions.has('manage_all_blueprints');
  const edit = manage || mine.has('edit');
  const view = edit || mine.has('view') || p.permissions.has('view_all_blueprints');
  return { is_owner: false, can_view: view, can_edit: edit, can_manage: manage };
}

/** Refuses unless the caller may do `action`; a blueprint the caller cannot view answers 404. */
export function requireAccess(flags: AccessFlags, action: BlueprintAction, name: string): void {
  if (!flags.can_view) throw new NotFoundError(`No blueprint named "${name}".`, { blueprint_name: name });
  const ok = action === 'view' ? true : action === 'edit' ? flags.can_edit : flags.can_manage;
  if (!ok) {
    throw new ForbiddenError(
      `You may view blueprint "${name}" but not ${action} it. Ask its owner or an administrator for a "${action}" grant to one of your roles (POST /api/blueprints/${name}/access/grant), or the role permission manage_all_blueprints.`,
      { blueprint_name: name, required_action: action },
    );
  }
}

/** A role a grant may name: a built-in role or one of the tenant's custom roles. */
export async function isConfiguredRole(em: EntityManager, tenant: string, role: string): Promise<boolean> {
  if (isBuiltInRole(role)) return true;
  const rows = await sql<{ name: string }>(em, `select name from custom_roles where tenant = ? and name = ?`, [
    tenant,
    role,
  ]);
  return rows.length > 0;
}

/**
 * The tenant's custom blueprints with the caller's flags on each (the inventory and the wizard list
 * them alike). A working copy that cannot be read (being written, or lost) is left out: its detail
 * answers the reason.
 */
export async function customWithFlags(
  ctx: { em: EntityManager; principal: Principal; root: string },
  rows: BlueprintRow[],
): Promise<{ b: Extract<Resolved, { kind: 'custom' }>; flags: AccessFlags }[]> {
  const grants = await grantsOf(
    ctx.em,
    rows.map((r) => r.blueprint_id),
  );
  const out: { b: Extract<Resolved, { kind: 'custom' }>; flags: AccessFlags }[] = [];
  for (const row of rows) {
    const dir = repoDir(ctx.root, ctx.principal.tenant, row.blueprint_id);
    const manifest = await readManifestAt(dir).catch(() => null);
    if (!manifest) continue;
    const b = { kind: 'custom' as const, row, dir, manifest };
    out.push({
      b,
      flags: flagsFor(
        ctx.principal,
        b,
        grants.filter((g) => g.blueprint_id === row.blueprint_id),
      ),
    });
  }
  return out;
}
