/**
 * Issue 34: the working tree written from the object store (shared/managed-sources/checkout.ts over
 * shared/git/object-reader.ts) holds exactly what Git checks out, deltified packs included; a later
 * commit is applied in place (untouched files keep their inode), a file that becomes a folder still
 * works, and the file list read from the commit's trees comes in the order a walk of the folder gives.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkoutFiles, materializeCheckout } from '../../shared/managed-sources/checkout.js';
import { listFiles } from '../../shared/managed-sources/git.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'checkout-test-'));
const bare = path.join(work, 'repo.git');
const workdir = path.join(work, 'checkout');
afterAll(() => rmSync(work, { recursive: true, force: true }));

const git = (...args: string[]) => execFileSync('git', ['--git-dir', bare, ...args], { encoding: 'utf8' });

/** Commits `files` (path → text, null removes) on `main` with fast-import; answers the commit. */
function commit(files: Record<string, string | null>, n: number): string {
  const parent = n > 0 ? [`from ${git('rev-parse', 'main').trim()}`] : [];
  const lines = ['commit refs/heads/main', `committer T <t@example.com> ${1_700_000_000 + n} +0000`, 'data 1', 'c'];
  lines.push(...parent);
  for (const [file, text] of Object.entries(files)) {
    if (text === null) lines.push(`D ${file}`);
    else lines.push(`M 100644 inline ${file}`, `data ${Buffer.byteLength(text)}`, text);
  }
  execFileSync('git', ['--git-dir', bare, 'fast-import', '--quiet'], { input: `${lines.join('\n')}\n` });
  // Packed with deltas, as a fetch leaves the objects.
  git('repack', '-adfq', '--depth=10', '--window=50');
  return git('rev-parse', 'main').trim();
}

/** Every file Git's own checkout of `oid` writes, with its text. */
function gitFiles(oid: string, exclude: (f: string) => boolean = () => false): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of git('ls-tree', '-r', '--name-only', oid).split('\n').filter(Boolean))
    if (!exclude(f)) out[f] = git('cat-file', 'blob', `${oid}:${f}`);
  return out;
}

async function treeFiles(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const f of listFiles(workdir)) out[f] = readFileSync(path.join(workdir, f), 'utf8');
  return out;
}

const body = (i: number) => `file ${i}\n${'lorem ipsum dolor sit amet '.repeat(20)}\n`;

describe('managed-source checkout from the object store', () => {
  it('writes what git checks out, then applies a later commit in place', async () => {
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    const first: Record<string, string> = { 'README.md': '# r\n', 'big/blob.bin': 'x'.repeat(5000) };
    for (let i = 0; i < 60; i++) first[`src/m${i % 5}/f${i}.txt`] = body(i);
    const c1 = commit(first, 0);
    const rules = ['big/'];
    const r1 = await materializeCheckout({ gitdir: bare, commitSha: c1, workdir, checkoutExclude: rules, tag: 'a' });
    expect(r1).toEqual({ files: 61, excluded: 1 });
    expect(await treeFiles()).toEqual(gitFiles(c1, (f) => f.startsWith('big/')));

    const untouched = statSync(path.join(workdir, 'src/m1/f1.txt')).ino;
    const c2 = commit({ 'src/m0/f0.txt': 'changed\n', 'src/m2/f2.txt': null, 'new/added.txt': 'new\n' }, 1);
    const r2 = await materializeCheckout({ gitdir: bare, commitSha: c2, workdir, checkoutExclude: rules, tag: 'b' });
    expect(r2).toEqual({ files: 61, excluded: 1 });
    expect(await treeFiles()).toEqual(gitFiles(c2, (f) => f.startsWith('big/')));
    expect(statSync(path.join(workdir, 'src/m1/f1.txt')).ino).toBe(untouched);

    // A file that becomes a folder cannot be applied in place: a fresh tree is written instead.
    const c3 = commit({ 'README.md': null, 'README.md/inner.txt': 'inside\n' }, 2);
    await materializeCheckout({ gitdir: bare, commitSha: c3, workdir, checkoutExclude: rules, tag: 'c' });
    expect(await treeFiles()).toEqual(gitFiles(c3, (f) => f.startsWith('big/')));

    const walked: string[] = [];
    for await (const f of listFiles(workdir)) walked.push(f);
    expect(await checkoutFiles(workdir, bare, rules)).toEqual(walked);
    // Other rules than the tree was written with: the list is not known from the trees.
    expect(await checkoutFiles(workdir, bare, [])).toBeNull();
  });
});
