/**
 * Issue 34: a fetched pack is indexed natively (shared/git/pack-index.ts, behind isomorphic-git's fetch
 * through shared/git/fetch-pack.ts). The index is byte for byte what `git index-pack` writes (offset and
 * ref deltas), a thin pack resolves its bases from the store, a corrupted pack is refused, and a sync's
 * fetch and checkout over smart HTTP leave a store `git fsck` accepts and a working tree equal to
 * `git archive` of the commit, for the first (shallow) fetch and a later one.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectReader } from '../../shared/git/object-reader.js';
import { indexPack } from '../../shared/git/pack-index.js';
import { refListingOnce, splitUploadPack } from '../../shared/git/fetch-pack.js';
import { checkoutListing } from '../../shared/managed-sources/checkout.js';
import { authHeaders, egressGitHttp, fetchRef, listFiles, resolveRemoteRef } from '../../shared/managed-sources/git.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';

const AUTH = { username: 'bot', password: 'pack-token' };
const work = mkdtempSync(path.join(os.tmpdir(), 'fetch-pack-test-'));
let server: GitServer;
beforeAll(async () => {
  server = await startGitServer(AUTH);
});
afterAll(async () => {
  await server.close();
  rmSync(work, { recursive: true, force: true });
});

const git = (gitdir: string, args: string[], input?: string | Buffer) =>
  execFileSync('git', ['--git-dir', gitdir, ...args], { input, maxBuffer: 1 << 28 });

const body = (i: number, round: number) => `file ${i} (round ${round})\n${'lorem ipsum dolor sit amet '.repeat(12)}\n`;

/** Commits `files` (path → [mode, text], null removes) on `main` of `bare` with fast-import; answers the commit. */
function commit(bare: string, files: Record<string, [string, string] | null>, n: number): string {
  const lines = ['commit refs/heads/main', `committer T <t@example.com> ${1_700_000_000 + n} +0000`, 'data 1', 'c'];
  if (n > 0) lines.push(`from ${git(bare, ['rev-parse', 'main']).toString().trim()}`);
  for (const [file, entry] of Object.entries(files)) {
    if (entry === null) lines.push(`D ${file}`);
    else lines.push(`M ${entry[0]} inline ${file}`, `data ${Buffer.byteLength(entry[1])}`, entry[1]);
  }
  git(bare, ['fast-import', '--quiet'], `${lines.join('\n')}\n`);
  return git(bare, ['rev-parse', 'main']).toString().trim();
}

/** Files of a commit as `git archive` writes them: path → text and whether it is executable. */
function archived(bare: string, oid: string): Record<string, { text: string; exec: boolean }> {
  const dir = mkdtempSync(path.join(work, 'archive-'));
  execFileSync('tar', ['-x', '-C', dir], { input: git(bare, ['archive', '--format=tar', oid]), maxBuffer: 1 << 28 });
  return filesUnder(dir);
}

function filesUnder(dir: string): Record<string, { text: string; exec: boolean }> {
  const out: Record<string, { text: string; exec: boolean }> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(child);
      else {
        const abs = path.join(dir, child);
        out[child] = { text: readFileSync(abs, 'utf8'), exec: (statSync(abs).mode & 0o100) !== 0 };
      }
    }
  };
  walk('');
  return out;
}

function packFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.pack'))
    .map((n) => path.join(dir, n));
}

describe('native pack indexing', () => {
  it('writes the index git index-pack writes, for offset and ref deltas; a thin pack takes its bases from the store', async () => {
    const bare = path.join(work, 'index.git');
    git(bare, ['init', '-q', '--bare', '-b', 'main'], undefined);
    const files: Record<string, [string, string]> = {};
    // Each text one line from the one before: git packs them as chains of deltas.
    const text = (i: number) =>
      Array.from({ length: 120 }, (_, k) => `line ${k} ${k < i ? 'changed text here' : 'original words'}\n`).join('');
    for (let i = 0; i < 120; i++) files[`src/m${i % 7}/f${i}.txt`] = ['100644', text(i)];
    const first = commit(bare, files, 0);
    git(bare, ['repack', '-adfq', '--depth=20', '--window=50']);
    const [ofsPack] = packFiles(path.join(bare, 'objects', 'pack'));
    const ofsIdx = await indexPack(readFileSync(ofsPack!));
    expect(ofsIdx.equals(readFileSync(ofsPack!.replace(/\.pack$/, '.idx')))).toBe(true);
    expect(git(bare, ['verify-pack', '-v', ofsPack!]).toString()).toMatch(/chain length = 10:/);

    // Without --delta-base-offset pack-objects writes ref deltas (base named by oid).
    const refDir = path.join(work, 'ref');
    mkdirSync(refDir);
    const refPack = git(bare, ['pack-objects', '--stdout', '--revs', '--window=50', '--depth=20'], `${first}\n`);
    writeFileSync(path.join(refDir, 'p.pack'), refPack);
    execFileSync('git', ['index-pack', '-o', path.join(refDir, 'p.idx'), path.join(refDir, 'p.pack')]);
    expect((await indexPack(refPack)).equals(readFileSync(path.join(refDir, 'p.idx')))).toBe(true);

    // A thin pack of a later commit: its deltas' bases are objects of the commit before, outside the pack
    // (files unlike each other, each changed by one line).
    const unlike = (i: number) =>
      Array.from({ length: 40 }, (_, k) => `${createHash('sha1').update(`${i}:${k}`).digest('hex')}\n`).join('');
    const own: Record<string, [string, string]> = {};
    for (let i = 0; i < 30; i++) own[`own/f${i}.txt`] = ['100644', unlike(i)];
    const base = commit(bare, own, 1);
    const changed: Record<string, [string, string]> = {};
    for (let i = 0; i < 30; i += 2) changed[`own/f${i}.txt`] = ['100644', `${unlike(i)}appended\n`];
    const second = commit(bare, changed, 2);
    const thin = git(bare, ['pack-objects', '--stdout', '--revs', '--thin'], `${second}\n^${base}\n`);
    const reader = new ObjectReader(bare);
    try {
      await expect(indexPack(thin)).rejects.toThrow(/base is missing/);
      const idx = await indexPack(thin, { external: (oid) => reader.read(oid) });
      const count = idx.readUInt32BE(8 + 255 * 4);
      const listed = new Set<string>();
      for (let i = 0; i < count; i++) listed.add(idx.toString('hex', 8 + 1024 + i * 20, 8 + 1024 + (i + 1) * 20));
      const expected = git(bare, ['rev-list', '--objects', second, `^${base}`])
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((line) => line.slice(0, 40));
      expect([...listed].sort()).toEqual([...new Set(expected)].sort());
    } finally {
      reader.close();
    }

    const corrupt = Buffer.from(refPack);
    corrupt[corrupt.length - 100] ^= 0xff;
    await expect(indexPack(corrupt)).rejects.toThrow(/checksum/);
  });

  it('leaves an upload-pack response without a pack or with an error band to isomorphic-git', () => {
    const line = (text: string | Buffer) => {
      const payload = Buffer.isBuffer(text) ? text : Buffer.from(text);
      return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
    };
    expect(splitUploadPack(Buffer.concat([line('NAK\n'), Buffer.from('0000')]))).toBeNull();
    const error = Buffer.concat([line('NAK\n'), line(Buffer.concat([Buffer.from([3]), Buffer.from('boom')]))]);
    expect(splitUploadPack(error)).toBeNull();
    expect(splitUploadPack(Buffer.from('PACK not a pkt-line stream'))).toBeNull();
  });
});

describe('a sync fetch over smart HTTP', () => {
  it('stores packs git accepts and checks out what git archive holds, first and later commits', async () => {
    const bare = path.join(server.root, 'synced.git');
    git(bare, ['init', '-q', '--bare', '-b', 'main']);
    const files: Record<string, [string, string]> = { 'bin/run.sh': ['100755', '#!/bin/sh\necho run\n'] };
    for (let i = 0; i < 300; i++) files[`${i % 4 === 0 ? 'docs' : `src/m${i % 9}`}/f${i}.md`] = ['100644', body(i, 0)];
    for (let c = 0; c < 3; c++) commit(bare, c === 0 ? files : { [`extra/c${c}.txt`]: ['100644', body(c, c)] }, c);
    const egress = egressGitHttp({ allowPrivate: true, allowLoopback: true });
    let listings = 0;
    const counted = {
      request: (req: Parameters<typeof egress.request>[0]) => {
        if (req.url.includes('/info/refs')) listings++;
        return egress.request(req);
      },
    };
    const url = `${server.url}/synced.git`;
    const headers = authHeaders({ kind: 'basic', username: AUTH.username, secret: AUTH.password });
    const gitdir = path.join(work, 'source', 'repo.git');
    const workdir = path.join(work, 'source', 'checkout');
    // As a sync runs: one client for the resolve and the fetch (the ref listing read once), the checkout
    // given the objects the fetch indexed.
    const sync = async (tag: string) => {
      const remote = { http: refListingOnce(counted), url, headers };
      listings = 0;
      const resolved = await resolveRemoteRef({ ...remote, releaseRef: 'main' });
      const fetched = await fetchRef({ ...remote, gitdir, resolved });
      expect(listings).toBe(1);
      const input = { gitdir, commitSha: resolved.commitSha, workdir, checkoutExclude: [], tag, fetched };
      return { commit: resolved.commitSha, listing: await checkoutListing(input), fetched };
    };

    const first = await sync('a');
    expect(filesUnder(workdir)).toEqual(archived(bare, first.commit));
    expect(first.listing.files).toBe(303);
    expect(first.fetched.get(first.commit)?.type).toBe('commit');
    expect(first.fetched.size).toBeGreaterThan(303);
    git(gitdir, ['fsck', '--full', '--no-dangling']);
    const packs = packFiles(path.join(gitdir, 'objects', 'pack'));
    expect(packs).toHaveLength(1);
    for (const pack of packs) git(gitdir, ['verify-pack', pack]);

    const changed: Record<string, [string, string] | null> = { 'docs/f0.md': null, 'src/m1/f1.md': null };
    for (let i = 2; i < 300; i += 25)
      changed[`${i % 4 === 0 ? 'docs' : `src/m${i % 9}`}/f${i}.md`] = ['100644', body(i, 9)];
    changed['bin/run.sh'] = ['100644', 'not executable any more\n'];
    const later = commit(bare, changed, 3);
    const second = await sync('b');
    expect(second.commit).toBe(later);
    expect(filesUnder(workdir)).toEqual(archived(bare, later));
    const walked: string[] = [];
    for await (const f of listFiles(workdir)) walked.push(f);
    expect(walked.sort()).toEqual([...second.listing.paths].sort());
    git(gitdir, ['fsck', '--full', '--no-dangling']);
    for (const pack of packFiles(path.join(gitdir, 'objects', 'pack'))) git(gitdir, ['verify-pack', pack]);
    expect(packFiles(path.join(gitdir, 'objects', 'pack'))).toHaveLength(2);
  });

  it('a ref listing handed on to another client (the local activity to managedSyncPrepare) is not read again', async () => {
    const bare = path.join(server.root, 'handed.git');
    git(bare, ['init', '-q', '--bare', '-b', 'main']);
    const head = commit(bare, { 'a.txt': ['100644', 'a\n'], 'docs/b.md': ['100644', '# b\n'] }, 0);
    const egress = egressGitHttp({ allowPrivate: true, allowLoopback: true });
    const requests: string[] = [];
    const counted = {
      request: (req: Parameters<typeof egress.request>[0]) => {
        requests.push(req.url);
        return egress.request(req);
      },
    };
    const url = `${server.url}/handed.git`;
    const headers = authHeaders({ kind: 'basic', username: AUTH.username, secret: AUTH.password });
    const first = refListingOnce(counted);
    expect(first.listing()).toBeNull();
    const resolved = await resolveRemoteRef({ http: first, url, headers, releaseRef: 'main' });
    expect(resolved.commitSha).toBe(head);
    const listing = first.listing();
    expect(listing).toMatchObject({ statusCode: 200 });
    // Through JSON, as an activity's result travels.
    const second = refListingOnce(counted, JSON.parse(JSON.stringify(listing)));
    const again = await resolveRemoteRef({ http: second, url, headers, releaseRef: 'main' });
    expect(again).toEqual(resolved);
    const gitdir = path.join(work, 'handed', 'repo.git');
    await fetchRef({ http: second, url, headers, gitdir, resolved });
    expect(requests.filter((u) => u.includes('/info/refs'))).toHaveLength(1);
    expect(requests.filter((u) => u.endsWith('/git-upload-pack'))).toHaveLength(1);
    git(gitdir, ['fsck', '--full', '--no-dangling']);
  });
});
