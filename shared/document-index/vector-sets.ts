/**
 * The exact vector path's in-memory sets (`vectors.ts` caches them per index and collection): each
 * (index, collection) set holds the index's unit vectors in one of two layouts, chosen from the stored
 * vectors' density when the set first receives rows:
 *
 * - `DenseRows`: blocks of column-major float32 rows, scanned block by block (a real embedding model's
 *   vectors, non-zero in nearly every dimension).
 * - `SparseRows`: per-dimension posting lists (slot ids and float32 values of the non-zero entries), a
 *   query scored by walking only its own non-zero dimensions' lists (the local hashing embedder: a chunk
 *   is non-zero in about 4% of its 1,536 buckets, a query of a few words in a handful). A full scan's
 *   two inner loops run in a WebAssembly kernel where the runtime has one (`scan-kernel.ts`).
 *
 * Both score a row exactly as a row-by-row dot product of the unit vectors does: the products of the
 * query's non-zero dimensions summed in ascending dimension order from zero, in doubles. The sparse
 * layout leaves out the products whose stored value is zero, which adds nothing (x + ±0 is x), so the two
 * give the same doubles, and the same ranking, for the same vectors.
 */

import type { ChunkRows } from './chunk-rows.js';
import { KERNEL_KTH_MAX, KERNEL_TILE, scanKernel, type ScanKernel } from './scan-kernel.js';

export interface VectorHit {
  id: string;
  sim: number;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The first byte of a sparse stored vector ('s'). */
const SPARSE_TAG = 0x73;
/** A sparse stored vector's bytes before its entries: the tag and the dimension (uint32). */
const SPARSE_HEAD = 5;
/** A sparse entry: the dimension (uint16) and the float4 value. */
const SPARSE_ENTRY = 6;
/** `encodeVector`'s scratch: the non-zero dimensions of the vector being encoded. */
let nonZeroAt = new Uint16Array(0);

/**
 * A vector as stored in `doc_embeddings.vec`, in the shorter of two forms. Dense: its float4 values,
 * little-endian, 4 bytes a dimension. Sparse (fewer than about two thirds of the values non-zero, e.g. the
 * local embedder's vectors, and at most 65,536 dimensions): the tag byte `s`, the dimension as a
 * little-endian uint32, then each non-zero value's dimension (uint16) and float4 value, dimensions
 * ascending: 5 + 6n bytes, an odd length, where a dense vector's is a multiple of 4. Both decode to the same
 * float4 values (`decodeVector`; in SQL `doc_vec_floats`).
 */
export function encodeVector(v: readonly number[]): Buffer {
  if (v.length <= 65_536) {
    if (nonZeroAt.length < v.length) nonZeroAt = new Uint16Array(v.length);
    let nz = 0;
    for (let i = 0; i < v.length; i++) if (v[i] !== 0) nonZeroAt[nz++] = i;
    if (SPARSE_HEAD + SPARSE_ENTRY * nz < 4 * v.length) {
      const b = Buffer.allocUnsafe(SPARSE_HEAD + SPARSE_ENTRY * nz);
      const view = new DataView(b.buffer, b.byteOffset, b.length);
      view.setUint8(0, SPARSE_TAG);
      view.setUint32(1, v.length, true);
      for (let k = 0, at = SPARSE_HEAD; k < nz; k++, at += SPARSE_ENTRY) {
        view.setUint16(at, nonZeroAt[k]!, true);
        view.setFloat32(at + 2, v[nonZeroAt[k]!]!, true);
      }
      return b;
    }
  }
  if (LITTLE_ENDIAN) {
    const f = Float32Array.from(v);
    return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
  }
  const b = Buffer.allocUnsafe(v.length * 4);
  v.forEach((x, i) => b.writeFloatLE(x, i * 4));
  return b;
}

const isSparse = (b: Uint8Array) => (b.length & 1) === 1 && b[0] === SPARSE_TAG;

/** The dimension of a stored vector (either form) without decoding it. */
export function storedDim(b: Uint8Array): number {
  return isSparse(b) ? new DataView(b.buffer, b.byteOffset, b.length).getUint32(1, true) : b.length >> 2;
}

export function decodeVector(b: Uint8Array): Float32Array {
  if (isSparse(b)) {
    const view = new DataView(b.buffer, b.byteOffset, b.length);
    const out = new Float32Array(view.getUint32(1, true));
    for (let at = SPARSE_HEAD; at + SPARSE_ENTRY <= b.length; at += SPARSE_ENTRY)
      out[view.getUint16(at, true)] = view.getFloat32(at + 2, true);
    return out;
  }
  const out = new Float32Array(b.length >> 2);
  new Uint8Array(out.buffer).set(b.subarray(0, out.length * 4));
  if (!LITTLE_ENDIAN) for (let i = 0; i < out.length; i++) out[i] = Buffer.from(b).readFloatLE(i * 4);
  return out;
}

/** The query scaled to unit length, truncated or zero-padded to `dim`. */
export function unit(q: readonly number[], dim: number): Float32Array {
  const out = new Float32Array(dim);
  let n = 0;
  for (let i = 0; i < Math.min(dim, q.length); i++) {
    out[i] = q[i]!;
    n += q[i]! * q[i]!;
  }
  if (n > 0) {
    const s = 1 / Math.sqrt(n);
    for (let i = 0; i < dim; i++) out[i]! *= s;
  }
  return out;
}

/** `v` scaled to unit length into `out` at `at` (zeros stay zeros). */
function unitInto(v: Float32Array, out: Float32Array, at: number): void {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!;
  const s = n > 0 ? 1 / Math.sqrt(n) : 0;
  for (let i = 0; i < v.length; i++) out[at + i] = v[i]! * s;
}

/**
 * Calls `fn` with each non-zero value below dimension `dim` of a sparse stored vector, scaled to unit
 * length as `unitInto` scales the decoded vector (the squares summed in ascending dimension order, a zero
 * adding nothing; each value times the inverse root, rounded to float4), dimensions ascending.
 */
function forEachSparseUnit(b: Uint8Array, dim: number, fn: (d: number, x: number) => void): void {
  let n = 0;
  forEachSparseValue(b, dim, (_, x) => (n += x * x));
  const s = n > 0 ? 1 / Math.sqrt(n) : 0;
  forEachSparseValue(b, dim, (d, x) => {
    const u = Math.fround(x * s);
    if (u !== 0 && !Number.isNaN(u)) fn(d, u); // a NaN (a stored NaN or infinity) is kept out of the lists
  });
}

/** Calls `fn` with each stored value below dimension `dim` of a sparse stored vector, dimensions ascending. */
function forEachSparseValue(b: Uint8Array, dim: number, fn: (d: number, x: number) => void): void {
  const view = new DataView(b.buffer, b.byteOffset, b.length);
  for (let at = SPARSE_HEAD; at + SPARSE_ENTRY <= b.length; at += SPARSE_ENTRY) {
    const d = view.getUint16(at, true);
    if (d >= dim) break;
    fn(d, view.getFloat32(at + 2, true));
  }
}

/**
 * Scores stored vectors against the unit query `q` exactly as a scan of either layout does: each vector's
 * first `dim` float4 values scaled to unit length as `unitInto` writes them (the squares summed in
 * order, each value times the inverse root, rounded to float4), the products of the query's non-zero
 * dimensions summed in ascending dimension order from zero, in doubles. Only the query's dimensions are
 * scaled. A sparse vector is read in place, its entries alone (a zero adds nothing to either sum): decoding
 * it whole took a `dim`-long array and two passes over it per changed chunk (at 100k chunks, the ranking of
 * a dozen changed chunks by the first SEARCH after another process's write: about 0.25 ms before, 0.18 after).
 */
function storedScorer(q: Float32Array, dim: number): (raw: Uint8Array) => number {
  const dims = nonZero(q);
  return (raw) => {
    if (isSparse(raw)) {
      let n = 0;
      forEachSparseValue(raw, dim, (_, x) => (n += x * x));
      const inv = n > 0 ? 1 / Math.sqrt(n) : 0;
      let s = 0;
      forEachSparseValue(raw, dim, (d, x) => {
        if (q[d] !== 0 && !Number.isNaN(q[d])) s = s + q[d]! * Math.fround(x * inv);
      });
      return s;
    }
    const v = decodeVector(raw).subarray(0, dim);
    let n = 0;
    for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!;
    const inv = n > 0 ? 1 / Math.sqrt(n) : 0;
    let s = 0;
    for (const d of dims) s = s + q[d]! * Math.fround((d < v.length ? v[d]! : 0) * inv);
    return s;
  };
}

/** Keeps the best `k` hits, ordered by similarity (higher first), then chunk id. */
export class TopK {
  readonly hits: VectorHit[] = [];
  constructor(readonly k: number) {}
  get floor(): number {
    return this.k <= 0 || this.hits.length < this.k ? 0 : this.hits[this.hits.length - 1]!.sim;
  }
  offer(id: string, sim: number): void {
    if (sim <= 0 || this.k <= 0) return;
    const h = this.hits;
    if (h.length >= this.k) {
      const last = h[h.length - 1]!;
      if (sim < last.sim || (sim === last.sim && id > last.id)) return;
    }
    let i = h.length;
    while (i > 0 && (h[i - 1]!.sim < sim || (h[i - 1]!.sim === sim && h[i - 1]!.id > id))) i--;
    h.splice(i, 0, { id, sim });
    if (h.length > this.k) h.pop();
  }
}

/**
 * The best `k` slots of one scan (a set's row numbers, with their scores), as `TopK` keeps hits but
 * without an object per offer: a binary heap in typed arrays whose root is the worst kept (the lowest
 * score; among equal scores the greatest chunk id, so ties keep the smaller ids, as `TopK` does). A
 * scan offers hundreds of slots before its floor settles; the survivors alone go to the `TopK` after.
 */
class SlotHeap {
  private readonly scores: Float64Array;
  private readonly slots: Int32Array;
  readonly k: number;
  private n = 0;

  /** Keeps `k` slots, at most `candidates` (the slots the scan may offer: a `k` of "every row" allocates no more). */
  constructor(
    k: number,
    candidates: number,
    private readonly ids: ReadonlyArray<string | undefined>,
  ) {
    this.k = Math.max(0, Math.min(k, candidates));
    this.scores = new Float64Array(this.k);
    this.slots = new Int32Array(this.k);
  }

  /** The score a slot must reach to be kept (0 until `k` are). */
  get floor(): number {
    return this.n < this.k ? 0 : this.scores[0]!;
  }

  /** Heap entry `a` is worse than `b`. */
  private worse(a: number, b: number): boolean {
    const sa = this.scores[a]!;
    const sb = this.scores[b]!;
    return sa < sb || (sa === sb && this.ids[this.slots[a]!]! > this.ids[this.slots[b]!]!);
  }

  private swap(a: number, b: number): void {
    const { scores, slots } = this;
    const s = scores[a]!;
    const t = slots[a]!;
    scores[a] = scores[b]!;
    slots[a] = slots[b]!;
    scores[b] = s;
    slots[b] = t;
  }

  offer(slot: number, score: number): void {
    const { scores, slots, k } = this;
    if (k <= 0) return;
    if (this.n < k) {
      let i = this.n++;
      scores[i] = score;
      slots[i] = slot;
      for (let parent = (i - 1) >> 1; i > 0 && this.worse(i, parent); i = parent, parent = (i - 1) >> 1)
        this.swap(i, parent);
      return;
    }
    const root = scores[0]!;
    if (score < root || (score === root && this.ids[slot]! > this.ids[slots[0]!]!)) return;
    scores[0] = score;
    slots[0] = slot;
    for (let i = 0; ;) {
      const left = 2 * i + 1;
      if (left >= k) return;
      const child = left + 1 < k && this.worse(left + 1, left) ? left + 1 : left;
      if (!this.worse(child, i)) return;
      this.swap(i, child);
      i = child;
    }
  }

  /** Offers the kept slots to `top` as hits. */
  drainInto(top: TopK): void {
    for (let i = 0; i < this.n; i++) top.offer(this.ids[this.slots[i]!]!, this.scores[i]!);
    this.n = 0;
  }
}

/**
 * The query's non-zero dimensions, ascending. A NaN one is left out (it adds nothing, in every layout and in
 * the kernel, whose sweep tests sums sixteen at a time and must never meet a NaN sum).
 */
function nonZero(q: Float32Array): number[] {
  const dims: number[] = [];
  for (let d = 0; d < q.length; d++) if (q[d] !== 0 && !Number.isNaN(q[d])) dims.push(d);
  return dims;
}

/** What both layouts answer. */
interface Rows {
  readonly dim: number;
  readonly size: number;
  readonly bytes: number;
  append(ids: string[], raw: Uint8Array[]): void;
  upsert(id: string, raw: Uint8Array): void;
  remove(id: string): void;
  scan(q: Float32Array, top: TopK): void;
  scanRows(q: Float32Array, ids: readonly string[], top: TopK): void;
  /** Gives back growth headroom (after a whole load). */
  trim(): void;
}

/** Rows per block of `DenseRows`: growing adds a block, never copies the set. */
const BLOCK = 4096;

/**
 * Rows unit-normalised, in blocks of `BLOCK` rows, each block column-major (row `r`'s value in dimension
 * `d` at `blocks[r / BLOCK][d * BLOCK + r % BLOCK]`). A search multiplies only the query's non-zero
 * dimensions, each a sequential pass over one column. Writes are applied in place (a changed chunk is
 * overwritten, a deleted one swapped with the last row, a new one appended).
 */
export class DenseRows implements Rows {
  readonly ids: string[] = [];
  private readonly rowOf = new Map<string, number>();
  private readonly blocks: Float32Array[] = [];
  private scratch = new Float64Array(0);

  constructor(readonly dim: number) {}

  /** Adds new chunks at the end (ids not in the set yet): rows normalised, then written to the columns up to 64 rows at a time. */
  append(ids: string[], raw: Uint8Array[]): void {
    const { dim } = this;
    const tile = new Float32Array(64 * dim);
    const first = this.ids.length;
    const end = first + ids.length;
    for (let start = first; start < end;) {
      const stop = Math.min(end, start + 64, (Math.floor(start / BLOCK) + 1) * BLOCK);
      while (this.blocks.length * BLOCK <= start) this.blocks.push(new Float32Array(BLOCK * dim));
      tile.fill(0);
      for (let r = start; r < stop; r++)
        unitInto(decodeVector(raw[r - first]!).subarray(0, dim), tile, (r - start) * dim);
      const block = this.blocks[Math.floor(start / BLOCK)]!;
      const at = start % BLOCK;
      for (let d = 0; d < dim; d++)
        for (let r = start; r < stop; r++) block[d * BLOCK + at + r - start] = tile[(r - start) * dim + d]!;
      start = stop;
    }
    ids.forEach((id, i) => {
      this.rowOf.set(id, first + i);
      this.ids.push(id);
    });
  }

  get size(): number {
    return this.ids.length;
  }

  get bytes(): number {
    return this.blocks.length * BLOCK * this.dim * 4 + this.ids.length * 80;
  }

  trim(): void {}

  upsert(id: string, raw: Uint8Array): void {
    const row = this.rowOf.get(id);
    if (row === undefined) return this.append([id], [raw]);
    const unitV = new Float32Array(this.dim);
    unitInto(decodeVector(raw).subarray(0, this.dim), unitV, 0);
    const block = this.blocks[Math.floor(row / BLOCK)]!;
    const at = row % BLOCK;
    for (let d = 0; d < this.dim; d++) block[d * BLOCK + at] = unitV[d]!;
  }

  remove(id: string): void {
    const row = this.rowOf.get(id);
    if (row === undefined) return;
    const last = this.ids.length - 1;
    if (row !== last) {
      const to = this.blocks[Math.floor(row / BLOCK)]!;
      const from = this.blocks[Math.floor(last / BLOCK)]!;
      for (let d = 0; d < this.dim; d++) to[d * BLOCK + (row % BLOCK)] = from[d * BLOCK + (last % BLOCK)]!;
      this.ids[row] = this.ids[last]!;
      this.rowOf.set(this.ids[row]!, row);
    }
    this.ids.pop();
    this.rowOf.delete(id);
  }

  scanRows(q: Float32Array, ids: readonly string[], top: TopK): void {
    for (const id of ids) {
      const row = this.rowOf.get(id);
      if (row === undefined) continue;
      const block = this.blocks[Math.floor(row / BLOCK)]!;
      const at = row % BLOCK;
      let s = 0;
      for (let d = 0; d < this.dim; d++) if (q[d] !== 0) s = s + q[d]! * block[d * BLOCK + at]!;
      if (s > 0) top.offer(id, s);
    }
  }

  /**
   * Block by block: the block's scores (a scratch of `BLOCK` doubles, which stays in the CPU's cache) are
   * summed over the query's non-zero dimensions four columns per pass, each row's sum still taken dimension
   * by dimension in ascending order from zero, and the block's rows above the top's floor are offered
   * before the next block is scored, so no pass over a whole-set score array follows.
   */
  scan(q: Float32Array, top: TopK): void {
    const n = this.ids.length;
    const dims = nonZero(q);
    if (!n || !dims.length) return;
    if (this.scratch.length < BLOCK) this.scratch = new Float64Array(BLOCK);
    const scores = this.scratch;
    const best = new SlotHeap(top.k, n, this.ids);
    let floor = top.floor;
    for (let b = 0; b * BLOCK < n; b++) {
      const block = this.blocks[b]!;
      const base = b * BLOCK;
      const rows = Math.min(BLOCK, n - base);
      scores.fill(0, 0, rows);
      for (let j = 0; j < dims.length; j += 4) {
        const left = dims.length - j;
        const o0 = dims[j]! * BLOCK;
        const q0 = q[dims[j]!]!;
        if (left >= 4) {
          const [o1, o2, o3] = [dims[j + 1]! * BLOCK, dims[j + 2]! * BLOCK, dims[j + 3]! * BLOCK];
          const [q1, q2, q3] = [q[dims[j + 1]!]!, q[dims[j + 2]!]!, q[dims[j + 3]!]!];
          for (let r = 0; r < rows; r++)
            scores[r] =
              scores[r]! + q0 * block[o0 + r]! + q1 * block[o1 + r]! + q2 * block[o2 + r]! + q3 * block[o3 + r]!;
        } else if (left === 3) {
          const [o1, o2] = [dims[j + 1]! * BLOCK, dims[j + 2]! * BLOCK];
          const [q1, q2] = [q[dims[j + 1]!]!, q[dims[j + 2]!]!];
          for (let r = 0; r < rows; r++)
            scores[r] = scores[r]! + q0 * block[o0 + r]! + q1 * block[o1 + r]! + q2 * block[o2 + r]!;
        } else if (left === 2) {
          const o1 = dims[j + 1]! * BLOCK;
          const q1 = q[dims[j + 1]!]!;
          for (let r = 0; r < rows; r++) scores[r] = scores[r]! + q0 * block[o0 + r]! + q1 * block[o1 + r]!;
        } else for (let r = 0; r < rows; r++) scores[r] = scores[r]! + q0 * block[o0 + r]!;
      }
      for (let r = 0; r < rows; r++) {
        const s = scores[r]!;
        if (s > 0 && s >= floor) {
          best.offer(base + r, s);
          floor = Math.max(floor, best.floor);
        }
      }
    }
    best.drainInto(top);
  }
}

/** Entries per segment of a posting list (a power of two). */
const SEGMENT_BITS = 13;
const SEGMENT = 1 << SEGMENT_BITS;
/** Entries a trimmed list keeps free at most (a sixteenth of its tail, at least 16). */
const TRIM_HEADROOM = 256;

/**
 * One dimension's posting list: the slots holding a non-zero value there (ascending) and the values, in
 * segments of `SEGMENT` entries (the last one growing by doubling up to that), so an append never copies
 * more than one segment (a whole-list copy of a large index would stall the search that applies a write).
 */
export class Posting {
  slots: Uint32Array[] = [];
  vals: Float32Array[] = [];
  n = 0;

  push(slot: number, val: number): void {
    const seg = this.n >>> SEGMENT_BITS;
    const at = this.n & (SEGMENT - 1);
    if (seg === this.slots.length) {
      this.slots.push(new Uint32Array(16));
      this.vals.push(new Float32Array(16));
    } else if (at === this.slots[seg]!.length) this.resizeTail(Math.min(SEGMENT, at * 2));
    this.slots[seg]![at] = slot;
    this.vals[seg]![at] = val;
    this.n++;
  }

  private resizeTail(cap: number): void {
    const seg = this.slots.length - 1;
    const used = this.n - seg * SEGMENT;
    const slots = new Uint32Array(cap);
    slots.set(this.slots[seg]!.subarray(0, used));
    const vals = new Float32Array(cap);
    vals.set(this.vals[seg]!.subarray(0, used));
    this.slots[seg] = slots;
    this.vals[seg] = vals;
  }

  /** Entries allocated (the last segment's headroom included). */
  get capacity(): number {
    return this.slots.reduce((n, s) => n + s.length, 0);
  }

  /**
   * Gives back most of the last segment's headroom, keeping a little (`TRIM_HEADROOM`): a list trimmed
   * to its exact size copies its tail on its next append, and the first writes after a whole load touch
   * most lists, so those copies (up to a segment per list) landed in the searches that applied the writes.
   */
  trim(): void {
    const seg = this.slots.length - 1;
    if (seg < 0) return;
    const used = this.n - seg * SEGMENT;
    const cap = Math.min(SEGMENT, used + Math.min(TRIM_HEADROOM, Math.max(16, used >>> 4)));
    if (cap < this.slots[seg]!.length) this.resizeTail(cap);
  }

  slotAt(i: number): number {
    return this.slots[i >>> SEGMENT_BITS]![i & (SEGMENT - 1)]!;
  }

  /** The first entry holding a slot >= `slot` (searched from entry `lo` on). */
  lowerBound(slot: number, lo = 0): number {
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.slotAt(mid) < slot) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Keeps the entries whose slot `renum` maps (to its new number; -1 drops it), in order. */
  compact(renum: Int32Array): void {
    let w = 0;
    for (let r = 0; r < this.n; r++) {
      const to = renum[this.slotAt(r)]!;
      if (to < 0) continue;
      const [rs, ra] = [r >>> SEGMENT_BITS, r & (SEGMENT - 1)];
      const [ws, wa] = [w >>> SEGMENT_BITS, w & (SEGMENT - 1)];
      this.slots[ws]![wa] = to;
      this.vals[ws]![wa] = this.vals[rs]![ra]!;
      w++;
    }
    this.n = w;
    const segments = Math.ceil(w / SEGMENT);
    this.slots.length = segments;
    this.vals.length = segments;
  }
}

/** Slots per tile of a sparse scan: 32K doubles (256 KB), which stay in a core's L2 cache. */
const TILE = KERNEL_TILE;

/**
 * Adds `weight` times entries `from` to `end` of `list` into `sums` (indexed by slot minus `base`): four
 * entries a pass (a list holds a slot once, so each sum still adds its dimensions in order), about 40% less
 * time than one a pass, the loop's bookkeeping and bounds checks shared.
 */
function addInto(sums: Float64Array, base: number, list: Posting, weight: number, from: number, end: number): void {
  for (let i = from; i < end;) {
    const seg = i >>> SEGMENT_BITS;
    const slots = list.slots[seg]!;
    const vals = list.vals[seg]!;
    const stop = Math.min(SEGMENT, end - seg * SEGMENT);
    let r = i & (SEGMENT - 1);
    for (; r + 4 <= stop; r += 4) {
      const s0 = slots[r]! - base;
      const s1 = slots[r + 1]! - base;
      const s2 = slots[r + 2]! - base;
      const s3 = slots[r + 3]! - base;
      sums[s0] = sums[s0]! + weight * vals[r]!;
      sums[s1] = sums[s1]! + weight * vals[r + 1]!;
      sums[s2] = sums[s2]! + weight * vals[r + 2]!;
      sums[s3] = sums[s3]! + weight * vals[r + 3]!;
    }
    for (; r < stop; r++) {
      const s0 = slots[r]! - base;
      sums[s0] = sums[s0]! + weight * vals[r]!;
    }
    i = seg * SEGMENT + stop;
  }
}

/**
 * Offers a tile's live slots (`base` to `end`) whose sums reach the kept floor (and `atLeast`) to `best`:
 * four sums a pass tested at once (one predictable branch for four slots once the floor has settled, about
 * a third less time than one a pass).
 */
function offerTile(
  sums: Float64Array,
  base: number,
  end: number,
  ids: ReadonlyArray<string | undefined>,
  best: SlotHeap,
  atLeast: number,
): void {
  const n = end - base;
  let floor = Math.max(atLeast, best.floor);
  let r = 0;
  for (; r + 4 <= n; r += 4) {
    if (sums[r]! < floor && sums[r + 1]! < floor && sums[r + 2]! < floor && sums[r + 3]! < floor) continue;
    for (let k = r; k < r + 4; k++) {
      const s = sums[k]!;
      if (s >= floor && s > 0 && ids[base + k] !== undefined) {
        best.offer(base + k, s);
        floor = Math.max(floor, best.floor);
      }
    }
  }
  for (; r < n; r++) {
    const s = sums[r]!;
    if (s >= floor && s > 0 && ids[base + r] !== undefined) {
      best.offer(base + r, s);
      floor = Math.max(floor, best.floor);
    }
  }
}

/**
 * Rows unit-normalised, kept as one posting list per dimension: the slots (row numbers) whose value there
 * is non-zero, in ascending slot order, and those float32 values. A scan walks only the query's non-zero
 * dimensions' lists, in ascending dimension order, adding each product into the slot's double (the first
 * product of a slot is its sum, as 0 + x is x), and offers only the slots it touched. New rows take the
 * next slots (so the lists stay sorted); a changed chunk's old slot is retired and the chunk appended
 * again; a deleted chunk's slot is retired. Retired slots keep their entries (never offered) until they
 * are a quarter of the slots, when the lists are compacted in place (slots renumbered, order kept).
 */
export class SparseRows implements Rows {
  /** Chunk id by slot; undefined for a retired slot. */
  private ids: Array<string | undefined> = [];
  private readonly rowOf = new Map<string, number>();
  private readonly lists: Posting[];
  private retired = 0;
  /** The retired slots (`retired` of them); `zeroRetired` sorts them when a retirement came since it last did. */
  private retiredSlots: number[] = [];
  private retiredSorted = true;
  /** The scan's sums of one tile of slots (`score`), all zero between tiles. */
  private sums = new Float64Array(0);

  /** `kernel`: the WebAssembly scan kernel (`scan-kernel.ts`), or null for the JavaScript loops alone. */
  constructor(
    readonly dim: number,
    private readonly kernel: ScanKernel | null = scanKernel(),
  ) {
    this.lists = Array.from({ length: dim }, () => new Posting());
  }

  get size(): number {
    return this.ids.length - this.retired;
  }

  /** The lists' typed arrays as allocated, the scan's sums, and about 80 bytes per chunk id. */
  get bytes(): number {
    let entries = 0;
    for (const l of this.lists) entries += l.capacity;
    return entries * 8 + this.sums.length * 8 + this.ids.length * 80;
  }

  /** The stored non-zero entries (tests, benchmark). */
  get entries(): number {
    return this.lists.reduce((n, l) => n + l.n, 0);
  }

  append(ids: string[], raw: Uint8Array[]): void {
    const v = new Float32Array(this.dim);
    ids.forEach((id, i) => {
      const slot = this.ids.length;
      this.ids.push(id);
      this.rowOf.set(id, slot);
      const b = raw[i]!;
      if (isSparse(b)) {
        forEachSparseUnit(b, this.dim, (d, x) => this.lists[d]!.push(slot, x));
        return;
      }
      v.fill(0);
      unitInto(decodeVector(b).subarray(0, this.dim), v, 0);
      for (let d = 0; d < this.dim; d++) if (v[d] !== 0 && !Number.isNaN(v[d])) this.lists[d]!.push(slot, v[d]!);
    });
  }

  trim(): void {
    for (const l of this.lists) l.trim();
    this.tileSums(); // with the load, so a set's bytes do not grow at its first scan
  }

  upsert(id: string, raw: Uint8Array): void {
    this.retire(id);
    this.append([id], [raw]);
    this.compactIfWorthIt();
  }

  remove(id: string): void {
    this.retire(id);
    this.compactIfWorthIt();
  }

  private retire(id: string): void {
    const slot = this.rowOf.get(id);
    if (slot === undefined) return;
    this.rowOf.delete(id);
    this.ids[slot] = undefined;
    this.retired++;
    this.retiredSlots.push(slot);
    this.retiredSorted = false;
  }

  private compactIfWorthIt(): void {
    if (this.retired >= 64 && this.retired * 4 >= this.ids.length) this.compact();
  }

  /** Drops the retired slots' entries and renumbers the live slots in order (the lists stay sorted). */
  compact(): void {
    const renum = new Int32Array(this.ids.length).fill(-1);
    const live: string[] = [];
    this.ids.forEach((id, slot) => {
      if (id === undefined) return;
      renum[slot] = live.length;
      this.rowOf.set(id, live.length);
      live.push(id);
    });
    for (const l of this.lists) l.compact(renum);
    this.ids = live;
    this.retired = 0;
    this.retiredSlots = [];
    this.retiredSorted = true;
  }

  /**
   * Scores the slots from `from` on, a tile of `TILE` slots at a time: in each tile, each of the query's
   * lists (in ascending dimension order) adds its entries of the tile's slots into the tile's doubles
   * (`sums`, all zero between tiles), so every sum still adds its dimensions in order from zero; then the
   * tile's live slots with a positive sum of at least the kept floor are offered (among `only` when given)
   * and the tile's sums zeroed. A tile's sums stay in the CPU's cache while the lists are added and the
   * tile is read (a whole-set sum array took 8 MB at 1M chunks, read and zeroed whole by every scan). With
   * `only`, a tile holding none of those slots adds nothing.
   */
  private score(q: Float32Array, from: number, top: TopK, only?: ReadonlySet<number>): void {
    const { ids } = this;
    const total = ids.length;
    if (from >= total) return;
    const lists: Posting[] = [];
    const weights: number[] = [];
    const at: number[] = [];
    for (let d = 0; d < q.length; d++) {
      if (q[d] === 0 || Number.isNaN(q[d]) || !this.lists[d]!.n) continue; // as `nonZero`
      lists.push(this.lists[d]!);
      weights.push(q[d]!);
      at.push(from > 0 ? this.lists[d]!.lowerBound(from) : 0);
    }
    if (!only && this.kernel) return this.scoreInKernel(this.kernel, lists, weights, at, from, top);
    const sums = this.tileSums();
    const best = only ? null : new SlotHeap(top.k, total - from, ids);
    for (let lo = from; lo < total; lo += sums.length) {
      const hi = Math.min(total, lo + sums.length);
      const wanted = only ? [...only].filter((slot) => slot >= lo && slot < hi) : null;
      for (let j = 0; j < lists.length; j++) {
        const list = lists[j]!;
        const end = hi >= total ? list.n : list.lowerBound(hi, at[j]!);
        if (!wanted || wanted.length) addInto(sums, lo, list, weights[j]!, at[j]!, end);
        at[j] = end;
      }
      if (best) offerTile(sums, lo, hi, ids, best, top.floor);
      else
        for (const slot of wanted!) {
          const s = sums[slot - lo]!;
          if (s > 0 && ids[slot] !== undefined) top.offer(ids[slot], s);
        }
      sums.fill(0, 0, hi - lo); // one memset for the next tile, not a store per slot
    }
    best?.drainInto(top);
  }

  /**
   * `score` of every slot from `from` on, with the WebAssembly kernel: per tile, each list's entries of the
   * tile are copied into the kernel's memory and added there (`add`, the same doubles in the same order),
   * then the kernel's `sweep` finds the sums at least the kept floor, 64 at most at a time, and those are
   * offered here (the floor rising with each offer, as in `offerTile`). The sweep zeroes the sums as it
   * reads them: a separate zeroing pass was about a tenth of a 1M-chunk scan (8 MB written per search).
   */
  private scoreInKernel(
    kernel: ScanKernel,
    lists: readonly Posting[],
    weights: readonly number[],
    at: number[],
    from: number,
    top: TopK,
  ): void {
    const best = new SlotHeap(top.k, this.ids.length - from, this.ids);
    try {
      this.kernelTiles(kernel, lists, weights, at, from, best, top);
    } catch (err) {
      kernel.sums.fill(0); // the kernel's sums are every set's: zero again after a scan that threw
      throw err;
    }
    best.drainInto(top);
  }

  private kernelTiles(
    kernel: ScanKernel,
    lists: readonly Posting[],
    weights: readonly number[],
    at: number[],
    from: number,
    best: SlotHeap,
    top: TopK,
  ): void {
    const { ids } = this;
    const total = ids.length;
    const { slots, vals, out, scores } = kernel;
    for (let lo = from; lo < total; lo += KERNEL_TILE) {
      const hi = Math.min(total, lo + KERNEL_TILE);
      for (let j = 0; j < lists.length; j++) {
        const list = lists[j]!;
        const end = hi >= total ? list.n : list.lowerBound(hi, at[j]!);
        let n = 0;
        for (let i = at[j]!; i < end;) {
          const seg = i >>> SEGMENT_BITS;
          const r = i & (SEGMENT - 1);
          const stop = Math.min(SEGMENT, end - seg * SEGMENT);
          slots.set(list.slots[seg]!.subarray(r, stop), n);
          vals.set(list.vals[seg]!.subarray(r, stop), n);
          n += stop - r;
          i = seg * SEGMENT + stop;
        }
        if (n) kernel.add(n, weights[j]!, lo);
        at[j] = end;
      }
      let floor = Math.max(top.floor, best.floor);
      // The sweep zeroes the sums it passes: past the tile's slots they are zero, never found.
      const end16 = (hi - lo + 15) & ~15;
      if (best.floor === 0 && best.k > 0 && best.k <= KERNEL_KTH_MAX) {
        // Until `k` slots are kept the floor is 0, and the sweep offered a few hundred slots whose sums the
        // tile's best soon passed. The kernel's `kth` gives a floor first (the k-th largest of the maxima of
        // the tile's blocks of 64 sums, the retired slots' sums zeroed first): at least `k` live slots reach
        // it, so none of the best `k` is below it.
        this.zeroRetired(kernel.sums, lo, hi);
        floor = Math.max(floor, kernel.kth(end16, best.k));
      }
      for (let pos = 0; pos < end16;) {
        pos = kernel.sweep(pos, end16, Math.max(floor, Number.MIN_VALUE));
        const found = kernel.found();
        for (let i = 0; i < found; i++) {
          const slot = out[i]!;
          const s = scores[i]!;
          if (s >= floor && ids[lo + slot] !== undefined) {
            best.offer(lo + slot, s);
            floor = Math.max(floor, best.floor);
          }
        }
      }
    }
  }

  /** Zeroes the sums (`sums`, indexed by slot minus `lo`) of the retired slots from `lo` to `hi`. */
  private zeroRetired(sums: Float64Array, lo: number, hi: number): void {
    const r = this.retiredSlots;
    if (!r.length) return;
    if (!this.retiredSorted) {
      r.sort((a, b) => a - b);
      this.retiredSorted = true;
    }
    let i = 0;
    for (let top = r.length; i < top;) {
      const mid = (i + top) >>> 1;
      if (r[mid]! < lo) i = mid + 1;
      else top = mid;
    }
    for (; i < r.length && r[i]! < hi; i++) sums[r[i]! - lo] = 0;
  }

  /** The scan's sums of one tile: a tile's, or the set's slots' (with a quarter to grow) while fewer. */
  private tileSums(): Float64Array {
    const total = this.ids.length;
    if (this.sums.length < Math.min(TILE, total))
      this.sums = new Float64Array(Math.min(TILE, Math.max(1024, Math.ceil(total * 1.25))));
    return this.sums;
  }

  scan(q: Float32Array, top: TopK): void {
    this.score(q, 0, top);
  }

  /** The listed chunks' scores alone: only the list entries from the smallest of their slots on are read. */
  scanRows(q: Float32Array, ids: readonly string[], top: TopK): void {
    const wanted = new Set<number>();
    for (const id of ids) {
      const slot = this.rowOf.get(id);
      if (slot !== undefined) wanted.add(slot);
    }
    if (!wanted.size) return;
    let from = Infinity;
    for (const slot of wanted) from = Math.min(from, slot);
    this.score(q, from, top, wanted);
  }
}

/**
 * Vectors whose share of non-zero values is at most this are kept as posting lists: a posting entry
 * (slot and value) takes 8 bytes against 4 per dimension dense, so below a half the sparse layout is also
 * the smaller, and a scan reads only the query's dimensions' entries.
 */
export const SPARSE_DENSITY = 0.5;

/** The share of non-zero values among `raw`'s first `dim` dimensions. */
export function density(raw: readonly Uint8Array[], dim: number): number {
  let nz = 0;
  for (const b of raw) {
    if (isSparse(b)) {
      forEachSparseValue(b, dim, () => nz++);
      continue;
    }
    const v = decodeVector(b).subarray(0, dim);
    for (let d = 0; d < v.length; d++) if (v[d] !== 0) nz++;
  }
  return raw.length && dim ? nz / (raw.length * dim) : 1;
}

/**
 * The bytes a set of `rows` vectors like `sample` (stored float4 bytes) takes in the layout their density
 * chooses, as the layouts count them (`bytes`), without the rows' text: an estimate for deciding before a
 * whole load whether the set can be kept at all.
 */
export function estimatedSetBytes(rows: number, sample: readonly Uint8Array[]): number {
  const dim = sample.reduce((m, b) => Math.max(m, storedDim(b)), 0);
  if (!rows || !dim) return 0;
  const share = density(sample, dim);
  if (share > SPARSE_DENSITY) return Math.ceil(rows / BLOCK) * BLOCK * dim * 4 + rows * 80; // whole blocks
  return rows * (share * dim * 8 + 80) + Math.min(TILE, rows * 1.25) * 8; // list entries, the ids, the scan's sums
}

/**
 * One (index, collection) vector set in memory at a vector generation. Its layout (`DenseRows` or
 * `SparseRows`) is chosen from the density of the first rows it receives (a whole load's first page, or
 * the first written vector of an empty set), and chosen again whenever the set becomes empty; the dimension
 * is the longest first vector's.
 */
export class VectorSet {
  private rows: Rows | null = null;
  /**
   * The chunks' rows (position, text, document), kept beside the vectors when the cache's budget allows
   * (`chunk-rows.ts`); null when not kept. Whoever changes a chunk's vector changes its row with it.
   */
  chunks: ChunkRows | null = null;

  /** `dim` fixes the dimension (0: the longest of the first vectors received). */
  constructor(
    public generation: bigint,
    private readonly dim = 0,
  ) {}

  /** A set built at once from stored vectors. */
  static of(generation: bigint, ids: string[], raw: Uint8Array[]): VectorSet {
    const set = new VectorSet(generation);
    set.append(ids, raw);
    return set;
  }

  /** Which layout holds the rows (tests, benchmark). */
  get layout(): 'dense' | 'sparse' | 'empty' {
    return this.rows instanceof SparseRows ? 'sparse' : this.rows ? 'dense' : 'empty';
  }

  get size(): number {
    return this.rows?.size ?? 0;
  }

  /** The vectors' bytes and the chunk rows' estimate. */
  get bytes(): number {
    return (this.rows?.bytes ?? 0) + (this.chunks?.bytes ?? 0);
  }

  private rowsFor(raw: readonly Uint8Array[]): Rows | null {
    if (this.rows?.size === 0) this.rows = null;
    if (!this.rows) {
      const dim = this.dim || raw.reduce((m, b) => Math.max(m, storedDim(b)), 0);
      if (!dim) return null;
      this.rows = density(raw, dim) <= SPARSE_DENSITY ? new SparseRows(dim) : new DenseRows(dim);
    }
    return this.rows;
  }

  /** Adds new chunks (ids not in the set yet); a whole load appends page by page, then `trim`s. */
  append(ids: string[], raw: Uint8Array[]): void {
    if (ids.length) this.rowsFor(raw)?.append(ids, raw);
  }

  /** Sets a chunk's vector (stored float4 bytes), adding the chunk when new. */
  upsert(id: string, raw: Uint8Array): void {
    this.rowsFor([raw])?.upsert(id, raw);
  }

  remove(id: string): void {
    this.rows?.remove(id);
  }

  trim(): void {
    this.rows?.trim();
  }

  /** Offers every row with a positive cosine to `top`. */
  scan(query: readonly number[], top: TopK): void {
    if (this.rows?.size) this.rows.scan(unit(query, this.rows.dim), top);
  }

  /**
   * Gives the score `scan` would give a chunk of vector `raw` (stored float4 bytes) once written to the set,
   * without writing it; null while the set has no rows (its layout and dimension are not chosen yet).
   */
  scorer(query: readonly number[]): ((raw: Uint8Array) => number) | null {
    return this.rows?.size ? storedScorer(unit(query, this.rows.dim), this.rows.dim) : null;
  }

  /** Offers the listed chunks (those in the set) to `top`, each scored as `scan` scores it (the same double). */
  scanRows(query: readonly number[], ids: readonly string[], top: TopK): void {
    if (this.rows?.size) this.rows.scanRows(unit(query, this.rows.dim), ids, top);
  }
}
