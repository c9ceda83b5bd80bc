/**
 * Blobs of a store's packs with their deflate stream, for writers that can reuse it (a blueprint
 * export writes a pack entry's raw deflate as the ZIP member's data instead of deflating again).
 * The `.idx` files are read once into a map of every object's offset, and a blob is one positioned
 * read of its pack entry. Deltified objects and loose objects are not answered here (the caller reads
 * them through `ObjectReader`, shared/git/object-reader.ts, which resolves deltas).
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { inflateSync } from 'node:zlib';

const BLOB = 3;

interface PackFile {
  file: string;
  fd: number | null;
  /** Every entry's offset, ascending, then the offset of the trailing checksum: entry i ends where i + 1 starts. */
  bounds: Float64Array;
}

/** A blob's content and, when its zlib stream allows it, that stream's raw deflate part (exactly `content`). */
export interface PackedBlob {
  content: Buffer;
  deflated: Buffer | null;
}

export class PackBlobReader {
  private readonly packs: PackFile[] = [];
  /** oid (hex) → pack and index of the entry in its `bounds`. */
  private readonly where = new Map<string, { pack: number; entry: number }>();

  constructor(gitdir: string) {
    const dir = path.join(gitdir, 'objects', 'pack');
    let names: string[] = [];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith('.idx'));
    } catch {
      // a store with loose objects only
    }
    for (const name of names) this.load(path.join(dir, name));
  }

  /** Reads a version-2 `.idx`: the oids table, then their 32-bit offsets (large ones through the 64-bit table). */
  private load(idxFile: string): void {
    const idx = readFileSync(idxFile);
    if (idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) return; // left to ObjectReader
    const file = idxFile.replace(/\.idx$/, '.pack');
    const count = idx.readUInt32BE(8 + 255 * 4);
    const oidsAt = 8 + 256 * 4;
    const smallAt = oidsAt + count * 24;
    const largeAt = smallAt + count * 4;
    const offsets = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      const small = idx.readUInt32BE(smallAt + i * 4);
      offsets[i] = small & 0x80000000 ? Number(idx.readBigUInt64BE(largeAt + (small & 0x7fffffff) * 8)) : small;
    }
    const order = Array.from({ length: count }, (_, i) => i).sort((a, b) => offsets[a]! - offsets[b]!);
    const bounds = new Float64Array(count + 1);
    const pack = this.packs.length;
    order.forEach((i, rank) => {
      bounds[rank] = offsets[i]!;
      const oid = idx.toString('hex', oidsAt + i * 20, oidsAt + i * 20 + 20);
      if (!this.where.has(oid)) this.where.set(oid, { pack, entry: rank });
    });
    bounds[count] = statSync(file).size - 20;
    this.packs.push({ file, fd: null, bounds });
  }

  /** The blob `oid` when a pack holds it whole (not as a delta), else null. */
  read(oid: string): PackedBlob | null {
    const at = this.where.get(oid);
    if (!at) return null;
    const pack = this.packs[at.pack]!;
    const start = pack.bounds[at.entry]!;
    const entry = Buffer.allocUnsafe(pack.bounds[at.entry + 1]! - start);
    pack.fd ??= openSync(pack.file, 'r');
    if (readSync(pack.fd, entry, 0, entry.length, start) !== entry.length)
      throw new Error(`pack ${pack.file} is cut short`);
    let pos = 0;
    let byte = entry[pos++]!;
    if (((byte >> 4) & 7) !== BLOB) return null;
    while (byte & 0x80) byte = entry[pos++]!;
    const stream = entry.subarray(pos);
    const { buffer: content, engine } = inflateSync(stream, { info: true }) as unknown as {
      buffer: Buffer;
      engine: { bytesWritten: number };
    };
    // The deflate part of a zlib stream: after the 2-byte header (method 8, no preset dictionary), before the Adler-32.
    const plain = (stream[0]! & 0x0f) === 8 && !(stream[1]! & 0x20);
    return { content, deflated: plain ? stream.subarray(2, engine.bytesWritten - 4) : null };
  }

  close(): void {
    for (const pack of this.packs) {
      if (pack.fd !== null) closeSync(pack.fd);
      pack.fd = null;
    }
  }
}
