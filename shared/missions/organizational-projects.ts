import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { toIso } from '../dates.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors.js';
import { sql } from '../db/sql.js';
import type { AppDeps } from '../app-deps.js';
import { visibleProject } from './service.js';
import { MissionCodes } from './error-codes.js';

/**
 * Organizational projects (issue 15; spec "Organizational project"): named folders of a tenant that
 * group apps, flows, missions and chat threads. Rules:
 * - Every signed-in caller of the tenant sees the tenant's projects and may create one.
 * - Changing, archiving, unarchiving or deleting a project: its creator, or a caller with `manage_users`
 *   (admins hold every permission); others get 403.
 * - Names are unique, case-insensitively, among the tenant's non-archived projects (409
 *   `PROJECT_NAME_TAKEN`, also when unarchiving into a taken name).
 * - Archiving keeps the assignments, read-only: nothing is assigned to, moved out of or cleared from an
 *   archived project (409 `PROJECT_ARCHIVED`) until it is unarchived.
 * - Deleting needs an empty project (409 `PROJECT_NOT_EMPTY`); archived or not.
 * - Assigning needs the item to exist and be the caller's to edit: a thread the caller can see (shared in
 *   the tenant, or their own private one), a promoted managed flow (`<source_id>:<flow_name>`) with
 *   `manage_flows` or `manage_repos`, a mission of the caller's tenant the caller may see (the missions'
 *   own rule, as `GET /api/projects`: its requester, an administrator, or whoever may view its
 *   blueprint; read from its `projects` row, written before its workflow starts), or an app a managed
 *   source recorded (`<source_id>:<app_name>`, `managed_apps` of the caller's tenant) with `manage_repos`
 *   (apps have no permission of their own); an unknown app is 404 `APP_UNKNOWN`.
 */
export const PROJECT_ID = /^wprj_[0-9a-f]{32}$/;
export const ITEM_KINDS = ['app', 'flow', 'mission', 'thread'] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

interface ProjectRow {
  id: string;
  tenant: string;
  name: string;
  description: string;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

export interface ProjectView {
  id: string;
  name: string;
  description: string;
  created_by: string;
  created_at: string;
  updated_at: string;
  archived_at: string | null;
}

export type KindCounts = Record<ItemKind, number>;
const view = (r: ProjectRow): ProjectView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  created_by: r.created_by,
  created_at: toIso(r.created_at),
  updated_at: toIso(r.updated_at),
  archived_at: toIso(r.archived_at),
});

const emptyCounts = (): KindCounts => ({ app: 0, flow: 0, mission: 0, thread: 0 });

const nameTaken = (name: string) =>
  new ConflictError(`A project named "${name}" already exists.`, { code: MissionCodes.PROJECT_NAME_TAKEN });

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string }).code === '23505' || /unique constraint/i.test(String(err));
}

async function loadProject(em: EntityManager, principal: Principal, id: string, lock = false): Promise<ProjectRow> {
  const [row] = await sql<ProjectRow>(
    em,
    `select * from organizational_projects where id = ? and tenant = ?${lock ? ' for update' : ''}`,
    [id, principal.tenant],
  );
  if (!row) throw new NotFoundError(`No organizational project ${id}.`);
  return row;
}

function mayManage(principal: Principal, row: ProjectRow): void {
  if (row.created_by === principal.id || principal.permissions.has('manage_users')) return;
  throw new ForbiddenError(
    'Only the project\'s creator or a caller with "manage_users" may change, archive or delete it.',
    { required_permission: ['manage_users'], roles: principal.roles },
  );
}

async function countsOf(em: EntityManager, tenant: string, ids: string[]): Promise<Map<string, KindCounts>> {
  const out = new Map<string, KindCounts>(ids.map((id) => [id, emptyCounts()]));
  if (!ids.length) return out;
  const rows = await sql<{ project_id: string; kind: ItemKind; n: string | number }>(
    em,
    `select project_id, kind, count(*) as n from organizational_project_assignments
     where tenant = ? and project_id in (?) group by project_id, kind`,
    [tenant, ids],
  );
  for (const r of rows) out.get(r.project_id)![r.kind] = Number(r.n);
  return out;
}

export async function createProject(
  em: EntityManager,
  principal: Principal,
  input: { name: string; description?: string },
): Promise<ProjectView & { counts: KindCounts }> {
  const id = `wprj_${randomBytes(16).toString('hex')}`;
  const name = input.name.trim();
  try {
    const [row] = await sql<ProjectRow>(
      em,
      `insert into organizational_projects (id, tenant, name, description, created_by, created_at, updated_at)
       values (?, ?, ?, ?, ?, now(), now()) returning *`,
      [id, principal.tenant, name, input.description ?? '', principal.id],
    );
    return { ...view(row!), counts: emptyCounts() };
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(name);
    throw err;
  }
}

export async function listProjects(
  em: EntityManager,
  principal: Principal,
  includeArchived: boolean,
): Promise<Array<ProjectView & { counts: KindCounts }>> {
  const rows = await sql<ProjectRow>(
    em,
    `select * from organizational_projects where tenant = ?${includeArchived ? '' : ' and archived_at is null'}
     order by lower(name), created_at, id`,
    [principal.tenant],
  );
  const counts = await countsOf(
    em,
    principal.tenant,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({ ...view(r), counts: counts.get(r.id)! }));
}

export async function getProject(
  em: EntityManager,
  principal: Principal,
  id: string,
): Promise<ProjectView & { counts: KindCounts }> {
  const row = await loadProject(em, principal, id);
  const counts = await countsOf(em, principal.tenant, [id]);
  return { ...view(row), counts: counts.get(id)! };
}

export async function updateProject(
  em: EntityManager,
  principal: Principal,
  id: string,
  patch: { name?: string; description?: string },
): Promise<ProjectView & { counts: KindCounts }> {
  const row = await loadProject(em, principal, id);
  mayManage(principal, row);
  const name = patch.name?.trim();
  try {
    await sql(
      em,
      `update organizational_projects set name = coalesce(?, name), description = coalesce(?, description), updated_at = now()
       where id = ?`,
      [name ?? null, patch.description ?? null, id],
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(name ?? row.name);
    throw err;
  }
  return getProject(em, principal, id);
}

export async function setArchived(
  em: EntityManager,
  principal: Principal,
  id: string,
  archived: boolean,
): Promise<ProjectView & { counts: KindCounts }> {
  const row = await loadProject(em, principal, id);
  mayManage(principal, row);
  if (archived !== (row.archived_at !== null)) {
    try {
      await sql(
        em,
        `update organizational_projects set archived_at = ${archived ? 'now()' : 'null'}, updated_at = now() where id = ?`,
        [id],
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken(row.name);
      throw err;
    }
  }
  return getProject(em, principal, id);
}

export async function deleteProject(em: EntityManager, principal: Principal, id: string): Promise<ProjectView> {
  return em.fork().transactional(async (tx) => {
    const row = await loadProject(tx, principal, id, true);
    mayManage(principal, row);
    const [{ n } = { n: 0 }] = await sql<{ n: string | number }>(
      tx,
      'select count(*) as n from organizational_project_assignments where project_id = ?',
      [id],
    );
    if (Number(n) > 0)
      throw new ConflictError(`Project ${id} still groups ${n} item(s); clear their assignments first.`, {
        code: MissionCodes.PROJECT_NOT_EMPTY,
        assigned: Number(n),
      });
    await sql(tx, 'delete from organizational_projects where id = ?', [id]);
    return view(row);
  });
}

export interface MemberView {
  ref_id: string;
  assigned_by: string;
  assigned_at: string;
}

export async function listMembers(
  em: EntityManager,
  principal: Principal,
  id: string,
): Promise<{ project_id: string; items: Record<ItemKind, MemberView[]> }> {
  await loadProject(em, principal, id);
  const rows = await sql<{ kind: ItemKind; ref_id: string; assigned_by: string; assigned_at: Date }>(
    em,
    `select kind, ref_id, assigned_by, assigned_at from organizational_project_assignments
     where tenant = ? and project_id = ? order by assigned_at, ref_id`,
    [principal.tenant, id],
  );
  const items: Record<ItemKind, MemberView[]> = { app: [], flow: [], mission: [], thread: [] };
  for (const r of rows)
    items[r.kind].push({ ref_id: r.ref_id, assigned_by: r.assigned_by, assigned_at: toIso(r.assigned_at) });
  return { project_id: id, items };
}

/** Throws 404 when the item is unknown or hidden from the caller, 403 when visible but not theirs to edit. */
async function checkItem(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  kind: ItemKind,
  refId: string,
): Promise<void> {
  switch (kind) {
    case 'thread': {
      const [t] = await sql<{ tenant: string; owner_id: string | null; visibility: string }>(
        em,
        'select tenant, owner_id, visibility from conversation_threads where id = ?',
        [refId],
      );
      if (!t || t.tenant !== principal.tenant || (t.visibility !== 'tenant' && t.owner_id !== principal.id))
        throw new NotFoundError(`No thread ${refId}.`);
      return;
    }
    case 'flow': {
      const sep = refId.indexOf(':');
      const [f] =
        sep > 0
          ? await sql<{ tenant: string }>(
              em,
              'select tenant from managed_flows where source_id = ? and flow_name = ? and tenant = ?',
              [refId.slice(0, sep), refId.slice(sep + 1), principal.tenant],
            )
          : [];
      if (!f) throw new NotFoundError(`No flow ${refId} (flows are named "<source_id>:<flow_name>").`);
      if (!principal.permissions.has('manage_flows') && !principal.permissions.has('manage_repos'))
        throw new ForbiddenError('Assigning a flow needs "manage_flows" or "manage_repos".', {
          required_permission: ['manage_flows', 'manage_repos'],
          roles: principal.roles,
        });
      return;
    }
    case 'mission':
      // The mission's own visibility rule; unknown, foreign and hidden missions answer 404 alike.
      await visibleProject(deps, em, principal, refId);
      return;
    case 'app': {
      const sep = refId.indexOf(':');
      const [a] =
        sep > 0
          ? await sql<{ tenant: string }>(
              em,
              'select tenant from managed_apps where source_id = ? and name = ? and tenant = ?',
              [refId.slice(0, sep), refId.slice(sep + 1), principal.tenant],
            )
          : [];
      if (!a)
        throw new NotFoundError(`No app ${refId} (apps are named "<source_id>:<app_name>").`, {
          code: MissionCodes.APP_UNKNOWN,
        });
      if (!principal.permissions.has('manage_repos'))
        throw new ForbiddenError('Assigning an app needs "manage_repos".', {
          required_permission: ['manage_repos'],
          roles: principal.roles,
        });
      return;
    }
  }
}

const archivedProject = (id: string) =>
  new ConflictError(`Project ${id} is archived; its assignments are read-only until it is unarchived.`, {
    code: MissionCodes.PROJECT_ARCHIVED,
    project_id: id,
  });

/** Assigns an item to a project, or clears its project (`projectId` null); answers the item's project id. */
export async function assignItem(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  kind: ItemKind,
  refId: string,
  projectId: string | null,
): Promise<{ kind: ItemKind; ref_id: string; project_id: string | null }> {
  await checkItem(em, deps, principal, kind, refId);
  return em.fork().transactional(async (tx) => {
    if (projectId !== null) {
      const target = await loadProject(tx, principal, projectId, true);
      if (target.archived_at) throw archivedProject(projectId);
    }
    const [current] = await sql<{ project_id: string; archived_at: Date | null }>(
      tx,
      `select a.project_id, p.archived_at from organizational_project_assignments a
       join organizational_projects p on p.id = a.project_id
       where a.tenant = ? and a.kind = ? and a.ref_id = ? for update of a, p`,
      [principal.tenant, kind, refId],
    );
    if (current?.project_id === projectId) return { kind, ref_id: refId, project_id: projectId };
    if (current?.archived_at) throw archivedProject(current.project_id);
    if (projectId === null) {
      await sql(tx, 'delete from organizational_project_assignments where tenant = ? and kind = ? and ref_id = ?', [
        principal.tenant,
        kind,
        refId,
      ]);
    } else {
      await sql(
        tx,
        `insert into organizational_project_assignments (tenant, kind, ref_id, project_id, assigned_by, assigned_at)
         values (?, ?, ?, ?, ?, now())
         on conflict (tenant, kind, ref_id) do update set project_id = excluded.project_id,
           assigned_by = excluded.assigned_by, assigned_at = excluded.assigned_at`,
        [principal.tenant, kind, refId, projectId, principal.id],
      );
    }
    return { kind, ref_id: refId, project_id: projectId };
  });
}
