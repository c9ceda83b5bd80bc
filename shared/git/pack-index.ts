/**
 * Indexes a fetched pack natively and stores it where isomorphic-git reads packs
 * (`objects/pack/pack-<sha>.pack` beside a standard version-2 `.idx`). isomorphic-git's own indexing
 * of a fetched pack (`GitPackIndex.fromPack`, also behind its `indexPack`) inflates every object
 * through pako and hashes it in JavaScript: most of a first sync's CPU. Here every entry is inflated
 * once with node:zlib (which also tells where its zlib stream ends), whole objects are hashed with
 * node:crypto as they come, and deltas are resolved afterwards base first, as `git index-pack` does
 * (each chain's root inflated again, each delta applied once, its inflated instructions kept from the
 * first pass and dropped once applied). The pack's trailing checksum is verified before anything is
 * written; a delta whose base is neither in the pack nor in the store fails the whole pack.
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { applyDelta, entryHeader, inflateEntry, type GitObject, type GitObjectType } from './object-reader.js';
import { timeSlices } from './time-slices.js';

/** One entry of the pack, as the first pass finds it. */
interface Entry {
  offset: number;
  /** CRC-32 of the entry's packed bytes (header and zlib data), as the index records it. */
  crc: number;
  /** The object's type once known (whole objects at once, deltas when resolved). */
  type: GitObjectType | null;
  /** Where the entry's zlib data starts, and its inflated size. */
  dataAt: number;
  size: number;
  /** The inflated delta instructions of a delta entry until it is resolved. */
  delta: Buffer | null;
  oid: Buffer | null;
}

function hashObject(type: GitObjectType, object: Buffer): Buffer {
  return createHash('sha1').update(`${type} ${object.length}\0`).update(object).digest();
}

/** The pack's object count after checking its header and trailing checksum. */
function checkPack(pack: Buffer): number {
  if (pack.length < 32 || pack.toString('latin1', 0, 4) !== 'PACK') throw new Error('not a Git pack');
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new Error(`unsupported pack version ${version}`);
  const sum = createHash('sha1')
    .update(pack.subarray(0, pack.length - 20))
    .digest();
  if (!sum.equals(pack.subarray(pack.length - 20))) throw new Error('pack checksum mismatch (corrupted download)');
  return pack.readUInt32BE(8);
}

/** What indexing takes besides the pack. */
export interface IndexOptions {
  /** A REF_DELTA base the pack does not hold (a thin pack's objects already in the store); null when absent. */
  external?: (oid: string) => GitObject | null;
  /** Told every object as its content is known (a checkout that follows need not inflate it again). */
  onObject?: (oid: Buffer, object: GitObject) => void;
}

/** First pass: every entry's extent, CRC and delta base; whole objects hashed, deltas' instructions kept. */
async function readEntries(pack: Buffer, count: number, onObject: IndexOptions['onObject']) {
  const entries: Entry[] = [];
  /** Deltas by their base: a pack offset (OFS_DELTA) or an oid (REF_DELTA). */
  const childrenAt = new Map<number, number[]>();
  const childrenOf = new Map<string, number[]>();
  const add = <K>(map: Map<K, number[]>, key: K, i: number) => {
    const list = map.get(key);
    if (list) list.push(i);
    else map.set(key, [i]);
  };
  const end = pack.length - 20;
  const pause = timeSlices();
  let pos = 12;
  for (let i = 0; i < count; i++) {
    if (i % 256 === 0) await pause();
    const offset = pos;
    const { type, size, baseBack, baseOid, dataAt } = entryHeader(pack, pos);
    if (baseBack !== null) add(childrenAt, offset - baseBack, i);
    else if (baseOid !== null) add(childrenOf, baseOid, i);
    if (dataAt >= end) throw new Error('truncated pack');
    const { object, consumed } = inflateEntry(pack.subarray(dataAt, end), size);
    pos = dataAt + consumed;
    const crc = crc32(pack.subarray(offset, pos));
    const oid = type ? hashObject(type, object) : null;
    if (type && oid) onObject?.(oid, { type, object });
    entries.push({
      offset,
      crc,
      type,
      dataAt,
      size,
      delta: type ? null : object,
      oid,
    });
  }
  if (pos !== end) throw new Error('pack has bytes after its last object');
  return { entries, childrenAt, childrenOf };
}

/** One object as a pack index lists it. */
export interface IndexedObject {
  oid: Buffer;
  /** CRC-32 of the object's bytes in the pack (header and compressed data). */
  crc: number;
  offset: number;
}

/**
 * The version-2 `.idx` of a pack's objects, as `git index-pack` writes it: sorted by oid (a repeated
 * oid listed once), the fan-out, the CRCs, the offsets (those past 2 GiB in the 64-bit table), the
 * pack's checksum and the index's own. Used by the fetch's indexer and by `PackWriter`.
 */
export function packIndexV2(objects: readonly IndexedObject[], packSum: Buffer): Buffer {
  // Sorted on the oids' first four bytes as numbers (a call into Buffer.compare per comparison cost
  // more than the rest of the index), the whole oids compared only where those are equal.
  const keyed = objects.map((e) => ({ e, key: e.oid.readUInt32BE(0) }));
  keyed.sort((a, b) => a.key - b.key || Buffer.compare(a.e.oid, b.e.oid));
  const unique = keyed
    .filter((x, i) => i === 0 || x.key !== keyed[i - 1]!.key || !x.e.oid.equals(keyed[i - 1]!.e.oid))
    .map((x) => x.e);
  const head = Buffer.alloc(8 + 256 * 4);
  head.writeUInt32BE(0xff744f63, 0);
  head.writeUInt32BE(2, 4);
  const crcs = Buffer.alloc(unique.length * 4);
  const offsets = Buffer.alloc(unique.length * 4);
  const large: Buffer[] = [];
  unique.forEach((e, i) => {
    crcs.writeUInt32BE(e.crc >>> 0, i * 4);
    if (e.offset < 0x80000000) offsets.writeUInt32BE(e.offset, i * 4);
    else {
      offsets.writeUInt32BE((0x80000000 | large.length) >>> 0, i * 4);
      large.push(Buffer.alloc(8));
      large[large.length - 1]!.writeBigUInt64BE(BigInt(e.offset));
    }
  });
  // Fan-out: entry k counts the oids whose first byte is at most k.
  for (let k = 0, at = 0; k < 256; k++) {
    while (at < unique.length && unique[at]!.oid[0]! <= k) at++;
    head.writeUInt32BE(at, 8 + k * 4);
  }
  const body = Buffer.concat([head, ...unique.map((e) => e.oid), crcs, offsets, ...large, packSum]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** The `.idx` (version 2) of `pack`, as `git index-pack` writes it. */
export async function indexPack(pack: Buffer, options: IndexOptions = {}): Promise<Buffer> {
  const { external = () => null, onObject } = options;
  const count = checkPack(pack);
  const { entries, childrenAt, childrenOf } = await readEntries(pack, count, onObject);
  const pause = timeSlices();
  let resolved = entries.filter((e) => e.oid).length;
  let steps = 0;
  /**
   * Applies every delta based on `base` (entry `at`, or an object outside the pack), depth first: one
   * frame per object of the chain being resolved, so memory holds a chain, not all of a base's siblings.
   */
  const resolveFrom = async (base: GitObject, oid: Buffer, at: number | null): Promise<void> => {
    const kidsOf = (o: Buffer, k: number | null) => [
      ...(k === null ? [] : (childrenAt.get(entries[k]!.offset) ?? [])),
      ...(childrenOf.get(o.toString('hex')) ?? []),
    ];
    const frames = [{ base, kids: kidsOf(oid, at), next: 0 }];
    while (frames.length) {
      const frame = frames[frames.length - 1]!;
      if (frame.next === frame.kids.length) {
        frames.pop();
        continue;
      }
      const k = frame.kids[frame.next++]!;
      const child = entries[k]!;
      if (child.oid) continue;
      // Only now and then: each await costs a promise (and any async hooks) per object otherwise.
      if (++steps % 256 === 0) await pause();
      const object = applyDelta(child.delta!, frame.base.object);
      child.delta = null;
      child.type = frame.base.type;
      child.oid = hashObject(child.type, object);
      onObject?.(child.oid, { type: child.type, object });
      resolved++;
      frames.push({ base: { type: child.type, object }, kids: kidsOf(child.oid, k), next: 0 });
    }
  };
  for (const [i, e] of entries.entries()) {
    if (!e.type || e.delta || !e.oid) continue;
    if (!childrenAt.has(e.offset) && !childrenOf.has(e.oid.toString('hex'))) continue;
    const { object } = inflateEntry(pack.subarray(e.dataAt, pack.length - 20), e.size);
    await resolveFrom({ type: e.type, object }, e.oid, i);
  }
  // A thin pack: deltas whose base is already in the store.
  for (const [oid, kids] of childrenOf) {
    if (kids.every((k) => entries[k]!.oid)) continue;
    const base = external(oid);
    if (base) await resolveFrom(base, Buffer.from(oid, 'hex'), null);
  }
  if (resolved !== entries.length)
    throw new Error(`pack has ${entries.length - resolved} deltas whose base is missing`);
  const indexed = entries.map((e) => ({ oid: e.oid!, crc: e.crc, offset: e.offset }));
  return packIndexV2(indexed, pack.subarray(pack.length - 20));
}

/**
 * Indexes `pack` and stores it in the object store at `gitdir` (the pack, then its index: a reader
 * lists `.idx` files, so it never sees a pack without its objects); answers the pack's file name.
 */
export async function storePack(gitdir: string, pack: Buffer, options: IndexOptions = {}): Promise<string> {
  const idx = await indexPack(pack, options);
  const dir = path.join(gitdir, 'objects', 'pack');
  const name = `pack-${pack.toString('hex', pack.length - 20)}`;
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${name}.pack`), pack);
  const temp = path.join(dir, `tmp-${name}.idx`);
  await writeFile(temp, idx);
  await rename(temp, path.join(dir, `${name}.idx`));
  return `${name}.pack`;
}
