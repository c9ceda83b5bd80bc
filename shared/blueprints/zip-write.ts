/**
 * A streaming ZIP writer (APPNOTE.TXT) over node:zlib, for blueprint exports: yazl alone cost about
 * 2.2x `zip -r` (issue 34). Members are produced one at a time as the stream is read (the consumer's
 * back-pressure paces it), each whole in memory, so its CRC-32 and sizes go into its local header (no
 * data descriptor). A member whose raw deflate stream is given (a Git pack's zlib stream, header and
 * Adler-32 stripped) is written as is, deflated, when it is smaller than the content; a member without
 * one is deflated here when a sample of it shrinks, else stored. ZIP64 records are written when an
 * offset, a size or the member count outgrows the classic fields.
 */
import { Readable } from 'node:stream';
import { crc32, deflateRawSync } from 'node:zlib';

/** A member's bytes; `deflated`, when known, a raw deflate stream of exactly `content`. */
export interface ZipSourceData {
  content: Buffer;
  deflated?: Buffer | null;
}

export interface ZipSource {
  path: string;
  read: () => ZipSourceData | Promise<ZipSourceData>;
}

const U32 = 0xffffffff;
const SAMPLE = 2048;

/** Whether deflating `data` is worth it: a sample of it shrinks by a tenth (random bytes, images, archives do not). */
export function worthDeflating(data: Buffer): boolean {
  if (data.length <= 2 * SAMPLE) return data.length > 64;
  const sample = data.subarray(0, SAMPLE);
  return deflateRawSync(sample, { level: 1 }).length <= sample.length * 0.9;
}

function dosDateTime(d: Date): { time: number; date: number } {
  const year = Math.max(1980, d.getFullYear());
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | Math.floor(d.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  };
}

interface Written {
  name: Buffer;
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  offset: number;
}

/** The member's data as written: deflated (given or made here) when smaller, else stored. */
function encode(src: ZipSourceData): { method: number; data: Buffer } {
  const { content, deflated } = src;
  if (deflated && deflated.length < content.length) return { method: 8, data: deflated };
  if (!deflated && worthDeflating(content)) {
    const made = deflateRawSync(content);
    if (made.length < content.length) return { method: 8, data: made };
  }
  return { method: 0, data: content };
}

class ZipWriter {
  private offset = 0;
  private readonly written: Written[] = [];
  private readonly stamp = dosDateTime(new Date());

  constructor(private readonly forceZip64: boolean) {}

  private fixed(w: Written, at: number, buf: Buffer, zip64: boolean): void {
    buf.writeUInt16LE(zip64 ? 45 : 20, at); // version needed to extract
    buf.writeUInt16LE(0x800, at + 2); // UTF-8 names
    buf.writeUInt16LE(w.method, at + 4);
    buf.writeUInt16LE(this.stamp.time, at + 6);
    buf.writeUInt16LE(this.stamp.date, at + 8);
    buf.writeUInt32LE(w.crc, at + 10);
  }

  /** The local header and data of one member. */
  member(path: string, src: ZipSourceData): Buffer[] {
    const { method, data } = encode(src);
    const name = Buffer.from(path, 'utf8');
    const w: Written = {
      name,
      method,
      crc: crc32(src.content),
      compressedSize: data.length,
      size: src.content.length,
      offset: this.offset,
    };
    const zip64 = this.forceZip64 || w.size >= U32 || w.compressedSize >= U32;
    const extra = zip64 ? Buffer.alloc(20) : Buffer.alloc(0);
    if (zip64) {
      extra.writeUInt16LE(0x0001, 0);
      extra.writeUInt16LE(16, 2);
      extra.writeBigUInt64LE(BigInt(w.size), 4);
      extra.writeBigUInt64LE(BigInt(w.compressedSize), 12);
    }
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    this.fixed(w, 4, local, zip64);
    local.writeUInt32LE(zip64 ? U32 : w.compressedSize, 18);
    local.writeUInt32LE(zip64 ? U32 : w.size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(extra.length, 28);
    this.written.push(w);
    this.offset += 30 + name.length + extra.length + data.length;
    return [local, name, extra, data];
  }

  /** The central directory and its end records. */
  finish(): Buffer[] {
    const parts: Buffer[] = [];
    const cdAt = this.offset;
    let cdSize = 0;
    for (const w of this.written) {
      const big = [
        w.size >= U32 || this.forceZip64,
        w.compressedSize >= U32 || this.forceZip64,
        w.offset >= U32 || this.forceZip64,
      ];
      const fields = [w.size, w.compressedSize, w.offset].filter((_, i) => big[i]);
      const extra = Buffer.alloc(fields.length ? 4 + 8 * fields.length : 0);
      if (fields.length) {
        extra.writeUInt16LE(0x0001, 0);
        extra.writeUInt16LE(8 * fields.length, 2);
        fields.forEach((v, i) => extra.writeBigUInt64LE(BigInt(v), 4 + 8 * i));
      }
      const rec = Buffer.alloc(46);
      rec.writeUInt32LE(0x02014b50, 0);
      rec.writeUInt16LE((3 << 8) | 45, 4); // made by Unix, spec 4.5
      this.fixed(w, 6, rec, fields.length > 0);
      rec.writeUInt32LE(big[1] ? U32 : w.compressedSize, 20);
      rec.writeUInt32LE(big[0] ? U32 : w.size, 24);
      rec.writeUInt16LE(w.name.length, 28);
      rec.writeUInt16LE(extra.length, 30);
      rec.writeUInt32LE((0o100644 << 16) >>> 0, 38);
      rec.writeUInt32LE(big[2] ? U32 : w.offset, 42);
      parts.push(rec, w.name, extra);
      cdSize += 46 + w.name.length + extra.length;
    }
    const count = this.written.length;
    const zip64 = this.forceZip64 || count >= 0xffff || cdAt >= U32 || cdSize >= U32;
    if (zip64) {
      const rec = Buffer.alloc(56);
      rec.writeUInt32LE(0x06064b50, 0);
      rec.writeBigUInt64LE(44n, 4);
      rec.writeUInt16LE((3 << 8) | 45, 12);
      rec.writeUInt16LE(45, 14);
      rec.writeBigUInt64LE(BigInt(count), 24);
      rec.writeBigUInt64LE(BigInt(count), 32);
      rec.writeBigUInt64LE(BigInt(cdSize), 40);
      rec.writeBigUInt64LE(BigInt(cdAt), 48);
      const loc = Buffer.alloc(20);
      loc.writeUInt32LE(0x07064b50, 0);
      loc.writeBigUInt64LE(BigInt(cdAt + cdSize), 8);
      loc.writeUInt32LE(1, 16);
      parts.push(rec, loc);
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(zip64 ? 0xffff : count, 8);
    end.writeUInt16LE(zip64 ? 0xffff : count, 10);
    end.writeUInt32LE(zip64 ? U32 : cdSize, 12);
    end.writeUInt32LE(zip64 ? U32 : cdAt, 16);
    parts.push(end);
    return parts;
  }
}

/**
 * A ZIP of `sources`, each read only when the stream reaches it (at most one member's bytes held).
 * A failing `read` ends the stream with that error. `forceZip64` writes ZIP64 records even when small.
 */
export function zipStream(sources: readonly ZipSource[], opts: { forceZip64?: boolean } = {}): Readable {
  const writer = new ZipWriter(opts.forceZip64 === true);
  let next = 0;
  let busy = false;
  return new Readable({
    read() {
      if (busy) return;
      busy = true;
      void (async () => {
        try {
          let more = true;
          while (more) {
            if (next === sources.length) {
              for (const part of writer.finish()) this.push(part);
              this.push(null);
              return;
            }
            const src = sources[next++]!;
            const parts = writer.member(src.path, await src.read());
            for (const part of parts) more = this.push(part);
          }
        } catch (err) {
          this.destroy(err as Error);
        } finally {
          busy = false;
        }
      })();
    },
  });
}
