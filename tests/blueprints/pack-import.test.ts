/**
 * Issue 34: an imported blueprint's files are staged into one pack with the index written once
 * (shared/git/pack-writer.ts). Git itself finds the repository sound and clean, isomorphic-git sees no
 * change, a later edit commits as before, and the export reader (`commitBlobs`) reads the blobs back,
 * object by object from a pack over 8 MiB.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs, { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import git from 'isomorphic-git';
import { afterAll, describe, expect, it } from 'vitest';
import { commitAll, commitBlobs, initRepositoryFrom } from '../../shared/blueprints/store.js';
import { principal } from './git-fixtures.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'pack-import-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('blueprint import staged into one pack', () => {
  it('git fsck passes, the tree is clean, edits commit, and the blobs read back', async () => {
    const src = path.join(work, 'src');
    const contents = new Map<string, Buffer>();
    // 9 files of 1 MiB (a pack over 8 MiB), small ones in nested folders, and two with the same bytes.
    for (let i = 0; i < 9; i++) contents.set(`large/part-${i}.bin`, randomBytes(1024 * 1024));
    for (let i = 0; i < 30; i++) contents.set(`part-${i % 3}/sub${i % 2}/file-${i}.txt`, Buffer.from(`file ${i}\n`));
    contents.set('same-a.txt', Buffer.from('same\n'));
    contents.set('same-b.txt', Buffer.from('same\n'));
    for (const [rel, data] of contents) {
      mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
      writeFileSync(path.join(src, rel), data);
    }
    const overrides = new Map([['blueprint_manifest.yaml', 'name: packed\n']]);
    const dir = path.join(work, 'repo');
    const commit = await initRepositoryFrom(dir, principal, src, [...contents.keys()], overrides, 'import');

    expect(readdirSync(path.join(dir, '.git', 'objects', 'pack')).filter((f) => f.endsWith('.pack'))).toHaveLength(1);
    execFileSync('git', ['-C', dir, 'fsck', '--full', '--strict']);
    expect(execFileSync('git', ['-C', dir, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
    const matrix = await git.statusMatrix({ fs, dir });
    expect(matrix.filter(([, head, workdir, stage]) => head !== 1 || workdir !== 1 || stage !== 1)).toEqual([]);
    expect(matrix).toHaveLength(contents.size + 1);

    const blobs = commitBlobs(dir, commit);
    try {
      expect(blobs.files).toEqual([...contents.keys(), 'blueprint_manifest.yaml'].sort());
      for (const [rel, data] of contents) expect(blobs.read(rel).content.equals(data)).toBe(true);
      expect(blobs.read('blueprint_manifest.yaml').content.toString()).toBe('name: packed\n');
    } finally {
      blobs.close();
    }

    writeFileSync(path.join(dir, 'same-a.txt'), 'edited\n');
    const edit = await commitAll(dir, principal, 'edit');
    expect(edit).not.toBeNull();
    expect(execFileSync('git', ['-C', dir, 'show', '--name-only', '--format=', edit!], { encoding: 'utf8' })).toBe(
      'same-a.txt\n',
    );
    execFileSync('git', ['-C', dir, 'fsck', '--full', '--strict']);
  });

  it('a pack without repeated contents is checksummed as written; text is deflated, random bytes stored', async () => {
    const src = path.join(work, 'src-unique');
    const contents = new Map<string, Buffer>();
    for (let i = 0; i < 3; i++) contents.set(`random/r${i}.bin`, randomBytes(64 * 1024));
    for (let i = 0; i < 3; i++)
      contents.set(`text/t${i}.txt`, Buffer.from(`text ${i}\n${'lorem ipsum dolor sit amet '.repeat(2500)}`));
    for (const [rel, data] of contents) {
      mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
      writeFileSync(path.join(src, rel), data);
    }
    const dir = path.join(work, 'repo-unique');
    const overrides = new Map([['blueprint_manifest.yaml', 'name: unique\n']]);
    const commit = await initRepositoryFrom(dir, principal, src, [...contents.keys()], overrides, 'import');
    const packDir = path.join(dir, '.git', 'objects', 'pack');
    const [pack] = readdirSync(packDir).filter((f) => f.endsWith('.pack'));
    execFileSync('git', ['verify-pack', path.join(packDir, pack!)]);
    execFileSync('git', ['-C', dir, 'fsck', '--full', '--strict']);
    expect(execFileSync('git', ['-C', dir, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
    const randomBytesTotal = 3 * 64 * 1024;
    const textTotal = [...contents].filter(([rel]) => rel.startsWith('text/')).reduce((n, [, d]) => n + d.length, 0);
    // Random bytes stored (about their size), text deflated to a small fraction of its size.
    const packSize = fs.statSync(path.join(packDir, pack!)).size;
    expect(packSize).toBeGreaterThan(randomBytesTotal);
    expect(packSize).toBeLessThan(randomBytesTotal + textTotal / 10);
    const blobs = commitBlobs(dir, commit);
    try {
      for (const [rel, data] of contents) expect(blobs.read(rel).content.equals(data)).toBe(true);
    } finally {
      blobs.close();
    }
  });
});
