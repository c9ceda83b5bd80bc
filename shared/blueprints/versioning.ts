/**
 * Blueprint versioned mode (spec, Blueprint mode; issue 14): enable, save an immutable version, promote
 * one version to production, restore a version into the working copy, the summary, `create_version`
 * imports and the export sidecar's `versioning` block. Every write holds the blueprint's advisory lock.
 *
 * Saved versions live in PostgreSQL as well as in Git (`shared/blueprints/versions.ts`). Each API process
 * runs one restore pass at start (`VersionRestorer`, started by `startApi`, or lazily by the first
 * versioning call): it re-creates missing tags and lost repositories from PostgreSQL; while it has not
 * reached a blueprint yet, that blueprint's versioning routes answer a retryable 503 with `Retry-After`.
 */
import { refuseRemote } from './remote.js';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { describeError, type Logger } from '../log.js';
import { requireAccess, type AccessFlags } from './access.js';
import {
  commitAll,
  listWorkingFiles,
  lockBlueprint,
  lockLiveBlueprint,
  repoDir,
  touchRow,
  workingCopyFingerprint,
  writeWorkingFiles,
  type BlueprintRow,
  type Resolved,
} from './store.js';
import {
  authorOf,
  commitMarker,
  ensureVersionsPresent,
  fingerprintOf,
  headCommit,
  insertVersion,
  listPromotions,
  listVersions,
  newVersionId,
  setProduction,
  tagVersion,
  treeOid,
  versionFiles,
  versioningOf,
  withManifestName,
  writeSnapshotCommit,
  enableRow,
  fingerprintOfFiles,
  type FileMap,
  type VersionFiles,
  type LazyFile,
  type VersionRow,
  type VersioningRow,
} from './versions.js';
import { ConflictError, NotFoundError, ServiceUnavailableError } from '../errors.js';
import { refuseActiveWip } from './wip.js';
import type { Principal } from '../auth/principal.js';
import { sql } from '../db/sql.js';
import { BlueprintCodes } from './error-codes.js';

type Custom = Extract<Resolved, { kind: 'custom' }>;

export interface VersionCtx {
  em: EntityManager;
  principal: Principal;
  root: string;
  restorer?: VersionRestorer;
}

export const RETRY_AFTER_SECONDS = 2;

function restoringError(blueprintId: string): ServiceUnavailableError {
  const e = new ServiceUnavailableError(
    'blueprint_versions',
    'Saved blueprint versions are being restored after a restart; retry shortly.',
  );
  (e.payload as Record<string, unknown>).code = BlueprintCodes.BLUEPRINT_VERSIONS_RESTORING;
  (e.payload as Record<string, unknown>).blueprint_id = blueprintId;
  (e.payload as Record<string, unknown>).retryable = true;
  e.headers['Retry-After'] = String(RETRY_AFTER_SECONDS);
  return e;
}

/**
 * The restore pass of one API process. `start` lists the versioned blueprints (they become "pending"),
 * waits for the optional `gate` (tests hold it to observe the 503 deterministically), then repairs each
 * under its lock and clears it. A failed listing is retried by the next versioning call.
 */
export interface RestorerDeps {
  orm: MikroORM;
  config: AppConfig;
  log: Logger;
}

export class VersionRestorer {
  private pending = new Set<string>();
  private listing: Promise<void> | null = null;
  private deps: RestorerDeps | null = null;
  /** Settles when the pass has visited every pending blueprint. */
  finished: Promise<void> = Promise.resolve();
  restoredCount = 0;

  constructor(private readonly options: { gate?: () => Promise<void> } = {}) {}

  /** Gives the restorer its dependencies (for a lazy start); the first call wins. */
  attach(deps: RestorerDeps): this {
    this.deps ??= deps;
    return this;
  }

  start(deps: RestorerDeps): void {
    this.attach(deps);
    const em = deps.orm.em.fork();
    const listing = sql<BlueprintRow>(
      em,
      `select b.* from blueprint_versioning v join blueprints b on b.blueprint_id = v.blueprint_id order by b.blueprint_id`,
    ).then(
      (rows) => {
        for (const r of rows) this.pending.add(r.blueprint_id);
        this.finished = this.run(deps, em, rows);
      },
      (err: unknown) => {
        if (this.listing === listing) this.listing = null;
        deps.log.warn('blueprint version restore: listing failed', describeError(err));
        throw err;
      },
    );
    listing.catch(() => undefined);
    this.listing = listing;
  }

  private async run(deps: RestorerDeps, em: EntityManager, rows: BlueprintRow[]): Promise<void> {
    try {
      if (this.options.gate) await this.options.gate();
      for (const row of rows) {
        try {
          await em.fork().transactional(async (tx) => {
            await lockBlueprint(tx, row.blueprint_id);
            const current = await sql<BlueprintRow>(tx, `select * from blueprints where blueprint_id = ?`, [
              row.blueprint_id,
            ]);
            if (!current[0]) return; // deleted meanwhile
            const dir = repoDir(deps.config.blueprints.dir, current[0].tenant, row.blueprint_id);
            const n = await ensureVersionsPresent(tx, dir, current[0]);
            this.restoredCount += n;
            if (n) deps.log.info('blueprint versions restored', { blueprint_id: row.blueprint_id, versions: n });
          });
        } catch (err) {
          deps.log.warn('blueprint version restore failed', { blueprint_id: row.blueprint_id, ...describeError(err) });
        } finally {
          this.pending.delete(row.blueprint_id);
        }
      }
    } finally {
      this.pending.clear();
    }
  }

  /** Refuses (503, retryable) while the pass has not reached this blueprint; starts the pass if none ran. */
  async check(blueprintId: string): Promise<void> {
    if (!this.listing && this.deps) this.start(this.deps);
    try {
      await this.listing;
    } catch {
      throw restoringError(blueprintId);
    }
    if (this.pending.has(blueprintId)) throw restoringError(blueprintId);
  }
}

/** Before a versioning route resolves a blueprint: 503 while restoring, and a lost repository re-created. */
export async function beforeVersioning(ctx: VersionCtx, row: BlueprintRow): Promise<void> {
  await ctx.restorer?.check(row.blueprint_id);
  const dir = repoDir(ctx.root, row.tenant, row.blueprint_id);
  if (existsSync(path.join(dir, '.git'))) return;
  await ctx.em.transactional(async (tx) => {
    await lockBlueprint(tx, row.blueprint_id);
    if (await versioningOf(tx, row.blueprint_id)) await ensureVersionsPresent(tx, dir, row);
  });
}

function refuseNotVersioned(b: Custom): never {
  throw new ConflictError(
    `Blueprint "${b.manifest.name}" is not in versioned mode; enable it first (POST /api/blueprints/${b.manifest.name}/versioning/enable).`,
    { code: BlueprintCodes.BLUEPRINT_NOT_VERSIONED, blueprint_name: b.manifest.name, blueprint_id: b.row.blueprint_id },
  );
}

function refuseDefault(name: string): never {
  throw new ConflictError(`"${name}" is a built-in default blueprint; it has no versioned mode.`, {
    code: BlueprintCodes.DEFAULT_BLUEPRINT,
    blueprint_name: name,
  });
}

function unknownVersion(b: Custom, n: number): never {
  throw new NotFoundError(`Blueprint "${b.manifest.name}" has no saved version ${n}.`, {
    blueprint_name: b.manifest.name,
    version_number: n,
  });
}

/** Runs `fn` under the blueprint's lock after repairing its saved versions from PostgreSQL. */
async function locked<T>(
  ctx: VersionCtx,
  b: Custom,
  fn: (tx: EntityManager, v: VersioningRow | undefined, versions: VersionRow[]) => Promise<T>,
): Promise<T> {
  return ctx.em.transactional(async (tx) => {
    await lockLiveBlueprint(tx, { row: b.row, name: b.manifest.name });
    const v = await versioningOf(tx, b.row.blueprint_id);
    if (v) await ensureVersionsPresent(tx, b.dir, b.row);
    return fn(tx, v, v ? await listVersions(tx, b.row.blueprint_id) : []);
  });
}

async function workingSnapshot(dir: string): Promise<FileMap> {
  const out: FileMap = new Map();
  for (const f of await listWorkingFiles(dir)) out.set(f, await readFile(path.join(dir, f)));
  return out;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function versionView(v: VersionRow, production: number | null) {
  return {
    version_number: v.number,
    version_id: v.version_id,
    commit_sha: v.commit_sha,
    tag: `version/${v.number}`,
    fingerprint: v.fingerprint,
    label: v.label,
    note: v.note,
    source: v.source,
    created_by: v.created_by,
    created_at: iso(v.created_at)!,
    is_production: v.number === production,
  };
}

/** The production version (null when none) and the working copy against the latest saved version. */
async function productionAndWorkingCopy(dir: string, v: VersioningRow | undefined, versions: VersionRow[]) {
  const fingerprint = await workingCopyFingerprint(dir);
  const latest = versions[versions.length - 1];
  const prod = v && versions.find((x) => x.number === v.production_version_number);
  return {
    production:
      v && prod
        ? {
            version_number: prod.number,
            version_id: prod.version_id,
            commit_sha: prod.commit_sha,
            promoted_by: v.promoted_by,
            promoted_at: iso(v.promoted_at),
          }
        : null,
    working_copy: {
      commit_sha: await headCommit(dir),
      fingerprint,
      latest_version_number: latest?.number ?? null,
      dirty_since_version: !latest || latest.fingerprint !== fingerprint,
    },
  };
}

/** The versioning summary of a blueprint (standard ones answer mode standard and empty lists). */
export async function summary(ctx: VersionCtx, b: Resolved) {
  const base = {
    blueprint_name: b.manifest.name,
    blueprint_id: b.kind === 'custom' ? b.row.blueprint_id : b.def.blueprint_id,
  };
  if (b.kind === 'default')
    return {
      ...base,
      mode: 'standard' as const,
      enabled_at: null,
      enabled_by: null,
      versions: [],
      production: null,
      working_copy: null,
      promotion_history: [],
    };
  return locked(ctx, b, async (tx, v, versions) => {
    const production = v?.production_version_number ?? null;
    return {
      ...base,
      mode: v ? ('versioned' as const) : ('standard' as const),
      enabled_at: v ? iso(v.enabled_at) : null,
      enabled_by: v?.enabled_by ?? null,
      versions: versions.map((x) => versionView(x, production)),
      ...(await productionAndWorkingCopy(b.dir, v, versions)),
      promotion_history: v
        ? (await listPromotions(tx, b.row.blueprint_id)).map((p) => ({
            version_number: p.version_number,
            previous_version_number: p.previous_version_number,
            promoted_by: p.promoted_by,
            promoted_at: iso(p.promoted_at)!,
            via: p.via,
          }))
        : [],
    };
  });
}

/** Turns versioned mode on (idempotent: an enabled blueprint answers `changed` false and no commit). */
export async function enable(ctx: VersionCtx, b: Resolved): Promise<{ changed: boolean }> {
  if (b.kind === 'default') refuseDefault(b.manifest.name);
  refuseRemote(b, 'switched to versioned mode');
  return locked(ctx, b, async (tx) => {
    const changed = await enableRow(tx, b.row.blueprint_id, ctx.principal.id);
    if (changed) {
      await commitMarker(b.dir, authorOf(ctx.principal), `Enable versioned mode for ${b.manifest.name}`);
      await touchRow(tx, b.row.blueprint_id);
    }
    return { changed };
  });
}

async function appendVersion(
  tx: EntityManager,
  ctx: VersionCtx,
  b: Custom,
  versions: VersionRow[],
  files: VersionFiles,
  commit: string,
  meta: { label: string | null; note: string | null; source: 'working_copy' | 'import' },
  fingerprint?: string,
): Promise<VersionRow> {
  const number = (versions[versions.length - 1]?.number ?? 0) + 1;
  const row = {
    version_id: newVersionId(),
    blueprint_id: b.row.blueprint_id,
    number,
    commit_sha: commit,
    fingerprint: fingerprint ?? (await fingerprintOfFiles(files)),
    label: meta.label,
    note: meta.note,
    source: meta.source,
    created_by: ctx.principal.id,
  };
  await insertVersion(tx, row, files);
  await tagVersion(b.dir, number, commit);
  await touchRow(tx, b.row.blueprint_id);
  return { ...row, created_at: new Date() };
}

/**
 * Saves the working copy as the next immutable version: a commit "Save version n of …" on the working
 * branch, tagged `version/<n>`, and the files in PostgreSQL. A working copy identical to the latest saved
 * version answers `no_change` true with that version and writes nothing.
 */
export async function saveVersion(ctx: VersionCtx, b: Resolved, meta: { label?: string; note?: string }) {
  if (b.kind === 'default') refuseDefault(b.manifest.name);
  return locked(ctx, b, async (tx, v, versions) => {
    if (!v) refuseNotVersioned(b);
    const files = await workingSnapshot(b.dir);
    const latest = versions[versions.length - 1];
    if (latest && latest.fingerprint === fingerprintOf(files))
      return { no_change: true, version: versionView(latest, v.production_version_number) };
    const number = (latest?.number ?? 0) + 1;
    const message = `Save version ${number} of ${b.manifest.name}${meta.label ? `: ${meta.label}` : ''}`;
    const author = authorOf(ctx.principal);
    const commit = (await commitAll(b.dir, ctx.principal, message)) ?? (await commitMarker(b.dir, author, message));
    const row = await appendVersion(tx, ctx, b, versions, files, commit, {
      label: meta.label ?? null,
      note: meta.note ?? null,
      source: 'working_copy',
    });
    return { no_change: false, version: versionView(row, v.production_version_number) };
  });
}

/** Makes version n the one production assignment (recorded in the promotion history and as a commit). */
export async function promote(ctx: VersionCtx, b: Resolved, n: number) {
  if (b.kind === 'default') refuseDefault(b.manifest.name);
  return locked(ctx, b, async (tx, v, versions) => {
    if (!v) refuseNotVersioned(b);
    const target = versions.find((x) => x.number === n) ?? unknownVersion(b, n);
    const previous = v.production_version_number;
    if (previous === n) return { no_change: true, previous_version_number: previous, version: versionView(target, n) };
    await setProduction(tx, b.row.blueprint_id, n, previous, ctx.principal.id, 'promote');
    await commitMarker(b.dir, authorOf(ctx.principal), `Promote version ${n} of ${b.manifest.name} to production`);
    await touchRow(tx, b.row.blueprint_id);
    return { no_change: false, previous_version_number: previous, version: versionView(target, n) };
  });
}

/**
 * Copies version n's files (from PostgreSQL, the durable copy) into the working copy as a new commit
 * "Restore version n of …"; the manifest keeps the blueprint's current name. Always one commit, even when
 * the content is already identical (`changed_files` false), so the history shows the restore.
 */
export async function restore(ctx: VersionCtx, b: Resolved, n: number) {
  if (b.kind === 'default') refuseDefault(b.manifest.name);
  return locked(ctx, b, async (tx, v, versions) => {
    if (!v) refuseNotVersioned(b);
    const target = versions.find((x) => x.number === n) ?? unknownVersion(b, n);
    const files = withManifestName(await versionFiles(tx, target.version_id), b.row.name);
    await writeWorkingFiles(b.dir, files, true);
    const message = `Restore version ${n} of ${b.manifest.name} into the working copy`;
    const changed = await commitAll(b.dir, ctx.principal, message);
    const commit = changed ?? (await commitMarker(b.dir, authorOf(ctx.principal), message));
    await touchRow(tx, b.row.blueprint_id);
    return {
      restored_version_number: n,
      commit_sha: commit,
      changed_files: changed !== null,
      working_copy_fingerprint: await workingCopyFingerprint(b.dir),
    };
  });
}

/**
 * `create_version` import: appends one version whose files are the archive's (`files`, manifest already
 * carrying the destination's name, created_by and origin; read lazily from the extracted archive, one
 * file in memory at a time) without touching the working copy: the version
 * commit's parent is the working branch's head and only the tag names it. Content identical to the latest
 * saved version answers `no_change`. `promote` (manage access, checked before anything is written) makes
 * the appended (or identical latest) version production.
 */
export async function importVersion(
  ctx: VersionCtx,
  b: Custom,
  flags: AccessFlags,
  files: LazyFile[],
  promoteIt: boolean,
) {
  const v0 = await versioningOf(ctx.em, b.row.blueprint_id);
  if (!v0) refuseNotVersioned(b);
  if (promoteIt) requireAccess(flags, 'manage', b.manifest.name);
  await ctx.restorer?.check(b.row.blueprint_id);
  return locked(ctx, b, async (tx, v, versions) => {
    if (!v) refuseNotVersioned(b);
    // Spec, Errors: version import answers 409 for WIP targets (checked under the lock a session opens under).
    await refuseActiveWip(tx, { blueprint_id: b.row.blueprint_id, name: b.manifest.name }, 'import versions into it');
    const latest = versions[versions.length - 1];
    let version: VersionRow;
    let noChange = false;
    const fingerprint = await fingerprintOfFiles(files);
    if (latest && latest.fingerprint === fingerprint) {
      version = latest;
      noChange = true;
    } else {
      const number = (latest?.number ?? 0) + 1;
      const commit = await writeSnapshotCommit(b.dir, files, {
        parent: await headCommit(b.dir),
        author: authorOf(ctx.principal),
        message: `Import version ${number} of ${b.manifest.name} from a ZIP archive`,
      });
      version = await appendVersion(
        tx,
        ctx,
        b,
        versions,
        files,
        commit,
        { label: 'Imported from a ZIP archive', note: null, source: 'import' },
        fingerprint,
      );
    }
    let promoted = false;
    if (promoteIt) {
      if (v.production_version_number !== version.number) {
        await setProduction(
          tx,
          b.row.blueprint_id,
          version.number,
          v.production_version_number,
          ctx.principal.id,
          'import',
        );
        await commitMarker(
          b.dir,
          authorOf(ctx.principal),
          `Promote imported version ${version.number} of ${b.manifest.name} to production`,
        );
      }
      promoted = true;
    }
    return { version, no_change: noChange, promoted };
  });
}

/**
 * The export sidecar's `versioning` block (null for a standard blueprint): production and working-copy
 * metadata and every saved version with its snapshot root (the Git tree id of its files, identical on any
 * repository holding the same files). The archive carries the working copy only, so every saved version is
 * listed in `versions_not_included` and `includes_all_saved_versions` is true only when none was saved.
 * Call under the blueprint's lock (the export holds it).
 */
export async function versioningSidecar(em: EntityManager, b: Custom) {
  const v = await versioningOf(em, b.row.blueprint_id);
  if (!v) return null;
  const versions = await listVersions(em, b.row.blueprint_id);
  const out = [];
  for (const x of versions) {
    const root = await treeOid(b.dir, x.commit_sha).catch(() => null);
    out.push({
      version_number: x.number,
      version_id: x.version_id,
      commit_sha: x.commit_sha,
      fingerprint: x.fingerprint,
      snapshot_root: root,
      created_by: x.created_by,
      created_at: iso(x.created_at),
      label: x.label,
    });
  }
  return {
    mode: 'versioned',
    enabled_at: iso(v.enabled_at),
    ...(await productionAndWorkingCopy(b.dir, v, versions)),
    versions: out,
    versions_not_included: versions.map((x) => x.number),
    includes_all_saved_versions: versions.length === 0,
  };
}
