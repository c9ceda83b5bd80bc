/**
 * The working tree of a managed source: the release commit's files with `checkout_exclude` applied.
 * A first checkout (or one after the rules changed) writes a fresh folder and swaps it in; a later one
 * applies only the files that differ from the commit the tree holds (recorded beside it in
 * `checkout.json`), each written to a temporary name first, so a failure leaves the previous tree.
 * Blobs are read through `ObjectReader` (native inflate over the fetched packs).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  ObjectReader,
  commitFiles,
  readObject,
  type CommitFiles as Plan,
  type GitObject,
} from '../git/object-reader.js';
import { timeSlices } from '../git/time-slices.js';
import { GitSyncCodes } from './error-codes.js';
import { GitSyncError, effectiveRules, gitignoreMatcher, rulesHash } from './git.js';

/** What the working tree holds, written after it is complete and removed before it is changed. */
interface Marker {
  commit: string;
  rules: string;
}

/**
 * Writes the blobs of `paths` under `root` (each at `target(rel)`), creating each folder once. Files
 * are written synchronously in the packs' order (each delta's base read just before), returning to
 * the event loop between slices: per file an open, a write and a close, with none of the promise and
 * file-handle work of `fs/promises` (which cost more CPU than the writes' own system calls).
 */
async function writeBlobs(
  reader: ObjectReader,
  root: string,
  plan: Plan,
  paths: readonly string[],
  target: (abs: string) => string,
): Promise<void> {
  const pause = timeSlices();
  const dirs = new Set(paths.map((rel) => path.dirname(path.join(root, ...rel.split('/')))));
  for (const dir of [...dirs].sort()) {
    await pause();
    mkdirSync(dir, { recursive: true });
  }
  for (const rel of reader.packOrder(paths, (p) => plan.files.get(p)!.oid)) {
    await pause();
    const entry = plan.files.get(rel)!;
    writeFileSync(target(path.join(root, ...rel.split('/'))), readObject(reader, entry.oid, 'blob'), {
      mode: entry.mode === '100755' ? 0o755 : 0o644,
    });
  }
}

function markerPath(workdir: string): string {
  return path.join(path.dirname(workdir), 'checkout.json');
}

async function readMarker(workdir: string): Promise<Marker | null> {
  try {
    return JSON.parse(await readFile(markerPath(workdir), 'utf8')) as Marker;
  } catch {
    return null;
  }
}

/**
 * The commit and checkout rules the working tree holds (`checkout.json`, as one string that changes
 * whenever the tree does), or null while it is being changed or was never written.
 */
export async function checkoutState(workdir: string): Promise<string | null> {
  const marker = await readMarker(workdir);
  return marker ? `${marker.commit}:${marker.rules}` : null;
}

const collator = new Intl.Collator();

/** Paths in the order `listFiles` walks them (each folder's names sorted with `localeCompare`, depth first). */
export function walkOrder(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return collator.compare(x[i]!, y[i]!);
  return x.length - y.length;
}

/**
 * The working tree's files as the checkout wrote them, read from the commit's trees instead of walking
 * the folder, in `listFiles` order; null when the tree's commit is unknown or other rules wrote it.
 */
export async function checkoutFiles(
  workdir: string,
  gitdir: string,
  checkoutExclude: readonly string[],
): Promise<string[] | null> {
  const marker = await readMarker(workdir);
  if (!marker || marker.rules !== rulesHash(checkoutExclude)) return null;
  const reader = new ObjectReader(gitdir);
  try {
    return [...commitFiles(reader, marker.commit, gitignoreMatcher(checkoutExclude)).files.keys()].sort(walkOrder);
  } finally {
    reader.close();
  }
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** True when a path of one side is a folder of the other (a file became a folder or back): only a fresh tree handles it. */
function shapeChanged(a: Plan, b: Plan): boolean {
  const clash = (from: Plan, to: Plan) => {
    for (const rel of to.files.keys()) {
      for (let i = rel.indexOf('/'); i !== -1; i = rel.indexOf('/', i + 1))
        if (from.files.has(rel.slice(0, i))) return true;
    }
    return false;
  };
  return clash(a, b) || clash(b, a);
}

/** Applies the difference between the tree's commit and `plan` in place; false when it cannot (then a fresh tree is written). */
async function applyDifference(
  reader: ObjectReader,
  workdir: string,
  previous: Plan,
  plan: Plan,
  tag: string,
): Promise<boolean> {
  if (shapeChanged(previous, plan)) return false;
  const changed = [...plan.files].filter(([rel, e]) => {
    const old = previous.files.get(rel);
    return !old || old.oid !== e.oid || old.mode !== e.mode;
  });
  const removed = [...previous.files.keys()].filter((rel) => !plan.files.has(rel));
  const temp = (abs: string) => `${abs}.sync-${tag}`;
  const paths = changed.map(([rel]) => rel);
  try {
    await writeBlobs(reader, workdir, plan, paths, temp);
  } catch (err) {
    await Promise.all(paths.map((rel) => rm(temp(path.join(workdir, ...rel.split('/'))), { force: true })));
    throw err;
  }
  await rm(markerPath(workdir), { force: true });
  for (const rel of paths) {
    const abs = path.join(workdir, ...rel.split('/'));
    await rename(temp(abs), abs);
  }
  for (const rel of removed) {
    const abs = path.join(workdir, ...rel.split('/'));
    await unlink(abs).catch(() => undefined);
    // Folders left empty go too, as Git leaves none.
    for (let dir = path.dirname(abs); dir.startsWith(`${workdir}${path.sep}`); dir = path.dirname(dir))
      if (
        !(await rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
  }
  return true;
}

/** Writes a fresh tree beside `workdir` and swaps it in. */
async function writeFresh(reader: ObjectReader, workdir: string, plan: Plan, tag: string): Promise<void> {
  const temp = `${workdir}.tmp-${tag}`;
  await rm(temp, { recursive: true, force: true });
  await mkdir(temp, { recursive: true });
  try {
    await writeBlobs(reader, temp, plan, [...plan.files.keys()], (abs) => abs);
  } catch (err) {
    await rm(temp, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
  await rm(markerPath(workdir), { force: true });
  const old = `${workdir}.old-${tag}`;
  const hadPrevious = await exists(workdir);
  if (hadPrevious) await rename(workdir, old);
  await rename(temp, workdir);
  if (hadPrevious) await rm(old, { recursive: true, force: true });
}

/**
 * Writes the commit's tree into the working tree `workdir`, leaving out paths the `checkout_exclude`
 * rules match; a failure leaves the previous working tree. Symbolic links and submodules are not
 * materialised. Answers the files the commit checks out and the paths the rules left out.
 */
export async function materializeCheckout(input: {
  gitdir: string;
  commitSha: string;
  workdir: string;
  checkoutExclude: readonly string[];
  tag: string;
}): Promise<{ files: number; excluded: number }> {
  const { files, excluded } = await checkoutListing(input);
  return { files, excluded };
}

/**
 * `materializeCheckout`, answering also the paths it checked out (in tree order: the scan needs no
 * other); `fetched`: objects the fetch just received (`fetchRef`), used without reading the pack.
 */
export async function checkoutListing(
  input: Parameters<typeof materializeCheckout>[0] & { fetched?: ReadonlyMap<string, GitObject> },
): Promise<{ files: number; excluded: number; paths: string[] }> {
  const excluded = gitignoreMatcher(input.checkoutExclude);
  const rules = rulesHash(input.checkoutExclude);
  const reader = new ObjectReader(input.gitdir, input.fetched);
  const hadPrevious = await exists(input.workdir);
  try {
    const plan = commitFiles(reader, input.commitSha, excluded);
    const marker = hadPrevious ? await readMarker(input.workdir) : null;
    const previous =
      marker?.rules === rules && reader.read(marker.commit) ? commitFiles(reader, marker.commit, excluded) : null;
    if (!previous || !(await applyDifference(reader, input.workdir, previous, plan, input.tag)))
      await writeFresh(reader, input.workdir, plan, input.tag);
    const written: Marker = { commit: input.commitSha, rules };
    reader.close();
    await writeFile(markerPath(input.workdir), JSON.stringify(written));
    return { files: plan.files.size, excluded: plan.excluded, paths: [...plan.files.keys()] };
  } catch (err) {
    reader.close();
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const sparse = effectiveRules(input.checkoutExclude).length > 0;
    if (hadPrevious)
      throw new GitSyncError(
        GitSyncCodes.MANAGED_CHECKOUT_DEGRADED,
        `The working tree of commit ${input.commitSha} could not be written (${why}); the previous working tree stays in place, so reads show the previously synced commit until a sync succeeds${sparse ? ' (add a checkout_exclude rule for the offending path)' : ''}.`,
      );
    throw new GitSyncError(
      sparse ? GitSyncCodes.SPARSE_CHECKOUT_APPLY_FAILED : GitSyncCodes.CHECKOUT_FAILED,
      `The working tree of commit ${input.commitSha} could not be written (${why}); nothing was checked out${sparse ? ' (the checkout_exclude rules were not enough to leave the offending path out)' : ''}.`,
    );
  }
}
