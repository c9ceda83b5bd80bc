import { SCAN_KERNEL_BASE64 } from './scan-kernel-bytes.js';

/**
 * The sparse scan's WebAssembly kernel (`scan-kernel.wat`): the two loops of `SparseRows`' scan that touch
 * every entry or slot, about three times faster than in JavaScript on this project's machines (no bounds
 * checks; the sweep tests sixteen sums at once with SIMD). The posting lists stay in JavaScript; a scan copies
 * each list's entries of a tile into `slots` and `vals` (a memory copy) before `add`.
 *
 * - `add(n, w, base)`: `sums[slots[i] - base] += w * vals[i]` for `i < n`, in doubles, as `addInto` does.
 * - `sweep(from, end, floor)`: the slots of `sums[from, end)` (multiples of 16) whose sum is at least `floor`
 *   (positive), written to `out` and their sums to `scores` in order, at most 64, the sums it passes zeroed
 *   (so the next tile starts from zero without a pass of its own): returns where it stopped; `found()` says
 *   how many. No sum may be NaN: the sixteen are tested by their pairwise maximum, which a NaN can hide (the
 *   lists and the query's weights leave NaN out).
 * - `kth(end, k)`: the k-th largest positive maximum of `sums[0, end)`'s blocks of 64 sums (`end` a multiple
 *   of 8, `k` from 1 to `KERNEL_KTH_MAX`), or 0 when fewer than `k` are positive: at least `k` sums reach it
 *   (each maximum is another slot's), so it is a floor for the tile's sweep, near the tile's k-th largest sum
 *   when the tile has many more blocks than `k`.
 *
 * One instance per process, its memory fixed (never grown, so the views stay valid); a scan is synchronous,
 * so no two use it at once.
 */
export interface ScanKernel {
  /** A tile's sums (`TILE` doubles), zero between tiles. */
  readonly sums: Float64Array;
  readonly slots: Uint32Array;
  readonly vals: Float32Array;
  readonly out: Uint32Array;
  /** The sums of the slots in `out`. */
  readonly scores: Float64Array;
  add(n: number, w: number, base: number): void;
  sweep(from: number, end: number, floor: number): number;
  kth(end: number, k: number): number;
  found(): number;
}

/** The `k` that `kth` takes at most (its heap's 8 KB). */
export const KERNEL_KTH_MAX = 1024;

/** The kernel's tile: 32,768 slots (its sums 256 KB), and the entries of one list a tile holds at most. */
export const KERNEL_TILE = 1 << 15;
const SLOTS_AT = 262144;
const VALS_AT = 393216;
const OUT_AT = 524288;
const OUT_CAP = 64;
const SCORES_AT = OUT_AT + OUT_CAP * 4;

interface Exports {
  memory: { buffer: ArrayBuffer };
  add(n: number, w: number, base: number): void;
  sweep(from: number, end: number, floor: number): number;
  kth(end: number, k: number): number;
  found(): number;
}

/** The part of the WebAssembly API used here (this project's TypeScript libraries do not declare it). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}

let kernel: ScanKernel | null | undefined;

/** This process's kernel, compiled at first use; null where WebAssembly (with SIMD) is not available. */
export function scanKernel(): ScanKernel | null {
  if (kernel !== undefined) return kernel;
  try {
    const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;
    const module = new wasm.Module(Buffer.from(SCAN_KERNEL_BASE64, 'base64'));
    const x = new wasm.Instance(module, {}).exports as Exports;
    const buffer = x.memory.buffer;
    kernel = {
      sums: new Float64Array(buffer, 0, KERNEL_TILE),
      slots: new Uint32Array(buffer, SLOTS_AT, KERNEL_TILE),
      vals: new Float32Array(buffer, VALS_AT, KERNEL_TILE),
      out: new Uint32Array(buffer, OUT_AT, OUT_CAP),
      scores: new Float64Array(buffer, SCORES_AT, OUT_CAP),
      add: x.add,
      sweep: x.sweep,
      kth: x.kth,
      found: x.found,
    };
  } catch {
    kernel = null;
  }
  return kernel;
}
