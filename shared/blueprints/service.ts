/**
 * Blueprint operations shared by the routes (and later the `blueprints` tool): views, authoring,
 * grants, export and import. Every write to one blueprint runs in a transaction holding the
 * blueprint's advisory lock (`lockBlueprint`) and ends in one commit authored by the acting user.
 */
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import {
  customWithFlags,
  flagsFor,
  grantsOf,
  isConfiguredRole,
  requireAccess,
  type AccessFlags,
  type BlueprintAction,
} from './access.js';
import { DEFAULT_BLUEPRINTS, findDefault } from './defaults.js';
import {
  EXPORT_MANIFEST_FILE,
  isSafeRelativePath,
  MANIFEST_FILE,
  resolveOwner,
  serializeManifest,
  type BlueprintManifest,
  type BlueprintPhase,
} from './manifest.js';
import {
  commitAll,
  findRow,
  findRowById,
  headCommit,
  history,
  identityOf,
  initRepository,
  initRepositoryFromSources,
  insertRow,
  commitBlobs,
  listRows,
  listWorkingFiles,
  lockBlueprint,
  lockLiveBlueprint,
  missionCount,
  newBlueprintId,
  readManifestAt,
  readWorkingFile,
  repoDir,
  resolveBlueprint,
  touchRow,
  writeWorkingFiles,
  writeWorkingSources,
  type SourceFile,
  type Resolved,
} from './store.js';
import {
  closeArchive,
  InvalidArchiveError,
  readArchive,
  readMember,
  verifyMembers,
  type ImportArchive,
} from './import-archive.js';
import { zipStream, type ZipSource } from './zip-write.js';
import { dropOrphanBlobs, versionedIds, versioningOf, type LazyFile } from './versions.js';
import { refuseActiveWip } from './wip.js';
import { importVersion, versioningSidecar, type VersionRestorer } from './versioning.js';
import { isRemote, refuseRemote, type PendingRename } from './remote.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import { sql } from '../db/sql.js';
import { BlueprintCodes } from './error-codes.js';

export { closeArchive, InvalidArchiveError, readArchive, type ImportArchive };

export interface Ctx {
  em: EntityManager;
  principal: Principal;
  root: string;
  /** This process's saved-version restore pass (versioned mode answers 503 until it reached a blueprint). */
  restorer?: VersionRestorer;
}

export async function accessOf(ctx: Ctx, b: Resolved): Promise<AccessFlags> {
  const grants = b.kind === 'custom' ? await grantsOf(ctx.em, [b.row.blueprint_id]) : [];
  return flagsFor(ctx.principal, b, grants);
}

/** Resolves a blueprint, pins its identity when `blueprintId` is given, and checks `action`. */
export async function open(
  ctx: Ctx,
  name: string,
  action: BlueprintAction,
  blueprintId?: string,
  missionId?: string,
): Promise<{ b: Resolved; flags: AccessFlags }> {
  const b = await resolveBlueprint(ctx.em, ctx.root, ctx.principal.tenant, name);
  // A hidden blueprint (deleted while missions referenced it) is gone for the blueprint routes; only a
  // read naming one of its missions (`mission_id`) still reaches it.
  if (b.kind === 'custom' && b.row.hidden) {
    const forMission =
      action === 'view' && !!missionId && (await missionReferences(ctx, missionId, b.row.blueprint_id));
    if (!forMission) throw new NotFoundError(`No blueprint named "${name}".`, { blueprint_name: name });
  }
  const flags = await accessOf(ctx, b);
  requireAccess(flags, 'view', name);
  if (blueprintId !== undefined && blueprintId !== identityOf(b)) {
    throw new ConflictError(`Blueprint "${name}" is not the blueprint ${blueprintId} (it was renamed or replaced).`, {
      code: BlueprintCodes.BLUEPRINT_IDENTITY_MISMATCH,
      blueprint_name: name,
      requested_blueprint_id: blueprintId,
      blueprint_id: identityOf(b),
    });
  }
  if (b.kind === 'default' && action !== 'view') refuseDefault(name, 'changed');
  requireAccess(flags, action, name);
  return { b, flags };
}

async function missionReferences(ctx: Ctx, missionId: string, blueprintId: string): Promise<boolean> {
  const rows = await sql<{ id: string }>(
    ctx.em,
    `select id from projects where id = ? and tenant = ? and blueprint_id = ?`,
    [missionId, ctx.principal.tenant, blueprintId],
  );
  return rows.length > 0;
}

function originOf(b: Resolved) {
  if (isRemote(b))
    return {
      source_type: 'managed_source' as const,
      created_by_user_id: resolveOwner(b.manifest),
      source_id: b.row.source_id!,
      repo_path: b.row.source_path ?? '',
      commit_sha: b.row.source_commit ?? null,
    };
  return (
    b.manifest.origin ?? {
      source_type: b.kind === 'default' ? ('builtin' as const) : ('local' as const),
      created_by_user_id: resolveOwner(b.manifest),
    }
  );
}

function sourceView(b: Resolved) {
  if (isRemote(b))
    return {
      source_type: 'managed_source' as const,
      source_id: b.row.source_id!,
      repo_id: b.row.source_id!,
      path: b.row.source_path ?? null,
      commit_sha: b.row.source_commit ?? null,
      read_only: true,
    };
  return {
    source_type: b.kind === 'default' ? ('builtin' as const) : ('local' as const),
    source_id: null,
    repo_id: null,
    path: b.kind === 'default' ? null : '.',
    read_only: b.kind === 'default',
  };
}

export function summaryOf(b: Resolved, flags: AccessFlags, versioned = false) {
  return {
    blueprint_name: b.manifest.name,
    blueprint_id: identityOf(b),
    short_description: b.manifest.blueprint.short_description,
    default_mode: b.manifest.blueprint.default_mode,
    is_default: b.kind === 'default',
    mode: versioned ? ('versioned' as const) : ('standard' as const),
    owner: b.kind === 'default' ? null : (resolveOwner(b.manifest) ?? b.row.created_by),
    phase_count: b.manifest.phases.length,
    origin: originOf(b),
    access: flags,
  };
}

export async function inventory(ctx: Ctx) {
  const rows = await listRows(ctx.em, ctx.principal.tenant);
  const versioned = await versionedIds(
    ctx.em,
    rows.map((r) => r.blueprint_id),
  );
  const out: ReturnType<typeof summaryOf>[] = [];
  for (const d of DEFAULT_BLUEPRINTS) {
    if (d.manifest.hidden || rows.some((r) => r.name === d.manifest.name)) continue;
    const b: Resolved = { kind: 'default', def: d, manifest: d.manifest };
    out.push(summaryOf(b, flagsFor(ctx.principal, b, [])));
  }
  for (const { b, flags } of await customWithFlags(ctx, rows))
    if (flags.can_view && !b.manifest.hidden) out.push(summaryOf(b, flags, versioned.has(b.row.blueprint_id)));
  return out.sort((a, b) => a.blueprint_name.localeCompare(b.blueprint_name));
}

export async function detail(ctx: Ctx, b: Resolved, flags: AccessFlags) {
  const files =
    b.kind === 'custom' ? await listWorkingFiles(b.dir) : [MANIFEST_FILE, ...Object.keys(b.def.files)].sort();
  const missing = new Set<string>();
  const phases = b.manifest.phases.map((p: BlueprintPhase) => {
    const refs = [...p.files, ...p.prompts.flatMap((x) => ('file' in x ? [x.file] : []))];
    const absent = refs.filter((f) => !files.includes(f));
    absent.forEach((f) => missing.add(f));
    return { ...p, missing_files: absent };
  });
  const versioned = b.kind === 'custom' && !!(await versioningOf(ctx.em, b.row.blueprint_id));
  return {
    ...summaryOf(b, flags, versioned),
    hidden: b.manifest.hidden,
    manifest: b.manifest,
    phases,
    files,
    missing_files: [...missing].sort(),
    source_selection: {
      source_type: isRemote(b)
        ? ('managed_source' as const)
        : b.kind === 'default'
          ? ('builtin' as const)
          : ('local' as const),
      selected: 'working_copy' as const,
      editable: flags.can_edit && !isRemote(b),
    },
    pending_rename: b.kind === 'custom' ? ((b.row.pending_rename as PendingRename | null | undefined) ?? null) : null,
    blueprint: {
      short_description: b.manifest.blueprint.short_description,
      default_mode: b.manifest.blueprint.default_mode,
      created_by: b.kind === 'default' ? null : resolveOwner(b.manifest),
      origin: originOf(b),
      source_view: sourceView(b),
    },
    updated_at: b.kind === 'custom' ? new Date(b.row.updated_at).toISOString() : null,
  };
}

export async function fileBytes(b: Resolved, filePath: string): Promise<Buffer> {
  if (!isSafeRelativePath(filePath))
    throw new BadRequestError('file_path must be a relative path inside the blueprint (no "..", no leading "/").', {
      fields: [{ field: 'params.file_path', message: 'outside the blueprint', code: BlueprintCodes.path_traversal }],
    });
  let bytes: Buffer | null = null;
  if (b.kind === 'custom') bytes = await readWorkingFile(b.dir, filePath);
  else if (filePath === MANIFEST_FILE) bytes = Buffer.from(serializeManifest(b.manifest));
  else if (Object.hasOwn(b.def.files, filePath)) bytes = Buffer.from(b.def.files[filePath]!);
  if (!bytes)
    throw new NotFoundError(`Blueprint "${b.manifest.name}" has no file "${filePath}".`, { file_path: filePath });
  return bytes;
}

export async function historyOf(b: Resolved, limit: number) {
  return b.kind === 'custom' ? history(b.dir, limit) : [];
}

function refuseDefault(name: string, what: string): never {
  throw new ConflictError(`"${name}" is a built-in default blueprint; it cannot be ${what}.`, {
    code: BlueprintCodes.DEFAULT_BLUEPRINT,
    blueprint_name: name,
  });
}

function refuseTakenName(name: string): never {
  throw new ConflictError(`A blueprint named "${name}" already exists.`, {
    code: BlueprintCodes.BLUEPRINT_NAME_TAKEN,
    blueprint_name: name,
  });
}

export interface CreateInput {
  name: string;
  short_description?: string;
  default_mode?: 'interactive' | 'autonomous';
  phases?: BlueprintPhase[];
}

export async function create(ctx: Ctx, input: CreateInput) {
  if (findDefault(input.name)) refuseTakenName(input.name);
  const id = newBlueprintId();
  const manifest: BlueprintManifest = {
    schema_version: 1,
    name: input.name,
    created_by: ctx.principal.id,
    hidden: false,
    blueprint: { short_description: input.short_description ?? '', default_mode: input.default_mode ?? 'interactive' },
    origin: { source_type: 'local', created_by_user_id: ctx.principal.id },
    phases: input.phases ?? [],
  };
  const dir = repoDir(ctx.root, ctx.principal.tenant, id);
  await ctx.em.transactional(async (tx) => {
    await lockBlueprint(tx, `${ctx.principal.tenant}:${input.name}`);
    await insertRow(tx, {
      blueprint_id: id,
      tenant: ctx.principal.tenant,
      name: input.name,
      created_by: ctx.principal.id,
    });
    await initRepository(
      dir,
      ctx.principal,
      new Map([[MANIFEST_FILE, serializeManifest(manifest)]]),
      `Create blueprint ${input.name}`,
    );
  });
  return resolveBlueprint(ctx.em, ctx.root, ctx.principal.tenant, input.name);
}

/** Runs `fn` on the current working copy under the blueprint's lock; answers the commit (null when unchanged). */
async function writeLocked(
  ctx: Ctx,
  b: Extract<Resolved, { kind: 'custom' }>,
  message: string,
  fn: (tx: EntityManager, manifest: BlueprintManifest) => Promise<void>,
): Promise<string | null> {
  return ctx.em.transactional(async (tx) => {
    await lockLiveBlueprint(tx, { row: b.row, name: b.manifest.name });
    const current = await readManifestAt(b.dir);
    await fn(tx, current);
    const oid = await commitAll(b.dir, ctx.principal, message);
    if (oid) await touchRow(tx, b.row.blueprint_id);
    return oid;
  });
}

export async function update(ctx: Ctx, b: Resolved, input: { short_description?: string; phases?: BlueprintPhase[] }) {
  if (b.kind === 'default') refuseDefault(b.manifest.name, 'edited');
  refuseRemote(b, 'edited');
  const changed = [
    ...(input.short_description !== undefined ? ['short_description'] : []),
    ...(input.phases !== undefined ? ['phases'] : []),
  ];
  const commit = await writeLocked(
    ctx,
    b,
    `Update ${changed.join(' and ') || 'nothing'} of ${b.manifest.name}`,
    async (_tx, m) => {
      if (input.short_description !== undefined) m.blueprint.short_description = input.short_description;
      if (input.phases !== undefined) m.phases = input.phases;
      await writeWorkingFiles(b.dir, new Map([[MANIFEST_FILE, serializeManifest(m)]]), false);
    },
  );
  return commit;
}

export async function rename(ctx: Ctx, b: Resolved, newName: string) {
  if (b.kind === 'default') refuseDefault(b.manifest.name, 'renamed');
  if (newName === b.manifest.name) return null;
  if (findDefault(newName)) refuseTakenName(newName);
  return writeLocked(ctx, b, `Rename blueprint ${b.manifest.name} to ${newName}`, async (tx, m) => {
    const active = await missionCount(tx, b.row.blueprint_id, true);
    if (active > 0)
      throw new ConflictError(
        `Blueprint "${b.manifest.name}" has ${active} in-flight mission(s) (running or paused); rename it once they have finished or been cancelled.`,
        {
          code: BlueprintCodes.BLUEPRINT_HAS_ACTIVE_MISSIONS,
          blueprint_name: b.manifest.name,
          active_missions: active,
        },
      );
    await refuseActiveWip(tx, { blueprint_id: b.row.blueprint_id, name: b.manifest.name }, 'rename it');
    const taken = await findRow(tx, ctx.principal.tenant, newName);
    if (taken) refuseTakenName(newName);
    // Grants, history and the repository are keyed by blueprint_id: only the name moves.
    // A create of the same name may commit between the check above and this update: the unique
    // (tenant, name) constraint then decides, and the loser gets the same 409 as the check.
    try {
      await sql(tx, `update blueprints set name = ? where blueprint_id = ?`, [newName, b.row.blueprint_id]);
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException || (err as { code?: string }).code === '23505')
        refuseTakenName(newName);
      throw err;
    }
    m.name = newName;
    await writeWorkingFiles(b.dir, new Map([[MANIFEST_FILE, serializeManifest(m)]]), false);
  });
}

/**
 * Deletes a custom blueprint; one that missions reference (any status) is hidden instead (`hidden` on
 * its row: out of the inventory and the wizard, 404 on the blueprint routes, its name stays taken, and
 * its missions still resolve it).
 */
export async function remove(ctx: Ctx, b: Resolved): Promise<{ outcome: 'deleted' | 'hidden'; missions: number }> {
  if (b.kind === 'default') refuseDefault(b.manifest.name, 'deleted');
  refuseRemote(b, 'deleted');
  return ctx.em.transactional(async (tx) => {
    await lockLiveBlueprint(tx, { row: b.row, name: b.manifest.name });
    const missions = await missionCount(tx, b.row.blueprint_id, false);
    if (missions > 0) {
      await sql(tx, `update blueprints set hidden = true, updated_at = now() where blueprint_id = ?`, [
        b.row.blueprint_id,
      ]);
      return { outcome: 'hidden' as const, missions };
    }
    // Versions, promotion history and the production assignment go with the row (cascade); then the
    // blobs no other blueprint's version uses.
    await sql(tx, `delete from blueprints where blueprint_id = ?`, [b.row.blueprint_id]);
    await dropOrphanBlobs(tx);
    await rm(b.dir, { recursive: true, force: true });
    return { outcome: 'deleted' as const, missions: 0 };
  });
}

export async function accessList(ctx: Ctx, b: Resolved) {
  const grants = b.kind === 'custom' ? await grantsOf(ctx.em, [b.row.blueprint_id]) : [];
  return {
    blueprint_name: b.manifest.name,
    blueprint_id: identityOf(b),
    owner: b.kind === 'default' ? null : resolveOwner(b.manifest),
    grants: grants.map((g) => ({
      role_name: g.role_name,
      action: g.action,
      subject: `blueprint:${b.manifest.name}`,
      granted_by: g.granted_by,
      granted_at: new Date(g.granted_at).toISOString(),
    })),
  };
}

export async function grant(ctx: Ctx, b: Resolved, roleName: string, action: BlueprintAction, add: boolean) {
  if (b.kind === 'default') refuseDefault(b.manifest.name, 'shared or restricted');
  if (add && !(await isConfiguredRole(ctx.em, ctx.principal.tenant, roleName))) {
    throw new BadRequestError(`"${roleName}" is not a configured role.`, {
      fields: [{ field: 'body.role_name', message: 'not a configured role', code: BlueprintCodes.unknown_role }],
    });
  }
  await ctx.em.transactional(async (tx) => {
    await lockLiveBlueprint(tx, { row: b.row, name: b.manifest.name });
    if (add)
      await sql(
        tx,
        `insert into blueprint_grants (blueprint_id, role_name, action, granted_by) values (?, ?, ?, ?) on conflict do nothing`,
        [b.row.blueprint_id, roleName, action, ctx.principal.id],
      );
    else
      await sql(tx, `delete from blueprint_grants where blueprint_id = ? and role_name = ? and action = ?`, [
        b.row.blueprint_id,
        roleName,
        action,
      ]);
  });
  return accessList(ctx, b);
}

// ---- export ----

export async function exportZip(ctx: Ctx, b: Resolved) {
  if (b.kind === 'default') refuseDefault(b.manifest.name, 'exported');
  // The lock only pins the commit: every write ends in a commit, so the commit is the working copy, and
  // its blobs never change. Files are then read one at a time from the object store while the client
  // consumes the archive, without holding the lock or the archive in memory.
  const { commit, versioning } = await ctx.em.transactional(async (tx) => {
    await lockLiveBlueprint(tx, { row: b.row, name: b.manifest.name });
    return { commit: await headCommit(b.dir), versioning: await versioningBlock(tx, b) };
  });
  const blobs = commitBlobs(b.dir, commit);
  // The fingerprint (same definition as `workingCopyFingerprint`) is summed as the files stream, in
  // order; the sidecar is the last member, read once every file has passed.
  const fingerprint = createHash('sha256');
  const entries: ZipSource[] = blobs.files.map((f) => ({
    path: f,
    read: () => {
      const data = blobs.read(f);
      fingerprint.update(`${f}\0${createHash('sha256').update(data.content).digest('hex')}\n`);
      return data;
    },
  }));
  entries.push({
    path: EXPORT_MANIFEST_FILE,
    read: () => ({
      content: Buffer.from(serializeYaml({ ...exportSidecar(b, fingerprint.digest('hex')), ...versioning })),
    }),
  });
  const stream = zipStream(entries);
  // The pack files stay open while the archive streams; a client that leaves early closes them too.
  stream.once('close', () => blobs.close());
  return { stream, filename: `${b.manifest.name}.zip`, commit };
}

/** The sidecar `blueprint_export_manifest.yaml` of an export (one place builds it; `versioningBlock` adds to it). */
export function exportSidecar(b: Extract<Resolved, { kind: 'custom' }>, fingerprint: string) {
  return {
    manifest_version: 2,
    blueprint_name: b.manifest.name,
    blueprint_id: b.row.blueprint_id,
    source_identity: { source_type: 'local', source_id: null, repo_id: null, path: '.' },
    working_copy_fingerprint: fingerprint,
  };
}

/** The sidecar's `versioning` block for a versioned blueprint (`shared/blueprints/versioning.ts`), else nothing. */
async function versioningBlock(tx: EntityManager, b: Extract<Resolved, { kind: 'custom' }>) {
  const versioning = await versioningSidecar(tx, b);
  return versioning ? { versioning } : {};
}

function serializeYaml(v: unknown): string {
  return serializeManifest(v as BlueprintManifest);
}

// ---- import ----

export type Strategy = 'create_copy' | 'create_version' | 'replace';

interface Target {
  b: Resolved;
  flags: AccessFlags;
  match: 'blueprint_id' | 'name';
}

async function matchTarget(ctx: Ctx, a: ImportArchive): Promise<Target | null> {
  let b: Resolved | null = null;
  let match: Target['match'] = 'name';
  if (a.blueprintId) {
    const row = await findRowById(ctx.em, ctx.principal.tenant, a.blueprintId);
    if (row && !row.hidden) {
      b = await resolveBlueprint(ctx.em, ctx.root, ctx.principal.tenant, row.name);
      match = 'blueprint_id';
    }
  } else {
    const row = await findRow(ctx.em, ctx.principal.tenant, a.manifest.name);
    if (row && !row.hidden) b = await resolveBlueprint(ctx.em, ctx.root, ctx.principal.tenant, row.name);
  }
  if (!b && findDefault(a.manifest.name))
    b = await resolveBlueprint(ctx.em, ctx.root, ctx.principal.tenant, a.manifest.name);
  if (!b) return null;
  const flags = await accessOf(ctx, b);
  if (!flags.can_view) return null;
  return { b, flags, match };
}

export async function preview(ctx: Ctx, a: ImportArchive) {
  const target = await matchTarget(ctx, a);
  const nameTaken = !!findDefault(a.manifest.name) || !!(await findRow(ctx.em, ctx.principal.tenant, a.manifest.name));
  const editable = !!target && target.b.kind === 'custom' && target.flags.can_edit;
  const versioned = !!target && target.b.kind === 'custom' && !!(await versioningOf(ctx.em, target.b.row.blueprint_id));
  const allowed: Strategy[] = ['create_copy'];
  if (editable && versioned) allowed.push('create_version');
  if (editable) allowed.push('replace');
  return {
    valid: true,
    message: target
      ? `Matches local blueprint "${target.b.manifest.name}" by ${target.match === 'blueprint_id' ? 'blueprint_id' : 'name'}.`
      : nameTaken
        ? `The name "${a.manifest.name}" is taken: a copy gets a suffixed name.`
        : `Imports as a new blueprint "${a.manifest.name}".`,
    blueprint_name: a.manifest.name,
    blueprint_id: a.blueprintId,
    manifest_version: a.manifestVersion,
    legacy_export: a.legacy,
    file_count: a.files.length,
    matching_local_target: target
      ? {
          blueprint_name: target.b.manifest.name,
          blueprint_id: identityOf(target.b),
          matched_by: target.match,
          is_default: target.b.kind === 'default',
          can_edit: target.b.kind === 'custom' && target.flags.can_edit,
          mode: versioned ? ('versioned' as const) : ('standard' as const),
        }
      : null,
    allowed_collision_strategies: allowed,
    recommended_strategy: editable
      ? versioned
        ? ('create_version' as const)
        : ('replace' as const)
      : ('create_copy' as const),
  };
}

async function freeName(ctx: Ctx, base: string): Promise<string> {
  for (let i = 1; i < 1000; i++) {
    const suffix = i === 1 ? '-copy' : `-copy-${i}`;
    const candidate = `${base.slice(0, 63 - suffix.length)}${suffix}`;
    if (!findDefault(candidate) && !(await findRow(ctx.em, ctx.principal.tenant, candidate))) return candidate;
  }
  throw new ConflictError(`No free name for a copy of "${base}".`, { code: BlueprintCodes.BLUEPRINT_NAME_TAKEN });
}

/**
 * The archive's files with `manifest` in place of its own, each read from the upload only when it is
 * written (fingerprint, Git blob, stored blob, working file): one member's bytes in memory at a time.
 */
function archiveSources(a: ImportArchive, manifest: BlueprintManifest): SourceFile[] {
  const files: SourceFile[] = [...a.members.values()]
    .filter((m) => m.name !== MANIFEST_FILE)
    .map((m) => ({ path: m.name, read: () => readMember(a, m) }));
  const text = Buffer.from(serializeManifest(manifest));
  files.push({ path: MANIFEST_FILE, read: () => ({ content: text }) });
  return files;
}

/** The same files for `create_version` (`LazyFile`s), after every member was checked. */
async function archiveFiles(a: ImportArchive, manifest: BlueprintManifest): Promise<LazyFile[]> {
  await verifyMembers(a);
  return archiveSources(a, manifest).map((f) => ({
    path: f.path,
    read: async () => {
      const { content } = f.read();
      return typeof content === 'string' ? Buffer.from(content) : content;
    },
  }));
}

/** The archive's manifest as written into an existing blueprint: its name, created_by and origin stay. */
function destinationManifest(a: ImportArchive, current: BlueprintManifest): BlueprintManifest {
  const manifest: BlueprintManifest = {
    ...a.manifest,
    name: current.name,
    hidden: current.hidden,
    created_by: current.created_by,
    blueprint: { ...a.manifest.blueprint, created_by: current.blueprint.created_by },
    origin: current.origin,
  };
  if (manifest.created_by === undefined) delete manifest.created_by;
  if (manifest.blueprint.created_by === undefined) delete manifest.blueprint.created_by;
  if (manifest.origin === undefined) delete manifest.origin;
  return manifest;
}

export interface ImportOptions {
  strategy: Strategy;
  promote: boolean;
  confirmLegacy: boolean;
}

export async function runImport(ctx: Ctx, a: ImportArchive, opts: ImportOptions) {
  const base = {
    created_version_number: null,
    created_version_id: null,
    promoted: false,
    no_change: false,
    overrode_existing: false,
  };
  if (opts.promote && opts.strategy !== 'create_version') {
    throw new BadRequestError('promote_imported_version applies only with collision_strategy create_version.', {
      fields: [
        {
          field: 'body.promote_imported_version',
          message: 'only with create_version',
          code: BlueprintCodes.invalid_combination,
        },
      ],
    });
  }
  if (opts.strategy === 'create_copy') {
    const archiveOwner = resolveOwner(a.manifest);
    const nameTaken =
      !!findDefault(a.manifest.name) || !!(await findRow(ctx.em, ctx.principal.tenant, a.manifest.name));
    const name = nameTaken ? await freeName(ctx, a.manifest.name) : a.manifest.name;
    const id = newBlueprintId();
    const manifest: BlueprintManifest = {
      ...a.manifest,
      name,
      hidden: false,
      created_by: ctx.principal.id,
      blueprint: { ...a.manifest.blueprint, created_by: undefined },
      origin: {
        source_type: 'import',
        created_by_user_id: archiveOwner,
        imported_at: new Date().toISOString(),
        imported_by_user_id: ctx.principal.id,
        source_blueprint_id: a.blueprintId,
      },
    };
    delete (manifest.blueprint as { created_by?: string }).created_by;
    const dir = repoDir(ctx.root, ctx.principal.tenant, id);
    await ctx.em.transactional(async (tx) => {
      await lockBlueprint(tx, `${ctx.principal.tenant}:${name}`);
      await insertRow(tx, { blueprint_id: id, tenant: ctx.principal.tenant, name, created_by: ctx.principal.id });
      await initRepositoryFromSources(
        dir,
        ctx.principal,
        archiveSources(a, manifest),
        `Import blueprint ${name} from a ZIP archive`,
      );
    });
    return {
      ...base,
      import_action: 'created' as const,
      blueprint_name: name,
      blueprint_id: id,
      message: nameTaken ? `Imported as "${name}" ("${a.manifest.name}" exists).` : `Imported as "${name}".`,
    };
  }

  // create_version and replace write into an existing local blueprint.
  if (a.legacy && opts.strategy === 'create_version' && !opts.confirmLegacy) {
    throw new ConflictError(
      'This archive is a legacy export without blueprint_id: confirm that it is the local blueprint of the same name (confirm_legacy_name_match).',
      {
        code: BlueprintCodes.LEGACY_BLUEPRINT_CONFIRMATION_REQUIRED,
        blueprint_name: a.manifest.name,
        legacy_export: true,
      },
    );
  }
  const target = await matchTarget(ctx, a);
  if (!target || target.b.kind === 'default' || !target.flags.can_edit) {
    if (opts.strategy === 'create_version') {
      throw new ConflictError(
        target?.b.kind === 'default'
          ? `"${a.manifest.name}" is a built-in default blueprint; versions cannot be imported into it.`
          : 'No single editable local blueprint matches this archive.',
        {
          code: BlueprintCodes.BLUEPRINT_VERSION_TARGET_NOT_UNIQUE,
          blueprint_name: a.manifest.name,
          blueprint_id: a.blueprintId,
        },
      );
    }
    if (target?.b.kind === 'default') refuseDefault(a.manifest.name, 'replaced');
    if (target) requireAccess(target.flags, 'edit', target.b.manifest.name);
    throw new NotFoundError(`No local blueprint matches this archive; import it with create_copy.`, {
      blueprint_name: a.manifest.name,
      blueprint_id: a.blueprintId,
    });
  }
  const b = target.b;
  refuseRemote(b, 'replaced or given an imported version');
  if (opts.strategy === 'create_version') {
    // A standard destination is refused (409 BLUEPRINT_NOT_VERSIONED): enabling versioned mode needs
    // manage access and is a decision of its own (POST .../versioning/enable).
    const r = await importVersion(
      ctx,
      b,
      target.flags,
      await archiveFiles(a, destinationManifest(a, b.manifest)),
      opts.promote,
    );
    return {
      ...base,
      import_action: 'version_created' as const,
      blueprint_name: b.manifest.name,
      blueprint_id: b.row.blueprint_id,
      created_version_number: r.no_change ? null : r.version.number,
      created_version_id: r.no_change ? null : r.version.version_id,
      promoted: r.promoted,
      no_change: r.no_change,
      message: r.no_change
        ? `The archive matches saved version ${r.version.number} of "${b.manifest.name}"; no version was added.${r.promoted ? ' It is production.' : ''}`
        : `Added version ${r.version.number} to "${b.manifest.name}"${r.promoted ? ' and promoted it to production' : ''}.`,
    };
  }
  // replace: only the working copy changes; destination name, identity, created_by and origin stay.
  await verifyMembers(a); // before the working copy changes: a bad member refuses the import with nothing written
  const commit = await writeLocked(
    ctx,
    b,
    `Replace the working copy of ${b.manifest.name} from a ZIP archive`,
    async (_tx, current) => {
      await writeWorkingSources(b.dir, archiveSources(a, destinationManifest(a, current)), true);
    },
  );
  return {
    ...base,
    import_action: 'replaced' as const,
    blueprint_name: b.manifest.name,
    blueprint_id: b.row.blueprint_id,
    no_change: commit === null,
    overrode_existing: true,
    message:
      commit === null
        ? 'The working copy already has this content.'
        : `Replaced the working copy of "${b.manifest.name}".`,
  };
}
