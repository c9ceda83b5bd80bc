/**
 * Remote-backed blueprints (issue 14): a managed source with scan type `blueprints` imports every
 * directory `blueprints/<blueprint_name>/` of its checkout that holds a `blueprint_manifest.yaml`
 * (the conventional folder; there is no `blueprints_root` setting). The directory name is the
 * blueprint name; the manifest is validated with the same schema as local blueprints. Identity: the
 * `blueprint_id` of a `blueprint_export_manifest.yaml` beside the manifest (an unzipped export keeps
 * its identity), else one derived from the source and directory (`bp_` + 16 hex of a SHA-256). A
 * rename pull request writes that sidecar into the renamed directory, so the identity survives it.
 *
 * A sync creates, updates and removes the source's blueprints at once (no preview): each is a row of
 * `blueprints` with `source_id`, `source_path`, `source_commit`, and a working copy committed by the
 * source (so detail, files and history work as for local ones). They are not editable locally. A
 * malformed manifest, a bad directory name or a name taken by another blueprint is a degraded
 * artifact: what that directory imported before stays. A removed directory removes its blueprint
 * (hidden instead while missions reference it). A directory that moved (same blueprint_id, new path)
 * updates `source_path`; its name follows through the rename workflow when a rename is pending
 * (`blueprint-rename/<blueprint_id>`), else at once.
 */
import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { parse } from 'yaml';
import type { Principal } from '../auth/principal.js';
import { ConflictError } from '../errors.js';
import { findDefault } from './defaults.js';
import {
  BlueprintName,
  EXPORT_MANIFEST_FILE,
  MANIFEST_FILE,
  ManifestError,
  parseManifest,
  serializeManifest,
} from './manifest.js';
import {
  commitAll,
  findRow,
  findRowById,
  initRepository,
  listWorkingFiles,
  lockBlueprint,
  missionCount,
  repoDir,
  touchRow,
  writeWorkingFiles,
  type BlueprintRow,
  type Resolved,
} from './store.js';
import { sql } from '../db/sql.js';
import { BlueprintCodes } from './error-codes.js';

/** The conventional folder of a source's blueprints. */
export const BLUEPRINTS_FOLDER = 'blueprints';
const MANIFEST_PATH = new RegExp(`^${BLUEPRINTS_FOLDER}/([^/]+)/${MANIFEST_FILE.replace(/\./g, '\\.')}$`);

/** A blueprint directory's manifest path → its directory (`blueprints/<name>`), else null. */
export function blueprintDirOf(file: string): string | null {
  const m = MANIFEST_PATH.exec(file);
  return m ? `${BLUEPRINTS_FOLDER}/${m[1]}` : null;
}

export function derivedBlueprintId(sourceId: string, dirPath: string): string {
  return `bp_${createHash('sha256').update(`${sourceId}:${dirPath}`).digest('hex').slice(0, 16)}`;
}

const ID_PATTERN = /^bp_[0-9a-f]{16}$/;

export interface DesiredBlueprint {
  blueprint_id: string;
  name: string;
  path: string;
  files: Map<string, Buffer | string>;
}

export interface DegradedBlueprint {
  artifact_id: string;
  reason: string;
}

/** The sync's principal: commits of remote-backed working copies are authored by the source. */
export function sourcePrincipal(sourceId: string, tenant: string): Principal {
  return {
    kind: 'system',
    id: `managed-source:${sourceId}`,
    tenant,
    displayName: `Managed source ${sourceId}`,
    roles: [],
    permissions: new Set(),
    credential: 'service_token',
  };
}

/** Reads every blueprint directory named by `manifestFiles` (checkout-relative manifest paths). */
export async function readRemoteBlueprints(
  workdir: string,
  sourceId: string,
  manifestFiles: readonly string[],
): Promise<{ desired: DesiredBlueprint[]; degraded: DegradedBlueprint[] }> {
  const desired: DesiredBlueprint[] = [];
  const degraded: DegradedBlueprint[] = [];
  const ids = new Map<string, string>();
  for (const file of [...manifestFiles].sort()) {
    const dirPath = blueprintDirOf(file);
    if (!dirPath) continue;
    const name = dirPath.slice(BLUEPRINTS_FOLDER.length + 1);
    const refuse = (reason: string) => degraded.push({ artifact_id: dirPath, reason });
    if (!BlueprintName.safeParse(name).success) {
      refuse(
        `the directory name ${JSON.stringify(name)} is not a blueprint name (lowercase letters, digits, "-", "_"; at most 63)`,
      );
      continue;
    }
    const abs = path.join(workdir, ...dirPath.split('/'));
    let manifest;
    try {
      manifest = parseManifest(await readFile(path.join(abs, MANIFEST_FILE), 'utf8'));
    } catch (err) {
      refuse(
        err instanceof ManifestError
          ? `${err.message}: ${err.issues.join('; ')}`
          : `unreadable: ${(err as Error).message}`,
      );
      continue;
    }
    let blueprintId = derivedBlueprintId(sourceId, dirPath);
    const files = new Map<string, Buffer | string>();
    for (const rel of await listWorkingFiles(abs)) {
      if (rel === EXPORT_MANIFEST_FILE) {
        let sidecar: unknown;
        try {
          sidecar = parse(await readFile(path.join(abs, rel), 'utf8'), { maxAliasCount: 50 });
        } catch {
          sidecar = null;
        }
        const id = (sidecar as { blueprint_id?: unknown } | null)?.blueprint_id;
        if (typeof id === 'string' && ID_PATTERN.test(id)) blueprintId = id;
        continue;
      }
      files.set(rel, await readFile(path.join(abs, rel)));
    }
    if (ids.has(blueprintId)) {
      refuse(`blueprint_id ${blueprintId} is also declared by ${ids.get(blueprintId)}`);
      continue;
    }
    ids.set(blueprintId, dirPath);
    // The directory names the blueprint; the manifest's `name` follows it.
    files.set(MANIFEST_FILE, serializeManifest({ ...manifest, name, hidden: false }));
    desired.push({ blueprint_id: blueprintId, name, path: dirPath, files });
  }
  return { desired, degraded };
}

export interface RemoteSyncResult {
  found: number;
  applied: number;
  degraded: DegradedBlueprint[];
  /** Blueprints whose directory moved while a rename was pending: their rename workflow is signalled. */
  renamed_paths: string[];
}

/**
 * Applies the source's blueprints at `commitSha`: creates, updates (a commit by the source when the
 * content changed) and removes. `rename` applies a rename that no workflow is waiting for (the local
 * rename code, passed in by the caller).
 */
export async function syncRemoteBlueprints(
  em: EntityManager,
  root: string,
  source: { id: string; tenant: string },
  commitSha: string,
  read: { desired: DesiredBlueprint[]; degraded: DegradedBlueprint[] },
  rename: (row: BlueprintRow, newName: string) => Promise<void>,
): Promise<RemoteSyncResult> {
  const principal = sourcePrincipal(source.id, source.tenant);
  const degraded = [...read.degraded];
  const result: RemoteSyncResult = {
    found: read.desired.length + read.degraded.length,
    applied: 0,
    degraded,
    renamed_paths: [],
  };
  const current = await sql<BlueprintRow>(em, `select * from blueprints where tenant = ? and source_id = ?`, [
    source.tenant,
    source.id,
  ]);
  const kept = new Set<string>();
  for (const d of read.desired) {
    const refuse = (reason: string) => degraded.push({ artifact_id: d.path, reason });
    const row = await findRowById(em, source.tenant, d.blueprint_id);
    if (row && row.source_id !== source.id) {
      refuse(`blueprint_id ${d.blueprint_id} belongs to another blueprint (${row.name})`);
      continue;
    }
    if (!row) {
      if (findDefault(d.name) || (await findRow(em, source.tenant, d.name))) {
        refuse(`a blueprint named ${d.name} already exists`);
        continue;
      }
      const dir = repoDir(root, source.tenant, d.blueprint_id);
      await em.transactional(async (tx) => {
        await lockBlueprint(tx, `${source.tenant}:${d.name}`);
        await sql(
          tx,
          `insert into blueprints (blueprint_id, tenant, name, created_by, source_id, source_path, source_commit)
             values (?, ?, ?, null, ?, ?, ?)`,
          [d.blueprint_id, source.tenant, d.name, source.id, d.path, commitSha],
        );
        await initRepository(
          dir,
          principal,
          d.files,
          `Import blueprint ${d.name} from ${d.path} at ${commitSha.slice(0, 12)}`,
        );
      });
      kept.add(d.blueprint_id);
      result.applied++;
      continue;
    }
    kept.add(d.blueprint_id);
    const pending = row.pending_rename as { new_name?: string } | null | undefined;
    const renamedHere = row.name !== d.name && pending?.new_name === d.name;
    const dir = repoDir(root, source.tenant, row.blueprint_id);
    // Until the rename applies, the working copy keeps the local name.
    const files = new Map(d.files);
    if (row.name !== d.name) {
      const manifest = parseManifest(String(files.get(MANIFEST_FILE)));
      files.set(MANIFEST_FILE, serializeManifest({ ...manifest, name: row.name }));
    }
    const changed = await em.transactional(async (tx) => {
      await lockBlueprint(tx, row.blueprint_id);
      await writeWorkingFiles(dir, files, true);
      const oid = await commitAll(
        dir,
        principal,
        `Sync blueprint ${row.name} from ${d.path} at ${commitSha.slice(0, 12)}`,
      );
      if (oid) await touchRow(tx, row.blueprint_id);
      await sql(tx, `update blueprints set source_path = ?, source_commit = ?, hidden = false where blueprint_id = ?`, [
        d.path,
        commitSha,
        row.blueprint_id,
      ]);
      return oid !== null || row.source_path !== d.path || row.hidden;
    });
    if (changed) result.applied++;
    if (row.name === d.name) continue;
    if (renamedHere) result.renamed_paths.push(row.blueprint_id);
    else {
      // Moved on the remote without a pending rename: the name follows now, if it is free.
      try {
        await rename({ ...row, source_path: d.path }, d.name);
      } catch (err) {
        refuse(`moved from ${row.source_path} but could not be renamed to ${d.name}: ${(err as Error).message}`);
      }
    }
  }
  // A degraded directory keeps what it imported before; blueprints no longer declared go.
  const degradedPaths = new Set(degraded.map((d) => d.artifact_id));
  for (const row of current) {
    if (kept.has(row.blueprint_id) || degradedPaths.has(row.source_path ?? '')) continue;
    await em.transactional(async (tx) => {
      await lockBlueprint(tx, row.blueprint_id);
      if ((await missionCount(tx, row.blueprint_id, false)) > 0) {
        if (!row.hidden)
          await sql(tx, `update blueprints set hidden = true, updated_at = now() where blueprint_id = ?`, [
            row.blueprint_id,
          ]);
        return;
      }
      await sql(tx, `delete from blueprints where blueprint_id = ?`, [row.blueprint_id]);
      await rm(repoDir(root, source.tenant, row.blueprint_id), { recursive: true, force: true });
    });
    result.applied++;
  }
  return result;
}

/** The files of a source's checkout that are blueprint manifests. */
export function isBlueprintManifest(file: string): boolean {
  return MANIFEST_PATH.test(file);
}

export interface PendingRename {
  new_name: string;
  new_path: string;
  old_path: string;
  pull_request: { url: string; number: number; branch: string; base_branch: string; commit_sha: string };
  requested_by: string;
  requested_at: string;
  expires_at: string;
  workflow_id: string;
}

export type Custom = Extract<Resolved, { kind: 'custom' }>;

export function isRemote(b: Resolved): b is Custom {
  return b.kind === 'custom' && !!b.row.source_id;
}

/** Refuses a local write to a remote-backed blueprint (409 BLUEPRINT_MANAGED_BY_SOURCE). */
export function refuseRemote(b: Resolved, what: string): void {
  if (!isRemote(b)) return;
  throw new ConflictError(
    `Blueprint "${b.manifest.name}" comes from managed source ${b.row.source_id} (${b.row.source_path}); it cannot be ${what} here. Change it in the source repository and sync.`,
    { code: BlueprintCodes.BLUEPRINT_MANAGED_BY_SOURCE, blueprint_name: b.manifest.name, source_id: b.row.source_id },
  );
}
