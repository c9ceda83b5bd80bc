/**
 * Safe reading of blueprint ZIP archives (yauzl, streaming, random access to the central directory)
 * and streaming export (yazl). An archive is checked in full from its central directory BEFORE any
 * member is extracted, and refused when unsafe (spec, Limits): more than 2048 members, a member over
 * 32 MiB uncompressed or all members over 256 MiB together, a member whose compression ratio exceeds
 * 100:1 (when it inflates to more than 1 MiB), absolute paths, `..` segments, backslashes, symlinks
 * and other non-regular members, duplicate names (after Unicode normalisation, case-insensitively),
 * encrypted members. Extraction then streams each member to a private temp folder and stops a member
 * that inflates past its declared size (yauzl `validateEntrySizes`). The 64 MiB upload cap is the
 * multipart limit of the import routes (413).
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform, type PassThrough } from 'node:stream';
import yauzl from 'yauzl';
import yazl from 'yazl';
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
  | 'size_mismatch';

export class UnsafeZipError extends Error {
  constructor(
    readonly reason: UnsafeReason,
    message: string,
    readonly member?: string,
  ) {
    super(message);
  }
}

interface Member {
  name: string;
  entry: yauzl.Entry;
}

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(
      file,
      { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true },
      (err, zf) =>
        err || !zf ? reject(new UnsafeZipError('not_a_zip', `The file is not a readable ZIP archive.`)) : resolve(zf),
    );
  });
}

function decodeName(entry: yauzl.Entry): string {
  const raw = entry.fileName as unknown as Buffer;
  // General-purpose bit 11: UTF-8 names; otherwise CP437, read here as Latin-1 (same for ASCII).
  return (entry.generalPurposeBitFlag & 0x800) !== 0 ? raw.toString('utf8') : raw.toString('latin1');
}

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

/** Reads and checks the whole central directory; nothing is extracted. */
async function scan(zf: yauzl.ZipFile): Promise<Member[]> {
  if (zf.entryCount > ZIP_LIMITS.maxMembers) {
    throw new UnsafeZipError(
      'too_many_members',
      `The archive has ${zf.entryCount} members; at most ${ZIP_LIMITS.maxMembers} are accepted.`,
    );
  }
  const members: Member[] = [];
  const seen = new Set<string>();
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    zf.on('error', () => reject(new UnsafeZipError('not_a_zip', 'The ZIP archive is malformed.')));
    zf.on('end', () => resolve());
    zf.on('entry', (entry: yauzl.Entry) => {
      try {
        const name = decodeName(entry);
        checkName(name);
        const mode = (entry.externalFileAttributes >>> 16) & 0o170000;
        const madeByUnix = entry.versionMadeBy >> 8 === 3;
        if (madeByUnix && mode === 0o120000)
          throw new UnsafeZipError('symlink', `Member "${name}" is a symbolic link.`, name);
        const isDir = name.endsWith('/') || (madeByUnix && mode === 0o040000);
        if (madeByUnix && mode !== 0 && mode !== 0o100000 && mode !== 0o040000)
          throw new UnsafeZipError('not_a_regular_file', `Member "${name}" is not a regular file.`, name);
        if (entry.isEncrypted()) throw new UnsafeZipError('encrypted', `Member "${name}" is encrypted.`, name);
        const key = name.replace(/\/$/, '').normalize('NFC').toLowerCase();
        if (seen.has(key)) throw new UnsafeZipError('duplicate_name', `Member "${name}" appears twice.`, name);
        seen.add(key);
        if (!isDir) {
          if (entry.uncompressedSize > ZIP_LIMITS.maxMemberBytes)
            throw new UnsafeZipError(
              'member_too_large',
              `Member "${name}" inflates to ${entry.uncompressedSize} bytes; at most ${ZIP_LIMITS.maxMemberBytes} per member.`,
              name,
            );
          if (
            entry.uncompressedSize > ZIP_LIMITS.ratioFloorBytes &&
            entry.uncompressedSize > ZIP_LIMITS.maxRatio * Math.max(1, entry.compressedSize)
          )
            throw new UnsafeZipError(
              'compression_ratio',
              `Member "${name}" has a compression ratio over ${ZIP_LIMITS.maxRatio}:1.`,
              name,
            );
          total += entry.uncompressedSize;
          if (total > ZIP_LIMITS.maxTotalBytes)
            throw new UnsafeZipError(
              'archive_too_large_uncompressed',
              `The archive inflates to more than ${ZIP_LIMITS.maxTotalBytes} bytes.`,
            );
          members.push({ name, entry });
        }
        zf.readEntry();
      } catch (err) {
        reject(err);
      }
    });
    zf.readEntry();
  });
  return members;
}

function openStream(zf: yauzl.ZipFile, entry: yauzl.Entry): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) =>
    zf.openReadStream(entry, (err, s) => (err || !s ? reject(err ?? new Error('no stream')) : resolve(s))),
  );
}

/**
 * Checks `archive` and extracts its regular files under `dest` (which must exist and be empty).
 * Answers the extracted relative paths. Throws `UnsafeZipError` before writing anything when the
 * central directory is unsafe.
 */
export async function safeExtract(archive: string, dest: string): Promise<string[]> {
  const zf = await openZip(archive);
  try {
    const members = await scan(zf);
    for (const m of members) {
      const target = path.join(dest, m.name);
      await mkdir(path.dirname(target), { recursive: true });
      let written = 0;
      const cap = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          written += chunk.length;
          if (written > m.entry.uncompressedSize)
            cb(new UnsafeZipError('size_mismatch', `Member "${m.name}" inflates past its declared size.`, m.name));
          else cb(null, chunk);
        },
      });
      try {
        await pipeline(await openStream(zf, m.entry), cap, createWriteStream(target, { flags: 'wx' }));
      } catch (err) {
        if (err instanceof UnsafeZipError) throw err;
        throw new UnsafeZipError('size_mismatch', `Member "${m.name}" could not be inflated as declared.`, m.name);
      }
    }
    return members.map((m) => m.name);
  } finally {
    zf.close();
  }
}

/** A streaming ZIP of files on disk plus in-memory members; answer `outputStream` to the client. */
export function buildZip(files: Array<{ path: string; diskPath?: string; data?: Buffer }>): NodeJS.ReadableStream {
  const z = new yazl.ZipFile();
  for (const f of files) {
    if (f.diskPath) z.addFile(f.diskPath, f.path, { mode: 0o100644 });
    else z.addBuffer(f.data ?? Buffer.alloc(0), f.path, { mode: 0o100644 });
  }
  z.end();
  return z.outputStream;
}

/**
 * A streaming ZIP whose members are read one at a time, in order, only when the archive reaches them
 * (yazl pumps entries sequentially and the response's back-pressure paces it): at most one member's
 * bytes are in memory. A failing `read` ends the stream with that error.
 */
export function buildLazyZip(entries: Array<{ path: string; read: () => Promise<Buffer> }>): NodeJS.ReadableStream {
  const z = new yazl.ZipFile();
  const out = z.outputStream as PassThrough;
  z.on('error', (err: Error) => out.destroy(err));
  for (const e of entries) {
    z.addReadStreamLazy(e.path, { mode: 0o100644 }, (cb) => {
      e.read().then(
        (buf) => cb(null, Readable.from([buf])),
        (err: Error) => cb(err, undefined as unknown as NodeJS.ReadableStream),
      );
    });
  }
  z.end();
  return out;
}
