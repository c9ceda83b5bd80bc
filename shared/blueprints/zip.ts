/**
 * Safe reading of blueprint ZIP archives (APPNOTE.TXT), by positioned reads of the uploaded file over
 * node:zlib: yauzl's streams alone cost about 2.2x `unzip` (issue 34). The whole central directory
 * is read and checked BEFORE any member is read, and the archive refused when unsafe (spec, Limits):
 * more than 2048 members, a member over 32 MiB uncompressed or all members over 256 MiB together, a
 * member whose compression ratio exceeds 100:1 (when it inflates to more than 1 MiB), absolute paths,
 * `..` segments, backslashes, symlinks and other non-regular members, duplicate names (after Unicode
 * normalisation, case-insensitively), encrypted members, other compression methods than stored and
 * deflated, multi-disk archives. A member is then read whole (one at a time: at most 32 MiB) and
 * refused when it inflates to another size than declared or its CRC-32 does not match. Sizes come
 * from the central directory (ZIP64 extra fields included), so members written with data descriptors
 * read like any other. The 64 MiB upload cap is the multipart limit of the import routes (413).
 */
import { closeSync, fstatSync, mkdirSync, openSync, readSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32, inflateRawSync } from 'node:zlib';
import { isSafeRelativePath } from './manifest.js';

export const ZIP_LIMITS = {
  maxArchiveBytes: 64 * 1024 * 1024,
  maxMembers: 2048,
  maxMemberBytes: 32 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
  maxRatio: 100,
  ratioFloorBytes: 1024 * 1024,
} as const;

export type UnsafeReason =
  | 'not_a_zip'
  | 'too_many_members'
  | 'member_too_large'
  | 'archive_too_large_uncompressed'
  | 'compression_ratio'
  | 'absolute_path'
  | 'path_traversal'
  | 'invalid_path'
  | 'symlink'
  | 'not_a_regular_file'
  | 'duplicate_name'
  | 'encrypted'
  | 'unsupported_compression'
  | 'size_mismatch'
  | 'crc_mismatch';

/** Thrown when an archive or one of its members is refused; `reason` is answered as `payload.reason`. */
export class UnsafeZipError extends Error {
  constructor(
    readonly reason: UnsafeReason,
    message: string,
    readonly member?: string,
  ) {
    super(message);
  }
}

/** A regular file of the archive, as its central directory describes it. */
export interface ZipMember {
  name: string;
  /** 0 stored, 8 deflated. */
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  /** Offset of the member's local header. */
  localOffset: number;
  /** The central directory's name and extra field lengths (the local header's usually match). */
  headerGuess: number;
}

/** A member's bytes; `deflated` is its raw deflate stream (method 8, consumed exactly), for reuse as is. */
export interface MemberData {
  content: Buffer;
  deflated: Buffer | null;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const U32 = 0xffffffff;

const malformed = (detail: string) => new UnsafeZipError('not_a_zip', `The ZIP archive is malformed (${detail}).`);

function checkName(name: string): void {
  if (name.includes('\0') || name.includes('\\'))
    throw new UnsafeZipError('invalid_path', `Member "${name}" has an invalid path.`, name);
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name))
    throw new UnsafeZipError('absolute_path', `Member "${name}" has an absolute path.`, name);
  const trimmed = name.endsWith('/') ? name.slice(0, -1) : name;
  if (trimmed.split('/').some((s) => s === '..'))
    throw new UnsafeZipError('path_traversal', `Member "${name}" leaves the archive root ("..").`, name);
  if (!isSafeRelativePath(trimmed))
    throw new UnsafeZipError('invalid_path', `Member "${name}" has an invalid path.`, name);
}

/** One central directory record, read at `at`; answers the record and where the next starts. */
interface Central {
  name: string;
  flags: number;
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  localOffset: number;
  madeBy: number;
  external: number;
  nameExtra: number;
}

function readCentral(cd: Buffer, at: number): { rec: Central; next: number } {
  if (at + 46 > cd.length || cd.readUInt32LE(at) !== CENTRAL) throw malformed('central directory record');
  const nameLen = cd.readUInt16LE(at + 28);
  const extraLen = cd.readUInt16LE(at + 30);
  const next = at + 46 + nameLen + extraLen + cd.readUInt16LE(at + 32);
  if (next > cd.length) throw malformed('central directory record');
  const flags = cd.readUInt16LE(at + 8);
  const raw = cd.subarray(at + 46, at + 46 + nameLen);
  // General-purpose bit 11: UTF-8 names; otherwise CP437, read here as Latin-1 (same for ASCII).
  const name = flags & 0x800 ? raw.toString('utf8') : raw.toString('latin1');
  const rec: Central = {
    name,
    flags,
    method: cd.readUInt16LE(at + 10),
    crc: cd.readUInt32LE(at + 16),
    compressedSize: cd.readUInt32LE(at + 20),
    size: cd.readUInt32LE(at + 24),
    localOffset: cd.readUInt32LE(at + 42),
    madeBy: cd.readUInt16LE(at + 4),
    external: cd.readUInt32LE(at + 38),
    nameExtra: nameLen + extraLen,
  };
  if (rec.size === U32 || rec.compressedSize === U32 || rec.localOffset === U32)
    zip64Fields(rec, cd.subarray(at + 46 + nameLen, at + 46 + nameLen + extraLen));
  return { rec, next };
}

/** Fills the fields saturated at 0xFFFFFFFF from the ZIP64 extra field (0x0001), in APPNOTE order. */
function zip64Fields(rec: Central, extra: Buffer): void {
  for (let p = 0; p + 4 <= extra.length;) {
    const id = extra.readUInt16LE(p);
    const len = extra.readUInt16LE(p + 2);
    if (id === 0x0001) {
      let q = p + 4;
      const take = () => {
        if (q + 8 > p + 4 + len) throw malformed(`ZIP64 field of "${rec.name}"`);
        const v = Number(extra.readBigUInt64LE(q));
        q += 8;
        return v;
      };
      if (rec.size === U32) rec.size = take();
      if (rec.compressedSize === U32) rec.compressedSize = take();
      if (rec.localOffset === U32) rec.localOffset = take();
      return;
    }
    p += 4 + len;
  }
  throw malformed(`"${rec.name}" lacks its ZIP64 sizes`);
}

function readAt(fd: number, at: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, out, got, length - got, at + got);
    if (n === 0) break;
    got += n;
  }
  return got === length ? out : out.subarray(0, got);
}

/** Where the central directory is: the end record (and its ZIP64 form) found from the end of the file. */
function locateDirectory(fd: number, fileSize: number): { count: number; at: number; size: number } {
  const tail = readAt(fd, Math.max(0, fileSize - 22 - 0xffff), Math.min(fileSize, 22 + 0xffff));
  let e = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD && i + 22 + tail.readUInt16LE(i + 20) <= tail.length) {
      e = i;
      break;
    }
  }
  if (e < 0) throw new UnsafeZipError('not_a_zip', 'The file is not a readable ZIP archive.');
  if (tail.readUInt16LE(e + 4) !== 0 || tail.readUInt16LE(e + 6) !== 0) throw malformed('multi-disk archive');
  let count = tail.readUInt16LE(e + 10);
  let size = tail.readUInt32LE(e + 12);
  let at = tail.readUInt32LE(e + 16);
  const eocdAt = fileSize - tail.length + e;
  if ((count === 0xffff || size === U32 || at === U32) && eocdAt >= 20) {
    const loc = readAt(fd, eocdAt - 20, 20);
    if (loc.readUInt32LE(0) === ZIP64_LOCATOR) {
      const rec = readAt(fd, Number(loc.readBigUInt64LE(8)), 56);
      if (rec.length < 56 || rec.readUInt32LE(0) !== ZIP64_EOCD) throw malformed('ZIP64 end record');
      count = Number(rec.readBigUInt64LE(32));
      size = Number(rec.readBigUInt64LE(40));
      at = Number(rec.readBigUInt64LE(48));
    }
  }
  if (at + size > eocdAt) throw malformed('central directory past its end record');
  return { count, at, size };
}

/** Checks one central record; answers whether it is a folder (not kept) or throws why it is refused. */
function checkRecord(rec: Central): boolean {
  checkName(rec.name);
  const name = rec.name;
  const mode = (rec.external >>> 16) & 0o170000;
  const madeByUnix = rec.madeBy >> 8 === 3;
  if (madeByUnix && mode === 0o120000)
    throw new UnsafeZipError('symlink', `Member "${name}" is a symbolic link.`, name);
  const isDir = name.endsWith('/') || (madeByUnix && mode === 0o040000);
  if (madeByUnix && mode !== 0 && mode !== 0o100000 && mode !== 0o040000)
    throw new UnsafeZipError('not_a_regular_file', `Member "${name}" is not a regular file.`, name);
  if (rec.flags & 0x1) throw new UnsafeZipError('encrypted', `Member "${name}" is encrypted.`, name);
  if (isDir) return true;
  if (rec.method !== 0 && rec.method !== 8)
    throw new UnsafeZipError(
      'unsupported_compression',
      `Member "${name}" uses compression method ${rec.method}; only stored (0) and deflated (8) are read.`,
      name,
    );
  if (rec.method === 0 && rec.compressedSize !== rec.size)
    throw new UnsafeZipError('size_mismatch', `Stored member "${name}" declares two sizes.`, name);
  if (rec.size > ZIP_LIMITS.maxMemberBytes)
    throw new UnsafeZipError(
      'member_too_large',
      `Member "${name}" inflates to ${rec.size} bytes; at most ${ZIP_LIMITS.maxMemberBytes} per member.`,
      name,
    );
  if (rec.size > ZIP_LIMITS.ratioFloorBytes && rec.size > ZIP_LIMITS.maxRatio * Math.max(1, rec.compressedSize))
    throw new UnsafeZipError(
      'compression_ratio',
      `Member "${name}" has a compression ratio over ${ZIP_LIMITS.maxRatio}:1.`,
      name,
    );
  return false;
}

/** An open, checked archive: its regular members (central directory order) and their bytes on demand. */
export class ZipArchive {
  private fd: number | null;

  private constructor(
    fd: number,
    readonly members: readonly ZipMember[],
    private readonly dataEnd: number,
  ) {
    this.fd = fd;
  }

  /** Opens `file` and checks its whole central directory; throws `UnsafeZipError` when it is refused. */
  static open(file: string): ZipArchive {
    const fd = openSync(file, 'r');
    try {
      const { count, at, size } = locateDirectory(fd, fstatSync(fd).size);
      if (count > ZIP_LIMITS.maxMembers)
        throw new UnsafeZipError(
          'too_many_members',
          `The archive has ${count} members; at most ${ZIP_LIMITS.maxMembers} are accepted.`,
        );
      const cd = readAt(fd, at, size);
      if (cd.length !== size) throw malformed('central directory cut short');
      const members: ZipMember[] = [];
      const seen = new Set<string>();
      let total = 0;
      let p = 0;
      for (let i = 0; i < count; i++) {
        const { rec, next } = readCentral(cd, p);
        p = next;
        const isDir = checkRecord(rec);
        const key = rec.name.replace(/\/$/, '').normalize('NFC').toLowerCase();
        if (seen.has(key)) throw new UnsafeZipError('duplicate_name', `Member "${rec.name}" appears twice.`, rec.name);
        seen.add(key);
        if (isDir) continue;
        total += rec.size;
        if (total > ZIP_LIMITS.maxTotalBytes)
          throw new UnsafeZipError(
            'archive_too_large_uncompressed',
            `The archive inflates to more than ${ZIP_LIMITS.maxTotalBytes} bytes.`,
          );
        if (rec.localOffset + 30 + rec.compressedSize > at) throw malformed(`"${rec.name}" overlaps the directory`);
        const { name, method, crc, compressedSize, size: memberSize, localOffset, nameExtra } = rec;
        members.push({ name, method, crc, compressedSize, size: memberSize, localOffset, headerGuess: nameExtra });
      }
      return new ZipArchive(fd, members, at);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** The member's compressed bytes, located through its local header (one read when the header is as guessed). */
  private compressed(m: ZipMember): Buffer {
    if (this.fd === null) throw new Error('the archive is closed');
    const guess = 30 + m.headerGuess;
    const buf = readAt(this.fd, m.localOffset, Math.min(guess + m.compressedSize, this.dataEnd - m.localOffset));
    if (buf.length < 30 || buf.readUInt32LE(0) !== LOCAL) throw malformed(`local header of "${m.name}"`);
    const start = 30 + buf.readUInt16LE(26) + buf.readUInt16LE(28);
    if (m.localOffset + start + m.compressedSize > this.dataEnd) throw malformed(`"${m.name}" is cut short`);
    if (start + m.compressedSize <= buf.length) return buf.subarray(start, start + m.compressedSize);
    return readAt(this.fd, m.localOffset + start, m.compressedSize);
  }

  /** The member's content, checked against its declared size and CRC-32 (and its deflate stream). */
  read(m: ZipMember): MemberData {
    const raw = this.compressed(m);
    let content = raw;
    let deflated: Buffer | null = null;
    if (m.method === 8) {
      let consumed: number;
      try {
        const r = inflateRawSync(raw, { info: true, maxOutputLength: Math.max(1, m.size) }) as unknown as {
          buffer: Buffer;
          engine: { bytesWritten: number };
        };
        content = r.buffer;
        consumed = r.engine.bytesWritten;
      } catch {
        throw new UnsafeZipError('size_mismatch', `Member "${m.name}" could not be inflated as declared.`, m.name);
      }
      deflated = consumed === raw.length ? raw : null;
    }
    if (content.length !== m.size)
      throw new UnsafeZipError('size_mismatch', `Member "${m.name}" inflates to another size than declared.`, m.name);
    if (crc32(content) !== m.crc)
      throw new UnsafeZipError('crc_mismatch', `Member "${m.name}" does not match its CRC-32.`, m.name);
    return { content, deflated };
  }
}

/**
 * Checks `archive` and extracts its regular files under `dest` (which must exist and be empty), one
 * member at a time. Answers the extracted relative paths. Throws `UnsafeZipError` before writing
 * anything when the central directory is unsafe, and at the first member that does not read as declared.
 */
export function safeExtract(archive: string, dest: string): string[] {
  const zip = ZipArchive.open(archive);
  try {
    const made = new Set<string>();
    for (const m of zip.members) {
      const target = path.join(dest, m.name);
      const folder = path.dirname(target);
      if (!made.has(folder)) mkdirSync(folder, { recursive: true });
      made.add(folder);
      writeFileSync(target, zip.read(m).content, { flag: 'wx' });
    }
    return zip.members.map((m) => m.name);
  } finally {
    zip.close();
  }
}
