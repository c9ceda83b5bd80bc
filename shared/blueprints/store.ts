/**
 * Blueprint storage. Each custom blueprint is a row of `blueprints` (identity, name, owner) and a Git
 * repository (isomorphic-git) whose working tree is the blueprint's working copy: the repository for
 * blueprint `bp_…` of tenant `t` is `<blueprints.dir>/<t>/<bp_…>/`, so a rename never moves files
 * and `GET .../history` is the log of that repository. Every write to one blueprint runs inside a
 * transaction holding a PostgreSQL advisory lock on its id (`lockBlueprint`), so two writers (API
 * replicas, the worker) never interleave; each write is one commit authored by the acting user.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { lstat, mkdir, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import git from 'isomorphic-git';
import type { Principal } from '../auth/principal.js';
import { ConflictError, NotFoundError, ServiceUnavailableError } from '../errors.js';
import { findDefault, type DefaultBlueprint } from './defaults.js';
import {
  isSafeRelativePath,
  MANIFEST_FILE,
  parseManifest,
  serializeManifest,
  type BlueprintManifest,
} from './manifest.js';
import { sql } from '../db/sql.js';
import { BlueprintCodes } from './error-codes.js';
import { ObjectReader, commitFiles, readObject } from '../git/object-reader.js';
import { PackBlobReader } from '../git/pack-blobs.js';
import { PackWriter, writeIndex, type IndexEntry } from '../git/pack-writer.js';
import { timeSlices } from '../git/time-slices.js';

export interface BlueprintRow {
  blueprint_id: string;
  tenant: string;
  name: string;
  created_by: string | null;
  /** Deleted while missions referenced it: out of the inventory, still resolvable by name for those missions. */
  hidden: boolean;
  /** Remote-backed (shared/blueprints/remote.ts): the managed source, directory and commit it was synced from. */
  source_id?: string | null;
  source_path?: string | null;
  source_commit?: string | null;
  /** A rename through a pull request waiting for the merge and the next sync (`PendingRename`). */
  pending_rename?: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

/** A custom blueprint (a row and its working copy) or a built-in default (code only). */
export type Resolved =
  | { kind: 'custom'; row: BlueprintRow; dir: string; manifest: BlueprintManifest }
  | { kind: 'default'; def: DefaultBlueprint; manifest: BlueprintManifest };

export function newBlueprintId(): string {
  return `bp_${randomBytes(8).toString('hex')}`;
}

export function repoDir(root: string, tenant: string, blueprintId: string): string {
  return path.join(root, encodeURIComponent(tenant), blueprintId);
}
/** Serialises writers of one blueprint (call inside a transaction). */
export async function lockBlueprint(tx: EntityManager, key: string): Promise<void> {
  await sql(tx, `select pg_advisory_xact_lock(hashtextextended(?, 14))`, [key]);
}

/**
 * The blueprint's lock, then proof that it still exists. A request that resolved the blueprint before a
 * delete committed (the delete removes the row and the working copy under this same lock) finds it gone
 * here and answers 404, as it would have a moment later, instead of failing on the missing files.
 */
export async function lockLiveBlueprint(tx: EntityManager, b: { row: BlueprintRow; name: string }): Promise<void> {
  await lockBlueprint(tx, b.row.blueprint_id);
  const [live] = await sql(tx, `select 1 as live from blueprints where blueprint_id = ?`, [b.row.blueprint_id]);
  if (!live) throw new NotFoundError(`No blueprint named "${b.name}" (it was deleted).`, { blueprint_name: b.name });
}

/** The tenant's visible blueprints (hidden ones, deleted while missions referenced them, left out). */
export async function listRows(em: EntityManager, tenant: string): Promise<BlueprintRow[]> {
  return sql<BlueprintRow>(em, `select * from blueprints where tenant = ? and not hidden order by name`, [tenant]);
}

/** How many missions (`projects` rows) reference a blueprint; with `inFlight`, only running or paused ones. */
export async function missionCount(em: EntityManager, blueprintId: string, inFlight: boolean): Promise<number> {
  const rows = await sql<{ n: string | number }>(
    em,
    `select count(*) as n from projects where blueprint_id = ?${inFlight ? ` and status in ('running', 'paused')` : ''}`,
    [blueprintId],
  );
  return Number(rows[0]?.n ?? 0);
}

export async function findRow(em: EntityManager, tenant: string, name: string): Promise<BlueprintRow | undefined> {
  const rows = await sql<BlueprintRow>(em, `select * from blueprints where tenant = ? and name = ?`, [tenant, name]);
  return rows[0];
}

export async function findRowById(em: EntityManager, tenant: string, id: string): Promise<BlueprintRow | undefined> {
  const rows = await sql<BlueprintRow>(em, `select * from blueprints where tenant = ? and blueprint_id = ?`, [
    tenant,
    id,
  ]);
  return rows[0];
}

export async function readManifestAt(dir: string): Promise<BlueprintManifest> {
  let text: string;
  try {
    text = await readFile(path.join(dir, MANIFEST_FILE), 'utf8');
  } catch (err) {
    // The row exists but its working copy does not: the blueprints volume is not mounted (or not
    // shared between API and worker). An operator problem, answered as such rather than as a 500.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ServiceUnavailableError(
        'blueprint_storage',
        'The blueprint storage (PLATFORM_BLUEPRINTS_DIR) does not hold this blueprint; check that its volume is mounted.',
      );
    throw err;
  }
  return parseManifest(text);
}

/** A blueprint by name (custom first, then defaults), or 404. */
export async function resolveBlueprint(
  em: EntityManager,
  root: string,
  tenant: string,
  name: string,
): Promise<Resolved> {
  const row = await findRow(em, tenant, name);
  if (row) {
    const dir = repoDir(root, tenant, row.blueprint_id);
    return { kind: 'custom', row, dir, manifest: await readManifestAt(dir) };
  }
  const def = findDefault(name);
  if (def) return { kind: 'default', def, manifest: def.manifest };
  throw new NotFoundError(`No blueprint named "${name}".`, { blueprint_name: name });
}

export function identityOf(b: Resolved): string {
  return b.kind === 'custom' ? b.row.blueprint_id : b.def.blueprint_id;
}

function author(principal: Principal) {
  return { name: principal.displayName || principal.id, email: `${principal.id}@users.platform.invalid` };
}

/** Every regular file of a working copy (relative paths, `.git` excluded), sorted. */
export async function listWorkingFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(rel: string): Promise<void> {
    for (const ent of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${ent.name}` : ent.name;
      if (!rel && ent.name === '.git') continue;
      if (ent.isDirectory()) await walk(p);
      else if (ent.isFile()) out.push(p);
    }
  }
  await walk('');
  return out.sort();
}

/** SHA-256 over the sorted `path NUL sha256(content)` lines of the working copy. */
export async function workingCopyFingerprint(dir: string): Promise<string> {
  const h = createHash('sha256');
  for (const f of await listWorkingFiles(dir)) {
    const fileHash = createHash('sha256')
      .update(await readFile(path.join(dir, f)))
      .digest('hex');
    h.update(`${f}\0${fileHash}\n`);
  }
  return h.digest('hex');
}

/** Stages every change of the working tree and commits it; answers the commit id, or null when nothing changed. */
export async function commitAll(dir: string, principal: Principal, message: string): Promise<string | null> {
  const matrix = await git.statusMatrix({ fs, dir });
  const added: string[] = [];
  const removed: string[] = [];
  for (const [filepath, head, workdir, stage] of matrix) {
    if (head === 1 && workdir === 1 && stage === 1) continue;
    if (workdir === 0) removed.push(filepath);
    else added.push(filepath);
  }
  if (added.length === 0 && removed.length === 0) return null;
  for (const filepath of removed) await git.remove({ fs, dir, filepath });
  await addAll(dir, added);
  return git.commit({ fs, dir, author: author(principal), message });
}

/**
 * Stages files with few index updates (one `add` call per batch of paths): an `add` per file re-reads
 * and re-writes the whole index each time, quadratic in the file count (2,000 files: most of an
 * import's time). isomorphic-git hashes the paths of one call concurrently (its `parallel` option only
 * governs folders), so the batch size bounds how many files' bytes are in memory at once.
 */
const ADD_BATCH = 32;
async function addAll(dir: string, filepaths: string[]): Promise<void> {
  for (let i = 0; i < filepaths.length; i += ADD_BATCH)
    await git.add({ fs, dir, filepath: filepaths.slice(i, i + ADD_BATCH), parallel: false });
}

/** Writes files (relative path → bytes) into a working copy; with `replaceAll`, files not named are removed. */
export async function writeWorkingFiles(
  dir: string,
  files: Map<string, Buffer | string>,
  replaceAll: boolean,
): Promise<void> {
  if (replaceAll) {
    for (const f of await listWorkingFiles(dir)) if (!files.has(f)) await rm(path.join(dir, f), { force: true });
  }
  for (const [rel, data] of files) {
    if (!isSafeRelativePath(rel)) throw new Error(`unsafe path ${rel}`);
    const target = path.join(dir, rel);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, data);
  }
}

/** A file to write into a working copy, read when it is written (an archive member, one at a time). */
export interface SourceFile {
  path: string;
  /** The bytes and, when known, a raw deflate stream of exactly them (reused by the pack writer). */
  read: () => { content: Buffer | string; deflated?: Buffer | null };
}

/** Files of folder `srcDir` as sources, with `overrides` (relative path → bytes) replacing or adding files. */
export function folderSources(srcDir: string, names: string[], overrides: Map<string, Buffer | string>): SourceFile[] {
  const out: SourceFile[] = names
    .filter((rel) => !overrides.has(rel))
    .map((rel) => ({ path: rel, read: () => ({ content: fs.readFileSync(path.join(srcDir, rel)) }) }));
  for (const [rel, data] of overrides) out.push({ path: rel, read: () => ({ content: data }) });
  return out;
}

/** Creates the folders of working-copy files once each. */
function folderMaker(dir: string): (rel: string) => string {
  const made = new Set<string>();
  return (rel) => {
    if (!isSafeRelativePath(rel)) throw new Error(`unsafe path ${rel}`);
    const target = path.join(dir, rel);
    const folder = path.dirname(target);
    if (!made.has(folder)) fs.mkdirSync(folder, { recursive: true });
    made.add(folder);
    return target;
  };
}

/**
 * Writes `files` into a working copy, one read at a time; with `replaceAll`, working-copy files not
 * named are removed.
 */
export async function writeWorkingSources(
  dir: string,
  files: readonly SourceFile[],
  replaceAll: boolean,
): Promise<void> {
  const wanted = new Set(files.map((f) => f.path));
  if (replaceAll) {
    for (const f of await listWorkingFiles(dir)) if (!wanted.has(f)) await rm(path.join(dir, f), { force: true });
  }
  const target = folderMaker(dir);
  const slice = timeSlices();
  for (const f of files) {
    fs.writeFileSync(target(f.path), f.read().content);
    await slice();
  }
}

/** Initialises a new blueprint repository with the files of an extracted archive (see `initRepositoryFromSources`). */
export async function initRepositoryFrom(
  dir: string,
  principal: Principal,
  srcDir: string,
  names: string[],
  overrides: Map<string, Buffer | string>,
  message: string,
): Promise<string> {
  return initRepositoryFromSources(dir, principal, folderSources(srcDir, names, overrides), message);
}

/**
 * Initialises a new blueprint repository whose first commit holds `files`, each read once, written to
 * the working copy and into the pack (see `stageIntoPack`). On failure (a member that does not read as
 * declared) the folder is removed: nothing is left behind.
 */
export async function initRepositoryFromSources(
  dir: string,
  principal: Principal,
  files: readonly SourceFile[],
  message: string,
): Promise<string> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  try {
    await git.init({ fs, dir, defaultBranch: 'main' });
    const tree = await stageIntoPack(dir, files);
    return await git.commit({ fs, dir, author: author(principal), message, tree });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Writes `files` into the working tree of a fresh repository and their blobs into one pack, the index
 * in one write, the trees through isomorphic-git. Answers the root tree. One file's bytes are in memory
 * at a time (an import of 60 MiB through `add` batches held 124 MiB more at its peak, and took 5x
 * `unzip`); an archive member's deflate stream becomes the pack entry's as is.
 */
async function stageIntoPack(dir: string, files: readonly SourceFile[]): Promise<string> {
  const gitdir = path.join(dir, '.git');
  const sorted = [...files].sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  const folders = folderTree(sorted.map((f) => f.path));
  // Blobs and trees in one pack (the trees were 41 loose objects through isomorphic-git for the 2,000-file bench).
  const pack = new PackWriter(gitdir, sorted.length + folders.size);
  const entries: IndexEntry[] = [];
  const target = folderMaker(dir);
  const slice = timeSlices();
  let root: string;
  try {
    for (const f of sorted) {
      const abs = target(f.path);
      const { content, deflated } = f.read();
      const data = typeof content === 'string' ? Buffer.from(content) : content;
      fs.writeFileSync(abs, data, { flag: 'wx' });
      const oid = pack.addBlob(data, deflated ?? null);
      const stats = fs.lstatSync(abs);
      entries.push({ path: f.path, oid, stats });
      const cut = f.path.lastIndexOf('/');
      folders.get(cut === -1 ? '' : f.path.slice(0, cut))!.push({
        mode: stats.mode & 0o111 ? '100755' : '100644',
        name: f.path.slice(cut + 1),
        oid,
      });
      await slice();
    }
    root = writeTrees(pack, folders);
    pack.finish();
  } catch (err) {
    pack.abort();
    throw err;
  }
  writeIndex(gitdir, entries);
  return root;
}

type TreeItem = { mode: string; name: string; oid: string };

/** Every folder of `paths` ('' the root) with an empty entry list, parents included. */
function folderTree(paths: readonly string[]): Map<string, TreeItem[]> {
  const folders = new Map<string, TreeItem[]>([['', []]]);
  for (const p of paths) {
    for (let cut = p.lastIndexOf('/'); cut > 0; cut = p.lastIndexOf('/', cut - 1)) {
      const folder = p.slice(0, cut);
      if (folders.has(folder)) break;
      folders.set(folder, []);
    }
  }
  return folders;
}

/** Writes the trees of `folders` into the pack (deepest first, each entered in its parent); answers the root tree. */
function writeTrees(pack: PackWriter, folders: Map<string, TreeItem[]>): string {
  const depth = (p: string) => (p === '' ? 0 : p.split('/').length);
  let root = '';
  for (const p of [...folders.keys()].sort((a, b) => depth(b) - depth(a))) {
    const oid = pack.addTree(folders.get(p)!);
    if (p === '') root = oid;
    else {
      const cut = p.lastIndexOf('/');
      folders.get(cut === -1 ? '' : p.slice(0, cut))!.push({ mode: '40000', name: p.slice(cut + 1), oid });
    }
  }
  return root;
}

/** Initialises a new blueprint repository with its first commit. */
export async function initRepository(
  dir: string,
  principal: Principal,
  files: Map<string, Buffer | string>,
  message: string,
): Promise<string> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await git.init({ fs, dir, defaultBranch: 'main' });
  await writeWorkingFiles(dir, files, false);
  const oid = await commitAll(dir, principal, message);
  if (!oid) throw new Error('empty initial commit');
  return oid;
}

export async function insertRow(
  tx: EntityManager,
  row: { blueprint_id: string; tenant: string; name: string; created_by: string | null },
): Promise<void> {
  const rows = await sql<{ blueprint_id: string }>(
    tx,
    `insert into blueprints (blueprint_id, tenant, name, created_by) values (?, ?, ?, ?)
       on conflict (tenant, name) do nothing returning blueprint_id`,
    [row.blueprint_id, row.tenant, row.name, row.created_by],
  );
  if (!rows[0]) {
    throw new ConflictError(`A blueprint named "${row.name}" already exists.`, {
      code: BlueprintCodes.BLUEPRINT_NAME_TAKEN,
      blueprint_name: row.name,
    });
  }
}

export async function touchRow(tx: EntityManager, blueprintId: string): Promise<void> {
  await sql(tx, `update blueprints set updated_at = now() where blueprint_id = ?`, [blueprintId]);
}

export interface HistoryEntry {
  commit_id: string;
  message: string;
  author_name: string;
  author_id: string;
  committed_at: string;
}

export async function history(dir: string, limit: number): Promise<HistoryEntry[]> {
  const log = await git.log({ fs, dir, depth: limit });
  return log.map((c) => ({
    commit_id: c.oid,
    message: c.commit.message.trimEnd(),
    author_name: c.commit.author.name,
    author_id: c.commit.author.email.replace(/@users\.platform\.invalid$/, ''),
    committed_at: new Date(c.commit.author.timestamp * 1000).toISOString(),
  }));
}

/** Reads one working-copy file, refusing anything outside the working copy (traversal, symlinks, `.git`). */
export async function readWorkingFile(dir: string, rel: string): Promise<Buffer | null> {
  if (!isSafeRelativePath(rel)) return null;
  const target = path.join(dir, rel);
  try {
    const st = await lstat(target);
    if (!st.isFile()) return null;
    const real = await realpath(target);
    const base = await realpath(dir);
    if (!real.startsWith(base + path.sep)) return null;
    return await readFile(real);
  } catch {
    return null;
  }
}

export function manifestText(m: BlueprintManifest): string {
  return serializeManifest(m);
}

export { findDefault };

/** The commit the working copy's branch points at (every write ends in a commit, so this is the working copy). */
export async function headCommit(dir: string): Promise<string> {
  return git.resolveRef({ fs, dir, ref: 'HEAD' });
}

/** The files of one commit (relative paths, sorted like `listWorkingFiles`). */
export async function listCommitFiles(dir: string, commit: string): Promise<string[]> {
  return (await git.listFiles({ fs, dir, ref: commit })).sort();
}

/**
 * The files of one commit and a reader of their bytes for reading all of them (an export): trees walked
 * once (shared/git/object-reader.ts), and each blob one positioned read of its pack entry, inflated
 * natively, with its raw deflate stream for the archive to reuse (shared/git/pack-blobs.ts); a blob
 * stored as a delta or loose comes through the object reader, without a stream.
 */
export function commitBlobs(
  dir: string,
  commit: string,
): { files: string[]; read(file: string): { content: Buffer; deflated: Buffer | null }; close(): void } {
  const gitdir = path.join(dir, '.git');
  const reader = new ObjectReader(gitdir);
  let packed: PackBlobReader | null = null;
  try {
    const { files } = commitFiles(reader, commit);
    packed = new PackBlobReader(gitdir);
    const blobs = packed;
    return {
      files: [...files.keys()].sort(),
      read: (file) => {
        const oid = files.get(file)!.oid;
        return blobs.read(oid) ?? { content: readObject(reader, oid, 'blob'), deflated: null };
      },
      close: () => {
        reader.close();
        blobs.close();
      },
    };
  } catch (err) {
    reader.close();
    packed?.close();
    throw err;
  }
}

/** One file of one commit (a blob read from the object store; later writes to the working copy do not change it). */
export async function readCommitFile(dir: string, commit: string, filepath: string): Promise<Buffer> {
  const { blob } = await git.readBlob({ fs, dir, oid: commit, filepath });
  return Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
}
