/**
 * Writes many blobs into one pack (`objects/pack/pack-<sha>.pack` and its version-2 `.idx`) instead
 * of one loose object each: a 2,000-file import through isomorphic-git's `add` hashed and deflated
 * every file (pure-JS or stream deflate at level 6) into 2,000 loose files and rewrote the index per
 * batch. Here each blob is hashed with node:crypto and deflated with node:zlib at level 1, appended to
 * the pack as it comes (one blob in memory at a time), and the pack is indexed once at the end;
 * isomorphic-git reads the result like any fetched pack.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';

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

/** The oid of a blob with content `data` (SHA-1 of `blob <size>\0<data>`). */
export function blobOid(data: Buffer): string {
  return createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
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

  constructor(gitdir: string) {
    this.dir = path.join(gitdir, 'objects', 'pack');
    this.temp = path.join(this.dir, `tmp-${randomBytes(6).toString('hex')}.pack`);
  }

  /** Appends a blob (once per content); answers its oid. */
  addBlob(data: Buffer): string {
    const oid = blobOid(data);
    if (this.objects.has(oid)) return oid;
    if (this.fd === null) {
      mkdirSync(this.dir, { recursive: true });
      this.fd = openSync(this.temp, 'w+');
      writeSync(this.fd, Buffer.alloc(12), 0, 12, 0); // the header, written once the count is known
    }
    const header = entryHeader(BLOB, data.length);
    const body = deflateSync(data, { level: 1 });
    writeSync(this.fd, header, 0, header.length, this.offset);
    writeSync(this.fd, body, 0, body.length, this.offset + header.length);
    this.objects.set(oid, { offset: this.offset, crc: crc32(body, crc32(header)) });
    this.offset += header.length + body.length;
    return oid;
  }

  /** Completes the pack (header, checksum) and writes its index; nothing when no blob was added. */
  finish(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    try {
      const header = Buffer.alloc(12);
      header.write('PACK', 0, 'latin1');
      header.writeUInt32BE(2, 4);
      header.writeUInt32BE(this.objects.size, 8);
      writeSync(fd, header, 0, 12, 0);
      // The checksum covers the header, known only now: the pack is read back once (from the page cache).
      const sha = createHash('sha1');
      const chunk = Buffer.allocUnsafe(1 << 20);
      for (let at = 0; at < this.offset;) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, this.offset - at), at);
        sha.update(chunk.subarray(0, n));
        at += n;
      }
      const packSha = sha.digest();
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

  /** Removes the unfinished pack. */
  abort(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.temp, { force: true });
  }

  private index(packSha: Buffer): Buffer {
    const oids = [...this.objects.keys()].sort();
    const n = oids.length;
    const large = oids.filter((o) => this.objects.get(o)!.offset >= 0x80000000);
    const out = Buffer.alloc(8 + 256 * 4 + n * 28 + large.length * 8 + 40);
    out.writeUInt32BE(0xff744f63, 0);
    out.writeUInt32BE(2, 4);
    const fanout = new Array<number>(256).fill(0);
    for (const oid of oids) fanout[parseInt(oid.slice(0, 2), 16)]!++;
    let total = 0;
    for (let i = 0; i < 256; i++) out.writeUInt32BE((total += fanout[i]!), 8 + i * 4);
    const oidsAt = 8 + 256 * 4;
    const crcAt = oidsAt + n * 20;
    const offAt = crcAt + n * 4;
    const largeAt = offAt + n * 4;
    let nextLarge = 0;
    oids.forEach((oid, i) => {
      const { offset, crc } = this.objects.get(oid)!;
      out.write(oid, oidsAt + i * 20, 'hex');
      out.writeUInt32BE(crc >>> 0, crcAt + i * 4);
      if (offset < 0x80000000) out.writeUInt32BE(offset, offAt + i * 4);
      else {
        out.writeUInt32BE((0x80000000 | nextLarge) >>> 0, offAt + i * 4);
        out.writeBigUInt64BE(BigInt(offset), largeAt + nextLarge++ * 8);
      }
    });
    const end = largeAt + large.length * 8;
    packSha.copy(out, end);
    createHash('sha1')
      .update(out.subarray(0, end + 20))
      .digest()
      .copy(out, end + 20);
    return out;
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
