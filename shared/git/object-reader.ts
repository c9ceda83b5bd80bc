/**
 * A read-only view of an isomorphic-git object store for bulk reads (a checkout of thousands of
 * blobs). isomorphic-git stays the Git implementation (it fetches, writes and indexes the packs);
 * this reads what it wrote with node:zlib's native inflate, synchronously, from packs loaded once:
 * isomorphic-git's `readBlob` re-checks the loose store and lists the pack folder per object and
 * inflates through pako, which made a 10,000-file checkout about 1 ms of CPU per blob. Objects are
 * trusted as isomorphic-git indexed them (it hashed each one when it built the pack index).
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { inflateSync } from 'node:zlib';

export type GitObjectType = 'commit' | 'tree' | 'blob' | 'tag';

export interface GitObject {
  type: GitObjectType;
  object: Buffer;
}

const TYPES: Record<number, GitObjectType> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
const OFS_DELTA = 6;
const REF_DELTA = 7;

/** Packs up to this size are read whole on first use; larger ones object by object (memory stays near one object). */
const WHOLE_PACK_BYTES = 8 * 1024 * 1024;

/**
 * Delta bases kept for the other deltas based on them (least recently used dropped first): read in
 * pack order (`packOrder`), a deltified chain is not resolved again from its root for each object in
 * it. Objects read for themselves are not kept (an export reading each blob once holds none).
 */
const CACHE_BYTES = 16 * 1024 * 1024;
/** Objects larger than this are not kept (one would push out many small bases). */
const CACHE_OBJECT_BYTES = 4 * 1024 * 1024;

/**
 * Inflates the zlib stream at the start of `data` (a pack entry's, more bytes may follow) into a buffer
 * of the `size` the entry header gave: without it node:zlib starts with 16 KiB per call, and for
 * thousands of small objects most of the time went to the garbage collector. Answers also how many
 * bytes of `data` the stream took.
 */
export function inflateEntry(data: Buffer, size: number): { object: Buffer; consumed: number } {
  const { buffer, engine } = inflateSync(data, { info: true, chunkSize: Math.max(64, size + 1) }) as unknown as {
    buffer: Buffer;
    engine: { bytesWritten: number };
  };
  if (buffer.length !== size) throw new Error('pack entry inflates to a size other than its header gives');
  return { object: buffer, consumed: engine.bytesWritten };
}

interface Pack {
  file: string;
  size: number;
  /** The whole pack (small packs), read on first use: an older pack may hold nothing a checkout needs. */
  bytes: Buffer | null;
  /** The open pack file (large packs), opened on first use. */
  fd: number | null;
  /** The pack index (`.idx`, version 2), searched per lookup: no map of every oid is built. */
  idx: Buffer;
  count: number;
  /** Every object's offset, sorted: built on the first object-by-object read (where an object ends). */
  sorted: Float64Array | null;
}

const OIDS_AT = 8 + 256 * 4;
/** Cache keys and read order: pack `i`'s offsets are `i * PACK_SPAN + offset` (packs below 1 TiB). */
const PACK_SPAN = 2 ** 40;

function checkIndex(idx: Buffer): number {
  if (idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) throw new Error('unsupported pack index');
  return idx.readUInt32BE(8 + 255 * 4);
}

/** The offset of the `i`th object of the index (large offsets through the 64-bit table). */
function offsetAt(pack: Pack, i: number): number {
  const offsetsAt = OIDS_AT + pack.count * 24;
  const off = pack.idx.readUInt32BE(offsetsAt + i * 4);
  if (!(off & 0x80000000)) return off;
  return Number(pack.idx.readBigUInt64BE(offsetsAt + pack.count * 4 + (off & 0x7fffffff) * 8));
}

/** The offset of `oid` in the pack (binary search within its fan-out bucket), or undefined. */
function findOffset(pack: Pack, oid: Buffer): number | undefined {
  const first = oid[0]!;
  let lo = first === 0 ? 0 : pack.idx.readUInt32BE(8 + (first - 1) * 4);
  let hi = pack.idx.readUInt32BE(8 + first * 4);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = OIDS_AT + mid * 20;
    const cmp = pack.idx.compare(oid, 0, 20, at, at + 20);
    if (cmp === 0) return offsetAt(pack, mid);
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return undefined;
}

/** Where the object at `offset` ends: the next object's offset, or the pack's trailing checksum. */
function endOf(pack: Pack, offset: number): number {
  if (!pack.sorted) {
    const sorted = new Float64Array(pack.count);
    for (let i = 0; i < pack.count; i++) sorted[i] = offsetAt(pack, i);
    pack.sorted = sorted.sort();
  }
  const sorted = pack.sorted;
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < sorted.length ? sorted[lo]! : pack.size - 20;
}

/** A pack entry's header: its type (null for a delta), inflated size, delta base and where its zlib data starts. */
export interface EntryHeader {
  type: GitObjectType | null;
  size: number;
  /** An offset delta's base: this many bytes before the entry. */
  baseBack: number | null;
  /** A ref delta's base oid. */
  baseOid: string | null;
  dataAt: number;
}

/** Reads the header of the pack entry at `pos` of `bytes`. */
export function entryHeader(bytes: Buffer, pos: number): EntryHeader {
  let byte = bytes[pos++]!;
  const kind = (byte >> 4) & 7;
  let size = byte & 0x0f;
  for (let shift = 16; byte & 0x80; shift *= 128) {
    byte = bytes[pos++]!;
    size += (byte & 0x7f) * shift;
  }
  const header: EntryHeader = { type: TYPES[kind] ?? null, size, baseBack: null, baseOid: null, dataAt: pos };
  if (kind === OFS_DELTA) {
    byte = bytes[pos++]!;
    let back = byte & 0x7f;
    while (byte & 0x80) {
      byte = bytes[pos++]!;
      back = (back + 1) * 128 + (byte & 0x7f);
    }
    header.baseBack = back;
  } else if (kind === REF_DELTA) {
    header.baseOid = bytes.toString('hex', pos, pos + 20);
    pos += 20;
  } else if (!header.type) throw new Error(`unknown pack object type ${kind}`);
  header.dataAt = pos;
  return header;
}

/** Applies a Git delta (copy/insert instructions) to `base`. */
export function applyDelta(delta: Buffer, base: Buffer): Buffer {
  let pos = 0;
  const varint = () => {
    let value = 0;
    let shift = 1;
    let byte: number;
    do {
      byte = delta[pos++]!;
      value += (byte & 0x7f) * shift;
      shift *= 128;
    } while (byte & 0x80);
    return value;
  };
  if (varint() !== base.length) throw new Error('delta base size mismatch');
  const out = Buffer.allocUnsafe(varint());
  let at = 0;
  while (pos < delta.length) {
    const cmd = delta[pos++]!;
    if (cmd & 0x80) {
      let offset = 0;
      let size = 0;
      for (let i = 0; i < 4; i++) if (cmd & (1 << i)) offset += delta[pos++]! * 2 ** (8 * i);
      for (let i = 0; i < 3; i++) if (cmd & (1 << (4 + i))) size += delta[pos++]! << (8 * i);
      if (size === 0) size = 0x10000;
      at += base.copy(out, at, offset, offset + size);
    } else if (cmd) {
      at += delta.copy(out, at, pos, pos + cmd);
      pos += cmd;
    } else throw new Error('invalid delta instruction');
  }
  if (at !== out.length) throw new Error('delta result size mismatch');
  return out;
}

/**
 * Reads objects of the store at `gitdir`: packs (every `objects/pack/*.idx` present when opened) and
 * loose objects. `read` answers null for an object the store does not hold.
 */
export class ObjectReader {
  private readonly packs: Pack[] = [];
  /** Delta bases resolved so far, by pack and offset (`CACHE_BYTES` at most), least recently used first. */
  private readonly cache = new Map<number, GitObject>();
  private cachedBytes = 0;

  /** `known`: objects the caller holds already (a fetch's, as it indexed them), answered without reading. */
  constructor(
    private readonly gitdir: string,
    private readonly known: ReadonlyMap<string, GitObject> = new Map(),
  ) {
    const dir = path.join(gitdir, 'objects', 'pack');
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith('.idx'));
    } catch {
      names = []; // a store with loose objects only
    }
    for (const name of names) {
      const file = path.join(dir, name.replace(/\.idx$/, '.pack'));
      const size = statSync(file).size;
      const idx = readFileSync(path.join(dir, name));
      this.packs.push({ file, size, bytes: null, fd: null, idx, count: checkIndex(idx), sorted: null });
    }
  }

  /** Closes the pack files read object by object. */
  close(): void {
    for (const pack of this.packs) if (pack.fd !== null) closeSync(pack.fd);
    for (const pack of this.packs) pack.fd = null;
  }

  read(oid: string): GitObject | null {
    const held = this.known.get(oid);
    if (held) return held;
    const key = Buffer.from(oid, 'hex');
    for (const pack of this.packs) {
      const offset = key.length === 20 ? findOffset(pack, key) : undefined;
      if (offset !== undefined)
        return this.cache.get(this.packs.indexOf(pack) * PACK_SPAN + offset) ?? this.readPacked(pack, offset);
    }
    return this.readLoose(oid);
  }

  /**
   * `items` in the order their objects (`oidOf`) lie in the packs (loose ones last): read in this
   * order, each delta's base was read just before and is still cached.
   */
  packOrder<T>(items: readonly T[], oidOf: (item: T) => string): T[] {
    const position = (oid: string) => {
      const key = Buffer.from(oid, 'hex');
      for (const [i, pack] of this.packs.entries()) {
        const offset = key.length === 20 ? findOffset(pack, key) : undefined;
        if (offset !== undefined) return i * PACK_SPAN + offset;
      }
      return Number.MAX_SAFE_INTEGER;
    };
    const keyed = items.map((item) => ({ item, at: position(oidOf(item)) }));
    return keyed.sort((a, b) => a.at - b.at).map((k) => k.item);
  }

  private readLoose(oid: string): GitObject | null {
    let raw: Buffer;
    try {
      raw = inflateSync(readFileSync(path.join(this.gitdir, 'objects', oid.slice(0, 2), oid.slice(2))));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const space = raw.indexOf(0x20);
    const nul = raw.indexOf(0, space);
    const type = raw.toString('latin1', 0, space) as GitObjectType;
    return { type, object: raw.subarray(nul + 1) };
  }

  /** The delta base at `offset` of `pack`, from the cache or resolved (and then cached). */
  private readCached(pack: Pack, offset: number): GitObject {
    const key = this.packs.indexOf(pack) * PACK_SPAN + offset;
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const found = this.readPacked(pack, offset);
    if (found.object.length <= CACHE_OBJECT_BYTES) {
      this.cache.set(key, found);
      this.cachedBytes += found.object.length;
      for (const [old, object] of this.cache) {
        if (this.cachedBytes <= CACHE_BYTES) break;
        this.cache.delete(old);
        this.cachedBytes -= object.object.length;
      }
    }
    return found;
  }

  private readPacked(pack: Pack, offset: number): GitObject {
    const data = this.slice(pack, offset);
    const entry = entryHeader(data, 0);
    const zlib = data.subarray(entry.dataAt);
    if (entry.type) return { type: entry.type, object: inflateEntry(zlib, entry.size).object };
    let base: GitObject;
    if (entry.baseBack !== null) base = this.readCached(pack, offset - entry.baseBack);
    else {
      const found = this.read(entry.baseOid!);
      if (!found) throw new Error(`delta base ${entry.baseOid} missing`);
      base = found;
    }
    return { type: base.type, object: applyDelta(inflateEntry(zlib, entry.size).object, base.object) };
  }

  /**
   * The bytes of the object at `start` of `pack`: of a pack read whole, up to its end (inflate stops at
   * the end of the object's stream); of a large one, up to where the next object starts.
   */
  private slice(pack: Pack, start: number): Buffer {
    if (pack.size <= WHOLE_PACK_BYTES) return (pack.bytes ??= readFileSync(pack.file)).subarray(start, pack.size - 20);
    pack.fd ??= openSync(pack.file, 'r');
    const out = Buffer.allocUnsafe(endOf(pack, start) - start);
    readSync(pack.fd, out, 0, out.length, start);
    return out;
  }
}

export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
  type: 'tree' | 'blob' | 'commit';
}

/** The entries of a tree object (`mode SP name NUL oid` records). */
export function parseTree(tree: Buffer): TreeEntry[] {
  const out: TreeEntry[] = [];
  let pos = 0;
  while (pos < tree.length) {
    const space = tree.indexOf(0x20, pos);
    const nul = tree.indexOf(0, space);
    const mode = tree.toString('latin1', pos, space).padStart(6, '0');
    const oid = tree.toString('hex', nul + 1, nul + 21);
    const type = mode === '040000' ? 'tree' : mode === '160000' ? 'commit' : 'blob';
    out.push({ mode, name: tree.toString('utf8', space + 1, nul), oid, type });
    pos = nul + 21;
  }
  return out;
}

/** An object of `type`, or an error naming what is missing. */
export function readObject(reader: ObjectReader, oid: string, type: GitObjectType): Buffer {
  const found = reader.read(oid);
  if (!found || found.type !== type) throw new Error(`${type} ${oid} is missing from the object store`);
  return found.object;
}

export interface CommitFiles {
  /** `/`-separated path → blob and mode. */
  files: Map<string, { oid: string; mode: string }>;
  /** Paths `excluded` left out (a folder counts once). */
  excluded: number;
}

const UNSAFE_NAME = /[\\/\0]/;

/**
 * The regular files of a commit, walking its trees (symbolic links, submodules, `.git` and names no
 * file system takes are left out; `excluded` gets `dir/` for folders, `path` for files).
 */
export function commitFiles(
  reader: ObjectReader,
  commitSha: string,
  excluded: (p: string) => boolean = () => false,
): CommitFiles {
  const commit = readObject(reader, commitSha, 'commit').toString('utf8');
  const rootTree = /^tree ([0-9a-f]{40})/.exec(commit)?.[1];
  if (!rootTree) throw new Error(`commit ${commitSha} names no tree`);
  const out: CommitFiles = { files: new Map(), excluded: 0 };
  const walk = (treeOid: string, prefix: string): void => {
    for (const entry of parseTree(readObject(reader, treeOid, 'tree'))) {
      if (entry.name === '.' || entry.name === '..' || entry.name === '.git' || UNSAFE_NAME.test(entry.name)) continue;
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.type === 'tree') {
        if (excluded(`${rel}/`)) out.excluded++;
        else walk(entry.oid, rel);
        continue;
      }
      if (entry.type !== 'blob' || entry.mode === '120000') continue;
      if (excluded(rel)) out.excluded++;
      else out.files.set(rel, { oid: entry.oid, mode: entry.mode });
    }
  };
  walk(rootTree, '');
  return out;
}
