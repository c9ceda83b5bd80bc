/**
 * Writes many blobs into one pack (`objects/pack/pack-<sha>.pack` and its version-2 `.idx`) instead
 * of one loose object each: a 2,000-file import through isomorphic-git's `add` hashed and deflated
 * every file (pure-JS or stream deflate at level 6) into 2,000 loose files and rewrote the index per
 * batch. Here each blob is hashed with node:crypto and deflated with node:zlib at level 1, appended to
 * the pack as it comes (one blob in memory at a time), and the pack is indexed once at the end;
 * isomorphic-git reads the result like any fetched pack. A blob whose first bytes do not compress
 * (an image, an archive, random data) is stored at level 0: level 1 over 60 MiB of such bytes cost
 * about 9x the whole level-0 pass and saved nothing. When the caller names how many blobs come and
 * no content repeats, the pack's checksum is computed as it is written, not by reading it back.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
  writevSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { crc32, deflateRawSync, deflateSync } from 'node:zlib';
import { packIndexV2 } from './pack-index.js';

const TREE = 2;
const BLOB = 3;

/** The pack header of one object: type and inflated size, 4 bits then 7 bits a byte. */
function entryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (type << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

function packHeader(count: number): Buffer {
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(count, 8);
  return header;
}

/** The oid of a blob with content `data` (SHA-1 of `blob <size>\0<data>`). */
export function blobOid(data: Buffer): string {
  return createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
}

/** Bytes of a blob deflated to judge whether it compresses (blobs up to twice this are simply deflated). */
const SAMPLE = 2048;

/** zlib level for `data`: 1, or 0 (stored) when a sample of it shrinks by less than a tenth. */
function levelFor(data: Buffer): 0 | 1 {
  if (data.length <= 2 * SAMPLE) return 1;
  const sample = data.subarray(0, SAMPLE);
  return deflateRawSync(sample, { level: 1 }).length > sample.length * 0.9 ? 0 : 1;
}

/** Adler-32 of `data` (the zlib trailer; node:zlib does not expose its own). Sums reduced every 5552 bytes. */
export function adler32(data: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < data.length;) {
    for (const end = Math.min(i + 5552, data.length); i < end; i++) {
      a += data[i]!;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return (b * 65536 + a) >>> 0;
}

/** A zlib stream header (deflate, 32 KiB window, no dictionary; `0x7801 % 31 === 0`). */
const ZLIB_HEADER = Buffer.from([0x78, 0x01]);

function trailer(data: Buffer): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(adler32(data), 0);
  return out;
}

/**
 * The zlib stream of `data` as parts to write: around `deflated` (a raw deflate stream of exactly
 * `data`, an archive member's) when given and smaller; else level 1, or stored blocks over `data`
 * itself (no copy) when a sample does not shrink.
 */
function zlibParts(data: Buffer, deflated: Buffer | null): Buffer[] {
  if (deflated && deflated.length < data.length) return [ZLIB_HEADER, deflated, trailer(data)];
  if (levelFor(data) === 1) return [deflateSync(data, { level: 1 })];
  const parts: Buffer[] = [ZLIB_HEADER];
  let at = 0;
  do {
    const len = Math.min(0xffff, data.length - at);
    const block = Buffer.alloc(5);
    block[0] = at + len === data.length ? 1 : 0; // BFINAL, BTYPE 00 (stored)
    block.writeUInt16LE(len, 1);
    block.writeUInt16LE(~len & 0xffff, 3);
    parts.push(block, data.subarray(at, at + len));
    at += len;
  } while (at < data.length);
  parts.push(trailer(data));
  return parts;
}

interface Written {
  offset: number;
  crc: number;
}

export class PackWriter {
  private readonly dir: string;
  private readonly temp: string;
  private fd: number | null = null;
  private offset = 12;
  private readonly objects = new Map<string, Written>();
  /** The running checksum while the header's count is the expected one (null once a content repeats). */
  private running: Hash | null = null;

  /** `expected`: how many blobs will be added (known to the caller), so the header is written first. */
  constructor(
    gitdir: string,
    private readonly expected?: number,
  ) {
    this.dir = path.join(gitdir, 'objects', 'pack');
    this.temp = path.join(this.dir, `tmp-${randomBytes(6).toString('hex')}.pack`);
  }

  private write(buf: Buffer, at: number): void {
    writeSync(this.fd!, buf, 0, buf.length, at);
    this.running?.update(buf);
  }

  /**
   * Appends a blob (once per content); answers its oid. `deflated`: a raw deflate stream of exactly
   * `data` (a ZIP member's, checked by inflating it), reused as the pack entry's data when smaller.
   */
  addBlob(data: Buffer, deflated: Buffer | null = null): string {
    return this.add(BLOB, blobOid(data), data, deflated);
  }

  /**
   * Appends a tree of `entries` (blobs and trees already in the pack or the store); answers its oid.
   * Entries are sorted as Git sorts them (a folder's name compared as if it ended in `/`).
   */
  addTree(entries: ReadonlyArray<{ mode: string; name: string; oid: string }>): string {
    const key = (e: { mode: string; name: string }) => Buffer.from(e.mode === '40000' ? `${e.name}/` : e.name);
    const sorted = entries.map((e) => ({ e, k: key(e) })).sort((a, b) => Buffer.compare(a.k, b.k));
    const data = Buffer.concat(
      sorted.flatMap(({ e }) => [Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.oid, 'hex')]),
    );
    const oid = createHash('sha1').update(`tree ${data.length}\0`).update(data).digest('hex');
    return this.add(TREE, oid, data, null);
  }

  private add(type: number, oid: string, data: Buffer, deflated: Buffer | null): string {
    if (this.objects.has(oid)) {
      this.running = null; // fewer objects than announced: the header is rewritten and the pack read back
      return oid;
    }
    if (this.fd === null) {
      mkdirSync(this.dir, { recursive: true });
      this.fd = openSync(this.temp, 'w+');
      if (this.expected !== undefined) this.running = createHash('sha1');
      this.write(packHeader(this.expected ?? 0), 0); // rewritten at the end unless the count was right
    }
    const parts = [entryHeader(type, data.length), ...zlibParts(data, deflated)];
    const size = parts.reduce((n, p) => n + p.length, 0);
    if (writevSync(this.fd, parts, this.offset) !== size) throw new Error('short write to the pack');
    let crc = 0;
    for (const p of parts) {
      this.running?.update(p);
      crc = crc32(p, crc);
    }
    this.objects.set(oid, { offset: this.offset, crc });
    this.offset += size;
    return oid;
  }

  /** Completes the pack (header, checksum) and writes its index; nothing when no object was added. */
  finish(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    try {
      const packSha =
        this.running && this.objects.size === this.expected ? this.running.digest() : this.readBackSum(fd);
      writeSync(fd, packSha, 0, 20, this.offset);
      closeSync(fd);
      this.fd = null;
      const name = `pack-${packSha.toString('hex')}`;
      writeFileSync(path.join(this.dir, `${name}.idx`), this.index(packSha));
      renameSync(this.temp, path.join(this.dir, `${name}.pack`));
    } catch (err) {
      this.abort();
      throw err;
    }
  }

  /** The checksum when the header's count was known only at the end: written now, the pack read back once (from the page cache). */
  private readBackSum(fd: number): Buffer {
    writeSync(fd, packHeader(this.objects.size), 0, 12, 0);
    const sha = createHash('sha1');
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (let at = 0; at < this.offset;) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, this.offset - at), at);
      sha.update(chunk.subarray(0, n));
      at += n;
    }
    return sha.digest();
  }

  /** Removes the unfinished pack. */
  abort(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.temp, { force: true });
  }

  private index(packSha: Buffer): Buffer {
    const objects = [...this.objects].map(([oid, { offset, crc }]) => ({ oid: Buffer.from(oid, 'hex'), crc, offset }));
    return packIndexV2(objects, packSha);
  }
}

const MAX_UINT32 = 2 ** 32;

/** Seconds and nanoseconds of a time in milliseconds, computed as isomorphic-git does when it compares stats. */
function secondsNanos(ms: number): [number, number] {
  const seconds = Math.floor(ms / 1000);
  return [seconds % MAX_UINT32, Math.floor((ms - seconds * 1000) * 1_000_000) % MAX_UINT32];
}

export interface IndexEntry {
  /** `/`-separated path in the working tree. */
  path: string;
  oid: string;
  /** The working file's stats (so a status walk sees it unchanged without hashing it). */
  stats: Stats;
}

/**
 * Writes the index (`.git/index`, version 2) listing `entries` as staged, in one write: what one
 * `git add` of every file leaves, without isomorphic-git rewriting the index per call.
 */
export function writeIndex(gitdir: string, entries: readonly IndexEntry[]): void {
  const sorted = entries
    .map((e) => ({ ...e, name: Buffer.from(e.path, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.name, b.name));
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head.write('DIRC', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(sorted.length, 8);
  parts.push(head);
  for (const e of sorted) {
    const size = 62 + e.name.length;
    const entry = Buffer.alloc(size + (8 - (size % 8)));
    const [cs, cn] = secondsNanos(e.stats.ctimeMs);
    const [ms, mn] = secondsNanos(e.stats.mtimeMs);
    const mode = e.stats.mode & 0o111 ? 0o100755 : 0o100644;
    const words = [cs, cn, ms, mn, e.stats.dev, e.stats.ino, mode, e.stats.uid, e.stats.gid, e.stats.size];
    words.forEach((w, i) => entry.writeUInt32BE(w % MAX_UINT32, i * 4));
    entry.write(e.oid, 40, 'hex');
    entry.writeUInt16BE(Math.min(e.name.length, 0xfff), 60);
    e.name.copy(entry, 62);
    parts.push(entry);
  }
  const body = Buffer.concat(parts);
  const sum = createHash('sha1').update(body).digest();
  writeFileSync(path.join(gitdir, 'index'), Buffer.concat([body, sum]));
}
