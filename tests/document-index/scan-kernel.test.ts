/**
 * The sparse scan's WebAssembly kernel (`shared/document-index/scan-kernel.wat`, loaded by
 * `scan-kernel.ts`): the committed bytes are the .wat compiled, the kernel loads on this Node, and a scan
 * through it gives exactly what the JavaScript loops give (the same hits, the same doubles) over several
 * tiles, with retired slots, for every `k` from one to every row.
 */
import { describe, expect, it } from 'vitest';
import { compileScanKernel, scanKernelModule } from '../../scripts/build-scan-kernel.js';
import { readFile } from 'node:fs/promises';
import { KERNEL_TILE, scanKernel } from '../../shared/document-index/scan-kernel.js';
import { SCAN_KERNEL_BASE64 } from '../../shared/document-index/scan-kernel-bytes.js';
import { localEmbed } from '../../shared/document-index/local-embedding.js';
import { encodeVector, SparseRows, TopK, unit, type VectorHit } from '../../shared/document-index/vector-sets.js';

function random(seed: number) {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
}

const id = (i: number) => `c${String(i).padStart(6, '0')}`;

const hits = (rows: SparseRows, q: Float32Array, k: number): VectorHit[] => {
  const t = new TopK(k);
  rows.scan(q, t);
  return t.hits;
};

describe('the sparse scan kernel', () => {
  it('is the .wat compiled (run `npm run build:scan-kernel` after changing it)', async () => {
    const bytes = await compileScanKernel();
    expect(Buffer.from(SCAN_KERNEL_BASE64, 'base64').equals(bytes)).toBe(true);
    const committed = await readFile(
      new URL('../../shared/document-index/scan-kernel-bytes.ts', import.meta.url),
      'utf8',
    );
    expect(committed.replace(/\s+/g, '')).toBe(scanKernelModule(bytes).replace(/\s+/g, ''));
  });

  it('loads in this Node: the default SparseRows scan runs through it', () => {
    const kernel = scanKernel();
    expect(kernel).not.toBeNull();
    expect(kernel!.sums.length).toBe(KERNEL_TILE);
    // Its memory is zero between scans (a scan leaves no sum behind).
    const rows = new SparseRows(8);
    rows.append([id(0), id(1)], [encodeVector([1, 0, 0, 0, 0, 0, 0, 0]), encodeVector([0.5, 0.5, 0, 0, 0, 0, 0, 0])]);
    expect(hits(rows, unit([1, 1, 0, 0, 0, 0, 0, 0], 8), 5).map((h) => h.id)).toEqual([id(1), id(0)]);
    expect(kernel!.sums.every((x) => x === 0)).toBe(true);
  });

  it('gives what the JavaScript loops give, over three tiles, with retired slots, for k from one to every row', () => {
    const dim = 96;
    const n = 2 * KERNEL_TILE + 5000;
    const rnd = random(11);
    const ids: string[] = [];
    const raw: Buffer[] = [];
    for (let i = 0; i < n; i++) {
      // About eight non-zero values a row, some negative (sums below zero are never offered).
      const v = Array.from({ length: dim }, () => (rnd() < 0.08 ? rnd() * 2 - 0.4 : 0));
      ids.push(id(i));
      raw.push(encodeVector(v));
    }
    const withKernel = new SparseRows(dim);
    const plain = new SparseRows(dim, null);
    for (const rows of [withKernel, plain]) {
      rows.append(ids, raw);
      // Retired slots in every tile (deleted chunks, and chunks written again at the end).
      for (let i = 0; i < n; i += 97) rows.remove(id(i));
      for (let i = 5; i < n; i += 211) rows.upsert(id(i), raw[(i * 7) % n]!);
      rows.trim();
    }
    for (let t = 0; t < 6; t++) {
      const q = Array.from({ length: dim }, () => (rnd() < 0.06 ? rnd() : 0));
      q[t] = 0.9;
      const uq = unit(q, dim);
      for (const k of [1, 10, 50, 700]) {
        const want = hits(plain, uq, k);
        expect(want.length, `k ${k}`).toBeGreaterThan(0);
        expect(hits(withKernel, uq, k), `query ${t}, k ${k}`).toEqual(want);
      }
    }
    // The local embedder's vectors (sparse, 1,536 buckets), two words queried.
    const texts = Array.from({ length: 3000 }, (_, i) => `note ${i % 37} about harbour ${i % 11} tides ${i % 5}`);
    const a = new SparseRows(1536);
    const b = new SparseRows(1536, null);
    const local = texts.map((t) => encodeVector(localEmbed(t)));
    for (const rows of [a, b])
      rows.append(
        texts.map((_, i) => id(i)),
        local,
      );
    for (const query of ['harbour 7', 'tides 3 note 12', 'nothing here']) {
      const uq = unit(localEmbed(query), 1536);
      for (const k of [1, 50, 1e9]) expect(hits(a, uq, k)).toEqual(hits(b, uq, k));
    }
  });

  it("gives a tile's floor: the k-th largest positive maximum of its blocks of 64 sums, or 0 when fewer", () => {
    const kernel = scanKernel()!;
    const rnd = random(5);
    try {
      for (const [n, k, share] of [
        [KERNEL_TILE, 50, 0.3],
        [KERNEL_TILE, 50, 0.002],
        [4000, 1, 0.5],
        [4000, 60, 0.5],
        [4000, 63, 0.5],
        [801, 7, 0.5],
        [64, 1, 1],
        [KERNEL_TILE, 512, 0.5],
        [KERNEL_TILE, 1024, 0.05],
      ] as const) {
        const sums = Array.from({ length: n }, () =>
          // Some negative and zero sums, and many equal ones (a few values repeated).
          rnd() < share ? Math.floor(rnd() * 40) / 8 - 1 : 0,
        );
        kernel.sums.set(sums);
        const maxima: number[] = [];
        for (let b = 0; b < n; b += 64) maxima.push(Math.max(...sums.slice(b, b + 64)));
        const positive = maxima.filter((x) => x > 0).sort((a, b) => b - a);
        const want = positive.length >= k ? positive[k - 1]! : 0;
        expect(kernel.kth((n + 7) & ~7, k), `n ${n}, k ${k}`).toBe(want);
        kernel.sums.fill(0);
      }
    } finally {
      kernel.sums.fill(0);
    }
  });

  it("leaves out retired slots when it raises a tile's floor: a retired chunk's high score never hides a live one", () => {
    const dim = 8;
    const rows = new SparseRows(dim);
    const plain = new SparseRows(dim, null);
    const rnd = random(9);
    const query = [1, 0, 0, 0, 0, 0, 0, 0];
    // Two tiles. The first slot of each of the first 60 blocks of 64 lies on the query (score 1), so each of
    // those blocks' maxima is a chunk retired below; the others score below 1.
    const n = 40_000;
    const onQuery = (i: number) => i % 64 === 0 && i < 64 * 60;
    const vectors = Array.from({ length: n }, (_, i) =>
      onQuery(i) ? query : [0.2 + rnd() * 0.3, ...Array.from({ length: dim - 1 }, () => rnd())],
    );
    for (const r of [rows, plain]) {
      r.append(
        vectors.map((_, i) => id(i)),
        vectors.map((v) => encodeVector(v)),
      );
      // The best chunks deleted, and some written again (appended: their old slots retired too).
      vectors.forEach((_, i) => {
        if (!onQuery(i)) return;
        if (i % 256 === 0) r.upsert(id(i), encodeVector(vectors[i + 1]!));
        else r.remove(id(i));
      });
    }
    for (const k of [5, 40]) {
      const want = hits(plain, unit(query, dim), k);
      expect(want).toHaveLength(k);
      expect(want.every((h) => h.sim < 1)).toBe(true);
      expect(hits(rows, unit(query, dim), k)).toEqual(want);
    }
  });

  it('leaves NaN out as the JavaScript loops do: a stored NaN or infinity, and a NaN in the query', () => {
    const dim = 16;
    const rnd = random(21);
    const n = KERNEL_TILE + 3000;
    const vectors = Array.from({ length: n }, (_, i) => {
      const v = Array.from({ length: dim }, () => (rnd() < 0.3 ? rnd() : 0));
      // Every 50th chunk holds a NaN or an infinity (a provider's bad vector), some of them dense-encoded.
      if (i % 50 === 0) v[i % dim] = i % 100 === 0 ? Number.NaN : Number.POSITIVE_INFINITY;
      if (i % 150 === 0) v.fill(0.5);
      return v;
    });
    const withKernel = new SparseRows(dim);
    const plain = new SparseRows(dim, null);
    for (const rows of [withKernel, plain])
      rows.append(
        vectors.map((_, i) => id(i)),
        vectors.map((v) => encodeVector(v)),
      );
    for (let t = 0; t < 4; t++) {
      const q = Array.from({ length: dim }, () => (rnd() < 0.5 ? rnd() : 0));
      q[t] = 0.8;
      const queries = [unit(q, dim)];
      // A query holding a NaN (its other weights as they are).
      const bad = unit(q, dim);
      bad[(t + 3) % dim] = Number.NaN;
      queries.push(bad);
      for (const uq of queries)
        for (const k of [1, 50, 700]) {
          const want = hits(plain, uq, k);
          expect(want.length).toBeGreaterThan(0);
          expect(want.every((h) => Number.isFinite(h.sim))).toBe(true);
          expect(hits(withKernel, uq, k)).toEqual(want);
        }
    }
    expect(scanKernel()!.sums.every((x) => x === 0)).toBe(true);
  });
});
