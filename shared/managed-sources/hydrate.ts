import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import YAML from 'yaml';
import { z } from 'zod';
import { TOOL_GROUP_NAMES, isToolGroup } from '../agents/tool-groups.js';
import { ADMIN_LEVEL_PERMISSIONS, isBuiltInRole } from '../auth/custom-roles.js';
import { isPermission } from '../auth/rbac.js';
import { sql } from '../db/sql.js';

/**
 * Artifact hydration of a managed source (issue 12): agents from `agent.yaml`/`agent.yml` under
 * `agents_root` and roles from `roles/<role_name>/role.yaml`. Each sync reads the manifests of the
 * working tree, compares them with what the source imported before and answers a plan per type
 * (the preview: `summary`, `changes`, `commit_sha`, `plan_hash`). A malformed manifest is a degraded
 * artifact (`artifact_id`, `reason`) and never fails the sync; what it imported before stays.
 */

/** The source whose artifacts are read, planned and written. */
export type SourceRef = { id: string; tenant: string };

/** The manifests read for a type: the readable ones and the degraded ones. */
export type Manifests<D> = { desired: D[]; degraded: DegradedArtifact[] };

export interface DegradedArtifact {
  artifact_id: string;
  reason: string;
}

export interface PlannedChange {
  action: 'create' | 'update' | 'delete';
  artifact_id: string;
  /** The fields an update changes. */
  fields?: string[];
}

export interface Preview {
  summary: string;
  changes: PlannedChange[];
  commit_sha: string;
  plan_hash: string;
}

export const ArtifactId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'lowercase letters, digits, "_" and "-" (max 64)');
const Text = (max: number) => z.string().trim().min(1).max(max);

const AgentManifest = z.object({
  schema_version: z.literal(1, { error: 'schema_version must be 1' }),
  agent_id: ArtifactId,
  name: Text(100).regex(/^[\p{L}\p{N} _.-]+$/u, 'letters, digits, spaces, "_", "." and "-"'),
  instructions: Text(20_000),
  description: z.string().max(2_000).nullable().optional(),
  llm_provider: z.string().max(100).nullable().optional(),
  default_tool_groups: z.array(z.string().max(100)).max(50).optional(),
  tool_groups: z.array(z.string().max(100)).max(50).optional(),
  default_skill_groups: z.array(z.string().max(100)).max(50).optional(),
  skill_groups: z.array(z.string().max(100)).max(50).optional(),
  access: z
    .object({
      roles: z.array(z.string().min(1).max(100)).max(100).optional(),
      users: z.array(z.string().min(1).max(200)).max(1000).optional(),
    })
    .optional(),
});

const RoleManifest = z.object({
  name: ArtifactId.optional(),
  description: z.string().max(2_000).nullable().optional(),
  permissions: z.array(z.string().max(100)).max(50),
  admin: z.boolean().optional(),
});

/** What an imported agent holds (compared field by field for the plan). */
export interface DesiredAgent {
  agent_id: string;
  name: string;
  description: string | null;
  instructions: string;
  tool_groups: string[];
  access: { roles: string[]; users: string[] };
  llm_provider: string | null;
  skill_groups: string[];
}

export interface DesiredRole {
  role_name: string;
  description: string | null;
  permissions: string[];
}

export const managedAgentId = (sourceId: string, agentId: string) => `msa_${sourceId.slice(4)}_${agentId}`;

export function zodReason(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

/** One manifest file read: the artifact it declares, or why it is degraded; null skips the file. */
export type ManifestRead<T> = { desired: T } | { degraded: DegradedArtifact } | null;

/** A degraded artifact: `artifactId` with the reason it was not imported. */
export const degradedRead = (artifactId: string, reason: string) => ({
  degraded: { artifact_id: artifactId, reason },
});

/** Reads manifest files in path order into the readable artifacts and the degraded ones. */
export async function readManifests<T>(
  files: readonly string[],
  readOne: (file: string) => Promise<ManifestRead<T>>,
): Promise<Manifests<T>> {
  const desired: T[] = [];
  const degraded: DegradedArtifact[] = [];
  for (const file of [...files].sort()) {
    const read = await readOne(file);
    if (read && 'desired' in read) desired.push(read.desired);
    else if (read) degraded.push(read.degraded);
  }
  return { desired, degraded };
}

/**
 * A reader of manifests named by their folder: `pattern`'s first group is the artifact's name (a file
 * it does not match is skipped) and every refusal is a degraded artifact of that name.
 */
export function byFolder<T>(
  pattern: RegExp,
  readOne: (file: string, name: string, refuse: (reason: string) => ManifestRead<T>) => Promise<ManifestRead<T>>,
): (file: string) => Promise<ManifestRead<T>> {
  return async (file) => {
    const name = pattern.exec(file)?.[1];
    return name ? readOne(file, name, (reason) => degradedRead(name, reason)) : null;
  };
}

/** A YAML manifest validated by `schema`, or why not (unreadable, not YAML, invalid). */
export async function readYamlManifest<S extends z.ZodType>(
  workdir: string,
  file: string,
  schema: S,
): Promise<{ ok: true; value: z.output<S> } | { ok: false; reason: string }> {
  const parsed = await readYaml(workdir, file);
  if (!parsed.ok) return parsed;
  const m = schema.safeParse(parsed.value);
  return m.success ? { ok: true, value: m.data } : { ok: false, reason: zodReason(m.error) };
}

export async function readYaml(
  workdir: string,
  rel: string,
): Promise<{ ok: true; value: unknown } | { ok: false; reason: string }> {
  try {
    const text = await readFile(path.join(workdir, ...rel.split('/')), 'utf8');
    const doc = YAML.parseDocument(text);
    if (doc.errors.length) return { ok: false, reason: `invalid YAML: ${doc.errors[0]!.message.split('\n')[0]}` };
    return { ok: true, value: doc.toJS() };
  } catch (err) {
    return { ok: false, reason: `unreadable: ${(err as Error).message}` };
  }
}

/** Reads the agent manifests (paths relative to the working tree); bad ones are degraded artifacts. */
export async function readAgentManifests(workdir: string, files: readonly string[]): Promise<Manifests<DesiredAgent>> {
  const seen = new Map<string, string>();
  return readManifests(files, async (file): Promise<ManifestRead<DesiredAgent>> => {
    const m = await readYamlManifest(workdir, file, AgentManifest);
    if (!m.ok) return degradedRead(file, m.reason);
    const a = m.value;
    const groups = a.default_tool_groups ?? a.tool_groups ?? [];
    const unknown = groups.filter((g) => !isToolGroup(g));
    if (unknown.length)
      return degradedRead(
        a.agent_id,
        `unknown tool group(s) ${unknown.join(', ')}; known groups: ${TOOL_GROUP_NAMES.join(', ')}`,
      );
    if (seen.has(a.agent_id)) return degradedRead(a.agent_id, `agent_id also declared by ${seen.get(a.agent_id)}`);
    seen.set(a.agent_id, file);
    const desired = {
      agent_id: a.agent_id,
      name: a.name,
      description: a.description ?? null,
      instructions: a.instructions,
      tool_groups: [...new Set(groups)],
      access: { roles: a.access?.roles ?? [], users: a.access?.users ?? [] },
      llm_provider: a.llm_provider ?? null,
      skill_groups: [...new Set(a.default_skill_groups ?? a.skill_groups ?? [])],
    };
    return { desired };
  });
}

/** Reads `roles/<role_name>/role.yaml`; a role granting admin-level access is refused (degraded). */
export async function readRoleManifests(workdir: string, files: readonly string[]): Promise<Manifests<DesiredRole>> {
  const seen = new Set<string>();
  const read = byFolder<DesiredRole>(/^roles\/([^/]+)\//, async (file, roleName, refuse) => {
    if (!ArtifactId.safeParse(roleName).success)
      return refuse('role folder name must be lowercase letters, digits, "_" and "-" (max 64)');
    if (seen.has(roleName)) return refuse(`role declared twice (${file})`);
    const m = await readYamlManifest(workdir, file, RoleManifest);
    if (!m.ok) return refuse(m.reason);
    const refusal = roleRefusal(roleName, m.value);
    if (refusal) return refuse(refusal);
    seen.add(roleName);
    const r = m.value;
    return {
      desired: {
        role_name: roleName,
        description: r.description ?? null,
        permissions: [...new Set(r.permissions)].sort(),
      },
    };
  });
  return readManifests(files, read);
}

/** Why a valid role manifest is refused: a name other than its folder, a built-in role, admin-level or unknown permissions. */
function roleRefusal(roleName: string, r: z.output<typeof RoleManifest>): string | null {
  if (r.name !== undefined && r.name !== roleName) return `name ${r.name} differs from its folder ${roleName}`;
  if (isBuiltInRole(roleName))
    return `admin_access_refused: ${roleName} is a built-in role; a role file cannot define or change it`;
  const adminLevel = r.permissions.filter((p) => (ADMIN_LEVEL_PERMISSIONS as readonly string[]).includes(p));
  if (r.admin === true || adminLevel.length)
    return `admin_access_refused: a role file cannot grant admin-level access (${r.admin === true ? 'admin: true' : adminLevel.join(', ')})`;
  const unknown = r.permissions.filter((p) => !isPermission(p));
  if (unknown.length) return `unknown permission(s) ${unknown.join(', ')}`;
  return null;
}

function hashPlan(kind: string, changes: PlannedChange[], content: unknown): string {
  return createHash('sha256').update(JSON.stringify({ kind, changes, content })).digest('hex');
}

function summarize(kind: string, changes: PlannedChange[]): string {
  if (!changes.length) return `No ${kind} changes.`;
  const n = (a: PlannedChange['action']) => changes.filter((c) => c.action === a).length;
  return `${kind}: ${n('create')} to create, ${n('update')} to update, ${n('delete')} to remove.`;
}

/** A managed agent the source imported before: its row id and the fields a manifest sets. */
type CurrentAgent = Omit<DesiredAgent, 'agent_id'> & { id: string };

/** Splits the readable manifests: those `clash` refuses become degraded artifacts, next to the unreadable ones. */
function withoutClashes<D>(
  read: Manifests<D>,
  clash: (d: D) => DegradedArtifact | null,
): { desired: D[]; degraded: DegradedArtifact[] } {
  const degraded = [...read.degraded];
  const desired: D[] = [];
  for (const d of read.desired) {
    const refused = clash(d);
    if (refused) degraded.push(refused);
    else desired.push(d);
  }
  return { desired, degraded };
}

/** A previewed type's plan: only the manifests that change go in, pinned by the preview's hash. */
function previewedPlan<D>(
  kind: 'agents' | 'roles',
  commitSha: string,
  changes: PlannedChange[],
  desired: D[],
  idOf: (d: D) => string,
  remove: string[],
  degraded: DegradedArtifact[],
): { preview: Preview; desired: D[]; remove: string[]; degraded: DegradedArtifact[] } {
  const content = desired.filter((d) => changes.some((c) => c.artifact_id === idOf(d)));
  return {
    preview: {
      summary: summarize(kind === 'agents' ? 'Agents' : 'Roles', changes),
      changes,
      commit_sha: commitSha,
      plan_hash: hashPlan(kind, changes, content),
    },
    desired: content,
    remove,
    degraded,
  };
}

/** A previewed type's plan: the preview, what to write, what to remove (ids or names), the degraded manifests. */
export interface Plan<D> {
  preview: Preview;
  desired: D[];
  /** This source's artifacts of the type to remove. */
  remove: string[];
  degraded: DegradedArtifact[];
}

export type AgentPlan = Plan<DesiredAgent>;

/** Compares the manifests with the source's imported agents; name clashes with other agents are degraded. */
export async function planAgents(
  em: EntityManager,
  source: SourceRef,
  commitSha: string,
  read: Manifests<DesiredAgent>,
): Promise<AgentPlan> {
  const current = await sql<CurrentAgent>(
    em,
    `select id, name, description, instructions, tool_groups, access, llm_provider, skill_groups from agents where managed_source_id = ? and tenant = ?`,
    [source.id, source.tenant],
  );
  const others = await sql<{ name: string }>(
    em,
    `select name from agents where tenant = ? and (managed_source_id is null or managed_source_id <> ?)`,
    [source.tenant, source.id],
  );
  const taken = new Set(others.map((o) => o.name.toLowerCase()));
  const { desired, degraded } = withoutClashes(read, (d) =>
    taken.has(d.name.toLowerCase())
      ? { artifact_id: d.agent_id, reason: `an agent named ${d.name} already exists` }
      : null,
  );
  const byId = new Map(current.map((c) => [c.id, c]));
  const changes: PlannedChange[] = [];
  for (const d of desired) {
    const cur = byId.get(managedAgentId(source.id, d.agent_id));
    if (!cur) {
      changes.push({ action: 'create', artifact_id: d.agent_id });
      continue;
    }
    const fields: string[] = [];
    if (cur.name !== d.name) fields.push('name');
    if ((cur.description ?? null) !== d.description) fields.push('description');
    if (cur.instructions !== d.instructions) fields.push('instructions');
    if (JSON.stringify(cur.tool_groups) !== JSON.stringify(d.tool_groups)) fields.push('tool_groups');
    if (JSON.stringify(cur.access) !== JSON.stringify(d.access)) fields.push('access');
    if ((cur.llm_provider ?? null) !== d.llm_provider) fields.push('llm_provider');
    if (JSON.stringify(cur.skill_groups ?? []) !== JSON.stringify(d.skill_groups)) fields.push('skill_groups');
    if (fields.length) changes.push({ action: 'update', artifact_id: d.agent_id, fields });
  }
  // A degraded manifest keeps what it imported before; only agents no longer declared go.
  const keep = new Set([...desired.map((d) => d.agent_id), ...degraded.map((d) => d.artifact_id)]);
  const remove: string[] = [];
  for (const c of current) {
    const agentId = c.id.slice(managedAgentId(source.id, '').length);
    if (!keep.has(agentId)) {
      changes.push({ action: 'delete', artifact_id: agentId });
      remove.push(c.id);
    }
  }
  return previewedPlan('agents', commitSha, changes, desired, (d) => d.agent_id, remove, degraded);
}

/** Writes a plan: every desired artifact upserted in order, then the removed ones; answers the changes applied. */
async function writePlan<D>(
  plan: Plan<D>,
  upsert: (d: D) => Promise<unknown>,
  remove: (ids: string[]) => Promise<unknown>,
): Promise<number> {
  for (const d of plan.desired) await upsert(d);
  if (plan.remove.length) await remove(plan.remove);
  return plan.preview.changes.length;
}

/** Writes the agent plan: imported agents are managed, not editable, and carry their tool groups. */
export function applyAgents(em: EntityManager, source: SourceRef, plan: AgentPlan, now = new Date()) {
  const upsert = (d: DesiredAgent) =>
    sql(
      em,
      `insert into agents (id, tenant, name, description, instructions, tool_groups, access, source, is_editable, created_by, created_at, updated_at, managed_source_id, llm_provider, skill_groups)
       values (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, 'managed', false, ?, ?, ?, ?, ?, ?::jsonb)
       on conflict (id) do update set name = excluded.name, description = excluded.description,
         instructions = excluded.instructions, tool_groups = excluded.tool_groups, access = excluded.access,
         llm_provider = excluded.llm_provider, skill_groups = excluded.skill_groups,
         updated_at = excluded.updated_at`,
      [
        managedAgentId(source.id, d.agent_id),
        source.tenant,
        d.name,
        d.description,
        d.instructions,
        JSON.stringify(d.tool_groups),
        JSON.stringify(d.access),
        `managed-source:${source.id}`,
        now,
        now,
        source.id,
        d.llm_provider,
        JSON.stringify(d.skill_groups),
      ],
    );
  const remove = (ids: string[]) =>
    sql(em, `delete from agents where managed_source_id = ? and id in (${ids.map(() => '?').join(', ')})`, [
      source.id,
      ...ids,
    ]);
  return writePlan(plan, upsert, remove);
}

export type RolePlan = Plan<DesiredRole>;

export async function planRoles(
  em: EntityManager,
  source: SourceRef,
  commitSha: string,
  read: Manifests<DesiredRole>,
): Promise<RolePlan> {
  const rows = await sql<{
    name: string;
    description: string | null;
    permissions: string[];
    managed_source_id: string | null;
  }>(em, 'select name, description, permissions, managed_source_id from custom_roles where tenant = ?', [
    source.tenant,
  ]);
  const mine = new Map(rows.filter((r) => r.managed_source_id === source.id).map((r) => [r.name, r]));
  const foreign = new Set(rows.filter((r) => r.managed_source_id !== source.id).map((r) => r.name));
  const { desired, degraded } = withoutClashes(read, (d) =>
    foreign.has(d.role_name)
      ? { artifact_id: d.role_name, reason: `role ${d.role_name} is defined by another source` }
      : null,
  );
  const changes: PlannedChange[] = [];
  for (const d of desired) {
    const cur = mine.get(d.role_name);
    if (!cur) {
      changes.push({ action: 'create', artifact_id: d.role_name });
      continue;
    }
    const fields: string[] = [];
    if ((cur.description ?? null) !== d.description) fields.push('description');
    if (JSON.stringify([...cur.permissions].sort()) !== JSON.stringify(d.permissions)) fields.push('permissions');
    if (fields.length) changes.push({ action: 'update', artifact_id: d.role_name, fields });
  }
  const keep = new Set([...desired.map((d) => d.role_name), ...degraded.map((d) => d.artifact_id)]);
  const remove = [...mine.keys()].filter((name) => !keep.has(name));
  for (const name of remove) changes.push({ action: 'delete', artifact_id: name });
  return previewedPlan('roles', commitSha, changes, desired, (d) => d.role_name, remove, degraded);
}

/** Writes the role plan: roles of the source's tenant, owned by the source (another's role of that name stays). */
export function applyRoles(em: EntityManager, source: SourceRef, plan: RolePlan, now = new Date()) {
  const upsert = (d: DesiredRole) =>
    sql(
      em,
      `insert into custom_roles (tenant, name, description, permissions, managed_source_id, created_at, updated_at)
       values (?, ?, ?, ?::jsonb, ?, ?, ?)
       on conflict (tenant, name) do update set description = excluded.description, permissions = excluded.permissions,
         updated_at = excluded.updated_at where custom_roles.managed_source_id = excluded.managed_source_id`,
      [source.tenant, d.role_name, d.description, JSON.stringify(d.permissions), source.id, now, now],
    );
  const remove = (names: string[]) =>
    sql(
      em,
      `delete from custom_roles where tenant = ? and managed_source_id = ? and name in (${names.map(() => '?').join(', ')})`,
      [source.tenant, source.id, ...names],
    );
  return writePlan(plan, upsert, remove);
}

/** Removes everything a source imported (deletion cleanup); idempotent. */
export async function removeSourceArtifacts(
  em: EntityManager,
  source: SourceRef,
): Promise<{ agents: number; roles: number }> {
  return em.transactional(async (tx) => {
    const agents = await sql<{ id: string }>(
      tx,
      'delete from agents where managed_source_id = ? and tenant = ? returning id',
      [source.id, source.tenant],
    );
    const roles = await sql<{ name: string }>(
      tx,
      'delete from custom_roles where managed_source_id = ? and tenant = ? returning name',
      [source.id, source.tenant],
    );
    await sql(tx, 'delete from managed_apps where source_id = ? and tenant = ?', [source.id, source.tenant]);
    await sql(tx, 'delete from agent_skill_packages where managed_source_id = ? and tenant = ?', [
      source.id,
      source.tenant,
    ]);
    return { agents: agents.length, roles: roles.length };
  });
}
