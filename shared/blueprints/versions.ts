/**
 * Blueprint versioned mode, storage side (issue 14). A saved version is an immutable snapshot of a
 * blueprint's files: a Git commit in the blueprint's repository tagged `version/<n>`, AND rows in
 * PostgreSQL (`blueprint_versions`, `blueprint_version_files` onto content-addressed `blueprint_blobs`),
 * so losing the repository volume loses no saved version: `ensureVersionsPresent` re-creates missing
 * tags (and the whole repository when it is gone) from PostgreSQL. Callers hold the blueprint's lock.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import git from 'isomorphic-git';
import type { Principal } from '../auth/principal.js';
import { MANIFEST_FILE, parseManifest, serializeManifest } from './manifest.js';
import { sql } from '../db/sql.js';

export interface VersioningRow {
  blueprint_id: string;
  enabled_at: Date;
  enabled_by: string;
  production_version_number: number | null;
  promoted_by: string | null;
  promoted_at: Date | null;
}

export interface VersionRow {
  version_id: string;
  blueprint_id: string;
  number: number;
  commit_sha: string;
  fingerprint: string;
  label: string | null;
  note: string | null;
  source: 'working_copy' | 'import';
  created_by: string;
  created_at: Date;
}

export interface PromotionRow {
  version_number: number;
  previous_version_number: number | null;
  promoted_by: string;
  promoted_at: Date;
  via: 'promote' | 'import';
}

export type FileMap = Map<string, Buffer>;

/**
 * A file read only when needed (an extracted archive member on disk): a version built from these holds
 * one file's bytes in memory at a time (each member is capped by the ZIP limits), never the whole archive.
 */
export interface LazyFile {
  path: string;
  read: () => Promise<Buffer>;
}
export type VersionFiles = FileMap | LazyFile[];

function lazyList(files: VersionFiles): LazyFile[] {
  if (Array.isArray(files)) return files;
  return [...files].map(([path, data]) => ({ path, read: async () => data }));
}

export const versionTag = (n: number) => `version/${n}`;

export function newVersionId(): string {
  return `bpv_${randomBytes(8).toString('hex')}`;
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** The same fingerprint as `workingCopyFingerprint`: SHA-256 over sorted `path NUL sha256(content)` lines. */
export function fingerprintOf(files: FileMap): string {
  const h = createHash('sha256');
  for (const f of [...files.keys()].sort()) h.update(`${f}\0${sha256(files.get(f)!)}\n`);
  return h.digest('hex');
}

/** `fingerprintOf` over lazily read files (one file in memory at a time). */
export async function fingerprintOfFiles(files: VersionFiles): Promise<string> {
  if (!Array.isArray(files)) return fingerprintOf(files);
  const h = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)))
    h.update(`${f.path}\0${sha256(await f.read())}\n`);
  return h.digest('hex');
}

// ---- PostgreSQL ----

export async function versioningOf(em: EntityManager, blueprintId: string): Promise<VersioningRow | undefined> {
  return (await sql<VersioningRow>(em, `select * from blueprint_versioning where blueprint_id = ?`, [blueprintId]))[0];
}

/**
 * The saved version a versioned blueprint runs (its production assignment): `undefined` for a standard
 * blueprint, null for a versioned one with no production version assigned.
 */
export async function productionVersionOf(
  em: EntityManager,
  blueprintId: string,
): Promise<VersionRow | null | undefined> {
  const [row] = await sql<{ production_version_number: number | null } & Partial<VersionRow>>(
    em,
    `select v.production_version_number, bv.*
       from blueprint_versioning v
       left join blueprint_versions bv on bv.blueprint_id = v.blueprint_id and bv.number = v.production_version_number
      where v.blueprint_id = ?`,
    [blueprintId],
  );
  if (!row) return undefined;
  return row.version_id ? (row as VersionRow) : null;
}

/** Ids of every versioned blueprint among `ids` (all of them when `ids` is omitted). */
export async function versionedIds(em: EntityManager, ids?: string[]): Promise<Set<string>> {
  if (ids && !ids.length) return new Set();
  const rows = ids
    ? await sql<{ blueprint_id: string }>(
        em,
        `select blueprint_id from blueprint_versioning where blueprint_id in (${ids.map(() => '?').join(', ')})`,
        ids,
      )
    : await sql<{ blueprint_id: string }>(em, `select blueprint_id from blueprint_versioning`);
  return new Set(rows.map((r) => r.blueprint_id));
}

export async function enableRow(tx: EntityManager, blueprintId: string, by: string): Promise<boolean> {
  const rows = await sql<{ blueprint_id: string }>(
    tx,
    `insert into blueprint_versioning (blueprint_id, enabled_by) values (?, ?) on conflict do nothing returning blueprint_id`,
    [blueprintId, by],
  );
  return rows.length > 0;
}

export async function listVersions(em: EntityManager, blueprintId: string): Promise<VersionRow[]> {
  return sql<VersionRow>(em, `select * from blueprint_versions where blueprint_id = ? order by number`, [blueprintId]);
}

export async function listPromotions(em: EntityManager, blueprintId: string): Promise<PromotionRow[]> {
  return sql<PromotionRow>(
    em,
    `select version_number, previous_version_number, promoted_by, promoted_at, via
       from blueprint_promotions where blueprint_id = ? order by id`,
    [blueprintId],
  );
}

/** A saved version's files, read from PostgreSQL (the durable copy). */
export async function versionFiles(em: EntityManager, versionId: string): Promise<FileMap> {
  const rows = await sql<{ path: string; content: Buffer }>(
    em,
    `select f.path, b.content from blueprint_version_files f join blueprint_blobs b on b.sha256 = f.blob_sha256
      where f.version_id = ? order by f.path`,
    [versionId],
  );
  return new Map(rows.map((r) => [r.path, Buffer.from(r.content)]));
}

/** Records a saved version and its files (blobs are shared by content). */
export async function insertVersion(
  tx: EntityManager,
  v: Omit<VersionRow, 'created_at'>,
  files: VersionFiles,
): Promise<void> {
  // Shared blobs: inserts hold the blob lock shared, the orphan sweep exclusively (no reference to a swept blob).
  await sql(tx, `select pg_advisory_xact_lock_shared(hashtextextended('blueprint_blobs', 14))`);
  await sql(
    tx,
    `insert into blueprint_versions (version_id, blueprint_id, number, commit_sha, fingerprint, label, note, source, created_by)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [v.version_id, v.blueprint_id, v.number, v.commit_sha, v.fingerprint, v.label, v.note, v.source, v.created_by],
  );
  for (const f of lazyList(files)) {
    const p = f.path;
    const data = await f.read();
    const digest = sha256(data);
    await sql(tx, `insert into blueprint_blobs (sha256, size, content) values (?, ?, ?) on conflict do nothing`, [
      digest,
      data.length,
      data,
    ]);
    await sql(tx, `insert into blueprint_version_files (version_id, path, blob_sha256) values (?, ?, ?)`, [
      v.version_id,
      p,
      digest,
    ]);
  }
}

export async function setProduction(
  tx: EntityManager,
  blueprintId: string,
  number: number,
  previous: number | null,
  by: string,
  via: 'promote' | 'import',
): Promise<void> {
  await sql(
    tx,
    `update blueprint_versioning set production_version_number = ?, promoted_by = ?, promoted_at = now() where blueprint_id = ?`,
    [number, by, blueprintId],
  );
  await sql(
    tx,
    `insert into blueprint_promotions (blueprint_id, version_number, previous_version_number, promoted_by, via) values (?, ?, ?, ?, ?)`,
    [blueprintId, number, previous, by, via],
  );
}

/** Removes blobs no saved version references any more (after a blueprint's versions went with its row). */
export async function dropOrphanBlobs(tx: EntityManager): Promise<void> {
  await sql(tx, `select pg_advisory_xact_lock(hashtextextended('blueprint_blobs', 14))`);
  await sql(
    tx,
    `delete from blueprint_blobs b where not exists (select 1 from blueprint_version_files f where f.blob_sha256 = b.sha256)`,
  );
}

// ---- Git ----

export interface GitAuthor {
  name: string;
  email: string;
  timestamp?: number;
}

export function authorOf(p: Pick<Principal, 'id' | 'displayName'>): GitAuthor {
  return { name: p.displayName || p.id, email: `${p.id}@users.platform.invalid` };
}

type TreeEntry = { mode: string; path: string; oid: string; type: 'blob' | 'tree' };

async function writeTreeOf(dir: string, files: VersionFiles): Promise<string> {
  // Build nested trees bottom-up: group paths by their first segment. Each file is read when its blob is written.
  async function build(entries: Array<[string[], () => Promise<Buffer>]>): Promise<string> {
    const blobs: TreeEntry[] = [];
    const subdirs = new Map<string, Array<[string[], () => Promise<Buffer>]>>();
    for (const [segments, data] of entries) {
      if (segments.length === 1) {
        blobs.push({
          mode: '100644',
          path: segments[0]!,
          oid: await git.writeBlob({ fs, dir, blob: await data() }),
          type: 'blob',
        });
      } else {
        const list = subdirs.get(segments[0]!) ?? [];
        list.push([segments.slice(1), data]);
        subdirs.set(segments[0]!, list);
      }
    }
    const trees: TreeEntry[] = [];
    for (const [name, list] of subdirs)
      trees.push({ mode: '040000', path: name, oid: await build(list), type: 'tree' });
    return git.writeTree({ fs, dir, tree: [...blobs, ...trees] });
  }
  return build(lazyList(files).map((f) => [f.path.split('/'), f.read]));
}

/** Writes a commit whose tree is exactly `files` (no working tree or branch is touched). */
export async function writeSnapshotCommit(
  dir: string,
  files: VersionFiles,
  opts: { parent: string | null; author: GitAuthor; message: string },
): Promise<string> {
  const tree = await writeTreeOf(dir, files);
  const timestamp = opts.author.timestamp ?? Math.floor(Date.now() / 1000);
  const who = { name: opts.author.name, email: opts.author.email, timestamp, timezoneOffset: 0 };
  return git.writeCommit({
    fs,
    dir,
    commit: {
      tree,
      parent: opts.parent ? [opts.parent] : [],
      author: who,
      committer: who,
      message: opts.message.endsWith('\n') ? opts.message : `${opts.message}\n`,
    },
  });
}

/** Commits the current index again on the current branch (an empty commit recording a versioning step). */
export async function commitMarker(dir: string, author: GitAuthor, message: string): Promise<string> {
  return git.commit({ fs, dir, author: { name: author.name, email: author.email }, message });
}

export async function headCommit(dir: string): Promise<string> {
  return git.resolveRef({ fs, dir, ref: 'HEAD' });
}

export async function treeOid(dir: string, commit: string): Promise<string> {
  return (await git.readCommit({ fs, dir, oid: commit })).commit.tree;
}

export async function tagVersion(dir: string, n: number, commit: string): Promise<void> {
  await git.tag({ fs, dir, ref: versionTag(n), object: commit, force: true });
}

/** The commit tag `version/<n>` names, when both the tag and the commit exist. */
export async function taggedCommit(dir: string, n: number): Promise<string | null> {
  try {
    const oid = await git.resolveRef({ fs, dir, ref: `refs/tags/${versionTag(n)}` });
    await git.readCommit({ fs, dir, oid });
    return oid;
  } catch {
    return null;
  }
}

async function commitExists(dir: string, oid: string): Promise<boolean> {
  try {
    await git.readCommit({ fs, dir, oid });
    return true;
  } catch {
    return false;
  }
}

async function isRepository(dir: string): Promise<boolean> {
  try {
    await stat(`${dir}/.git`);
    await git.resolveRef({ fs, dir, ref: 'HEAD' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Re-creates what the repository lost from PostgreSQL: a lost tag whose recorded commit still exists is
 * re-created on it; each saved version whose commit is missing too gets a commit with exactly its stored files (parent: the previous version's commit, author and time: the
 * version's) tagged `version/<n>`; its row then names the new commit. When the repository itself is gone
 * it is re-initialised and its working copy becomes the latest saved version (under the blueprint's current
 * name) in a commit saying so; edits made after that version were not saved and are lost with the volume.
 * Answers how many versions were re-created. The caller holds the blueprint's lock.
 */
export async function ensureVersionsPresent(
  tx: EntityManager,
  dir: string,
  blueprint: { blueprint_id: string; name: string },
): Promise<number> {
  const versions = await listVersions(tx, blueprint.blueprint_id);
  if (!versions.length) return 0;
  const fresh = !(await isRepository(dir));
  if (fresh) {
    await mkdir(dir, { recursive: true });
    await git.init({ fs, dir, defaultBranch: 'main' });
  }
  let prev: string | null = null;
  let restored = 0;
  let latestFiles: FileMap | null = null;
  for (const v of versions) {
    const existing = fresh ? null : await taggedCommit(dir, v.number);
    if (existing) {
      prev = existing;
      continue;
    }
    if (!fresh && (await commitExists(dir, v.commit_sha))) {
      // Only the tag was lost: it names the recorded commit again.
      await tagVersion(dir, v.number, v.commit_sha);
      prev = v.commit_sha;
      restored++;
      continue;
    }
    const files = await versionFiles(tx, v.version_id);
    latestFiles = files;
    const oid: string = await writeSnapshotCommit(dir, files, {
      parent: prev,
      author: { ...authorOf({ id: v.created_by, displayName: v.created_by }), timestamp: toSeconds(v.created_at) },
      message: `Save version ${v.number} of ${blueprint.name} (restored from the database)`,
    });
    await tagVersion(dir, v.number, oid);
    await sql(tx, `update blueprint_versions set commit_sha = ? where version_id = ?`, [oid, v.version_id]);
    prev = oid;
    restored++;
  }
  if (fresh && prev) {
    const last = versions[versions.length - 1]!;
    const files = latestFiles ?? (await versionFiles(tx, last.version_id));
    const wc = withManifestName(files, blueprint.name);
    const oid = await writeSnapshotCommit(dir, wc, {
      parent: prev,
      author: { name: 'Platform', email: 'platform@users.platform.invalid' },
      message: `Restore the working copy of ${blueprint.name} from saved version ${last.number} (its storage was lost)`,
    });
    await git.writeRef({ fs, dir, ref: 'refs/heads/main', value: oid, force: true });
    await git.checkout({ fs, dir, ref: 'main', force: true });
  }
  return restored;
}

function toSeconds(d: Date | string): number {
  return Math.floor(new Date(d).getTime() / 1000);
}

/** `files` with the manifest's `name` set to `name` (a version saved before a rename keeps the current name). */
export function withManifestName(files: FileMap, name: string): FileMap {
  const text = files.get(MANIFEST_FILE);
  if (!text) return files;
  const m = parseManifest(text.toString('utf8'));
  if (m.name === name) return files;
  m.name = name;
  return new Map([...files, [MANIFEST_FILE, Buffer.from(serializeManifest(m))]]);
}
