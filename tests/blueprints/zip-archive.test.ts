/**
 * Issue 34: the blueprint ZIP reader and writer over node:zlib (shared/blueprints/zip.ts, zip-write.ts).
 * The reader reads what Info-ZIP writes (stored and deflated members, data descriptors when it writes
 * to a pipe, ZIP64 records when it streams), refuses a member whose CRC-32 or size does not match and
 * a truncated archive; the writer's archives pass `unzip -t` (ZIP64 forced too) and read back; the
 * import's pack (a deflated member's stream reused, trees in the pack) passes `git fsck --strict`.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { deflateRawSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { commitBlobs, initRepositoryFromSources } from '../../shared/blueprints/store.js';
import { UnsafeZipError, ZipArchive } from '../../shared/blueprints/zip.js';
import { zipStream, type ZipSource } from '../../shared/blueprints/zip-write.js';
import { zip as buildZip } from '../helpers/zip.js';
import { principal } from './git-fixtures.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'zip-archive-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const LOCAL = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const text = (n: number) => Buffer.from(`line ${n}: lorem ipsum dolor sit amet\n`.repeat(200 + n));

/** Files under a fresh folder, and the archive of them that the shell command (run there) writes to `$OUT`. */
function zipWithShell(label: string, files: Map<string, Buffer>, command: string): string {
  const src = path.join(work, `${label}-src`);
  for (const [rel, data] of files) {
    mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
    writeFileSync(path.join(src, rel), data);
  }
  const out = path.join(work, `${label}.zip`);
  execFileSync('sh', ['-c', command], { cwd: src, env: { ...process.env, OUT: out } });
  return out;
}

function readAll(file: string): Map<string, Buffer> {
  const z = ZipArchive.open(file);
  try {
    return new Map(z.members.map((m) => [m.name, z.read(m).content]));
  } finally {
    z.close();
  }
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof UnsafeZipError) return err.reason;
    throw err;
  }
  return 'accepted';
}

async function writeZip(sources: ZipSource[], file: string, forceZip64 = false): Promise<void> {
  const chunks: Buffer[] = [];
  await pipeline(
    zipStream(sources, { forceZip64 }),
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        chunks.push(chunk);
        cb();
      },
    }),
  );
  writeFileSync(file, Buffer.concat(chunks));
}

/** Text (deflates), random bytes (does not), a nested folder, an empty file. */
const sample = new Map<string, Buffer>([
  ['a/text-1.txt', text(1)],
  ['a/random.bin', randomBytes(70_000)],
  ['b/c/text-2.txt', text(2)],
  ['empty.txt', Buffer.alloc(0)],
]);

describe('ZIP reader', () => {
  const files = sample;

  it('reads stored and deflated members written by Info-ZIP, with their deflate streams', () => {
    const file = zipWithShell('infozip', files, 'zip -q -n .bin -r "$OUT" .');
    const z = ZipArchive.open(file);
    try {
      const methods = new Map(z.members.map((m) => [m.name, m.method]));
      expect(methods.get('a/text-1.txt')).toBe(8);
      expect(methods.get('a/random.bin')).toBe(0);
      for (const m of z.members) {
        const { content, deflated } = z.read(m);
        expect(content.equals(files.get(m.name)!), m.name).toBe(true);
        if (m.method === 8) expect(deflated?.length).toBe(m.compressedSize);
        else expect(deflated).toBeNull();
      }
    } finally {
      z.close();
    }
  });

  it('reads members written with data descriptors (Info-ZIP to a pipe)', () => {
    const file = zipWithShell('descriptors', files, 'zip -q -r - . | cat > "$OUT"');
    const raw = readFileSync(file);
    const flags: number[] = [];
    for (let at = raw.indexOf(LOCAL); at >= 0; at = raw.indexOf(LOCAL, at + 4)) flags.push(raw.readUInt16LE(at + 6));
    expect(flags.filter((f) => f & 0x8)).toHaveLength(files.size); // every file's local header defers its sizes
    expect(readAll(file)).toEqual(files);
  });

  it('reads a ZIP64 archive (Info-ZIP -fz: ZIP64 extra fields, end record and locator)', () => {
    const file = zipWithShell('zip64', files, 'zip -q -fz -r "$OUT" .');
    expect(readFileSync(file).includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true);
    expect(readAll(file)).toEqual(files);
  });

  it('refuses a member read from a pipe (Info-ZIP streaming stdin records it as a FIFO)', () => {
    const file = path.join(work, 'stdin.zip');
    execFileSync('sh', ['-c', `zip -q -fz - - > '${file}'`], { input: text(3) });
    expect(refusal(() => ZipArchive.open(file))).toBe('not_a_regular_file');
  });

  it('refuses a member whose CRC-32 does not match, stored or deflated', () => {
    const stored = buildZip([
      { name: 'a.txt', data: 'first' },
      { name: 'b.txt', data: 'second member' },
    ]);
    stored[stored.indexOf('second member') + 3] ^= 0x01;
    writeFileSync(path.join(work, 'crc-stored.zip'), stored);
    expect(refusal(() => readAll(path.join(work, 'crc-stored.zip')))).toBe('crc_mismatch');

    const deflated = buildZip([{ name: 'a.txt', data: text(4), deflate: true }]);
    deflated.writeUInt32LE(deflated.readUInt32LE(14) ^ 1, 14); // local CRC
    const cd = deflated.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    deflated.writeUInt32LE(deflated.readUInt32LE(cd + 16) ^ 1, cd + 16); // central CRC
    writeFileSync(path.join(work, 'crc-deflated.zip'), deflated);
    expect(refusal(() => readAll(path.join(work, 'crc-deflated.zip')))).toBe('crc_mismatch');
  });

  it('refuses a member that inflates to another size than declared', () => {
    const archive = buildZip([{ name: 'a.txt', data: text(5), deflate: true }]);
    const cd = archive.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    archive.writeUInt32LE(archive.readUInt32LE(cd + 24) - 10, cd + 24); // declared smaller than it inflates
    writeFileSync(path.join(work, 'size.zip'), archive);
    expect(refusal(() => readAll(path.join(work, 'size.zip')))).toBe('size_mismatch');
  });

  it('refuses a truncated archive, and one whose member runs past the directory', () => {
    const archive = buildZip([
      { name: 'a.txt', data: text(6) },
      { name: 'b.bin', data: randomBytes(4000) },
    ]);
    writeFileSync(path.join(work, 'cut.zip'), archive.subarray(0, archive.length - 40));
    expect(refusal(() => ZipArchive.open(path.join(work, 'cut.zip')))).toBe('not_a_zip');
    writeFileSync(path.join(work, 'half.zip'), archive.subarray(0, archive.length >> 1));
    expect(refusal(() => ZipArchive.open(path.join(work, 'half.zip')))).toBe('not_a_zip');
    const cd = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    archive.writeUInt32LE(999_999, cd + 20);
    archive.writeUInt32LE(999_999, cd + 24);
    writeFileSync(path.join(work, 'overrun.zip'), archive);
    expect(refusal(() => ZipArchive.open(path.join(work, 'overrun.zip')))).toBe('not_a_zip');
  });

  it('refuses compression methods other than stored and deflated', () => {
    const archive = buildZip([{ name: 'a.txt', data: 'x' }]);
    const cd = archive.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    archive.writeUInt16LE(12, cd + 10); // bzip2
    writeFileSync(path.join(work, 'bzip2.zip'), archive);
    expect(refusal(() => ZipArchive.open(path.join(work, 'bzip2.zip')))).toBe('unsupported_compression');
  });
});

describe('ZIP writer', () => {
  const content = new Map([
    ...sample,
    ['given/deflated.txt', text(7)],
    ['ünïcode name.txt', Buffer.from('utf-8 name\n')],
  ]);
  const sources = (): ZipSource[] =>
    [...content].map(([p, data]) => ({
      path: p,
      read: () => ({ content: data, deflated: p.startsWith('given/') ? deflateRawSync(data) : null }),
    }));

  for (const forceZip64 of [false, true]) {
    it(`writes an archive that unzip -t accepts and that reads back${forceZip64 ? ' (ZIP64 records forced)' : ''}`, async () => {
      const file = path.join(work, `written-${forceZip64}.zip`);
      await writeZip(sources(), file, forceZip64);
      expect(execFileSync('unzip', ['-t', file], { encoding: 'utf8' })).toMatch(/No errors detected/);
      const z = ZipArchive.open(file);
      try {
        const methods = new Map(z.members.map((m) => [m.name, m.method]));
        expect(methods.get('given/deflated.txt')).toBe(8);
        expect(methods.get('a/text-1.txt')).toBe(8);
        expect(methods.get('a/random.bin')).toBe(0);
      } finally {
        z.close();
      }
      expect(readAll(file)).toEqual(content);
      const out = path.join(work, `unzipped-${forceZip64}`);
      execFileSync('unzip', ['-q', file, '-d', out]);
      for (const [p, data] of content) expect(readFileSync(path.join(out, p)).equals(data), p).toBe(true);
    });
  }

  it('ends the stream with the error of a failing read', async () => {
    const failing: ZipSource[] = [{ path: 'a', read: () => Promise.reject(new Error('gone')) }];
    await expect(writeZip(failing, path.join(work, 'failing.zip'))).rejects.toThrow('gone');
  });
});

describe('import pack from archive members', () => {
  it('reuses deflate streams, writes the trees in the pack, and git fsck --strict passes', async () => {
    // `part-0.txt` sorts before the folder `part-0/` in Git's tree order, after it in plain order.
    const files = new Map<string, Buffer>([
      ['part-0.txt', text(9)],
      ['part-0/a.txt', text(10)],
      ['part-0/sub/b.bin', randomBytes(100_000)],
      ['part-00/c.txt', Buffer.from('c\n')],
      ['same-1.txt', Buffer.from('same\n')],
      ['same-2.txt', Buffer.from('same\n')],
      ['blueprint_manifest.yaml', Buffer.from('name: packed\n')],
    ]);
    const file = zipWithShell('pack', files, 'zip -q -r - . | cat > "$OUT"');
    const z = ZipArchive.open(file);
    const dir = path.join(work, 'repo');
    let commit: string;
    try {
      const srcs = z.members.map((m) => ({ path: m.name, read: () => z.read(m) }));
      commit = await initRepositoryFromSources(dir, principal, srcs, 'import');
    } finally {
      z.close();
    }
    execFileSync('git', ['-C', dir, 'fsck', '--full', '--strict']);
    expect(execFileSync('git', ['-C', dir, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
    const loose = execFileSync('git', ['-C', dir, 'count-objects', '-v'], { encoding: 'utf8' });
    expect(loose).toMatch(/^count: 1$/m); // the commit alone; blobs and trees are packed
    const blobs = commitBlobs(dir, commit);
    try {
      expect(blobs.files).toEqual([...files.keys()].sort());
      for (const [p, data] of files) {
        const got = blobs.read(p);
        expect(got.content.equals(data), p).toBe(true);
        if (p.endsWith('.txt') && data.length > 1000) expect(got.deflated).not.toBeNull();
      }
    } finally {
      blobs.close();
    }
  });

  it('removes the new repository when a member fails its check half way', async () => {
    const archive = buildZip([
      { name: 'a.txt', data: 'fine' },
      { name: 'b.txt', data: 'corrupted later' },
    ]);
    archive[archive.indexOf('corrupted later')] ^= 0x01;
    const file = path.join(work, 'half-way.zip');
    writeFileSync(file, archive);
    const z = ZipArchive.open(file);
    const dir = path.join(work, 'repo-refused');
    try {
      const srcs = z.members.map((m) => ({ path: m.name, read: () => z.read(m) }));
      await expect(initRepositoryFromSources(dir, principal, srcs, 'import')).rejects.toMatchObject({
        reason: 'crc_mismatch',
      });
    } finally {
      z.close();
    }
    expect(() => readFileSync(path.join(dir, 'a.txt'))).toThrow();
  });
});
