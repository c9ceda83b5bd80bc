/**
 * The exact path's two in-memory layouts (`shared/document-index/vector-sets.ts`, no database): the
 * sparse posting lists score every row with the same double as the dense column blocks (random sparse and
 * dense vectors, the local embedder's vectors), after incremental appends, overwrites, deletions and the
 * compaction they trigger; `scanRows` scores a few rows as `scan` does; and a set picks its layout from
 * the stored vectors' density.
 */
import { describe, expect, it } from 'vitest';
import { localEmbed } from '../../shared/document-index/local-embedding.js';
import {
  DenseRows,
  encodeVector,
  estimatedSetBytes,
  Posting,
  SparseRows,
  TopK,
  unit,
  VectorSet,
  type VectorHit,
} from '../../shared/document-index/vector-sets.js';

function random(seed: number) {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
}

const id = (i: number) => `c${String(i).padStart(6, '0')}`;

/** A vector of `dim` values, each non-zero with probability `share`. */
const vectorOf = (rnd: () => number, dim: number, share: number) =>
  Array.from({ length: dim }, () => (Math.abs(rnd()) < share ? rnd() : 0));

type Layout = DenseRows | SparseRows;
const top = (rows: Layout, q: number[], k: number): VectorHit[] => {
  const t = new TopK(k);
  rows.scan(unit(q, rows.dim), t);
  return t.hits;
};

/** Every row's exact score (k above the row count), as both layouts give it. */
const all = (rows: Layout, q: number[]) => top(rows, q, 1e9);

/** The cosine the sets compute: float4 unit rows, the query's products summed in dimension order. */
function brute(rows: Map<string, number[]>, q: number[], dim: number): VectorHit[] {
  const uq = unit(q, dim);
  const out: VectorHit[] = [];
  for (const [rid, v] of rows) {
    const f = Float32Array.from(v);
    let n = 0;
    for (const x of f) n += x * x;
    const u = Float32Array.from(f, (x) => x * (n > 0 ? 1 / Math.sqrt(n) : 0));
    let s = 0;
    for (let d = 0; d < dim; d++) if (uq[d] !== 0) s = s + uq[d]! * u[d]!;
    if (s > 0) out.push({ id: rid, sim: s });
  }
  return out.sort((x, y) => y.sim - x.sim || (x.id < y.id ? -1 : 1));
}

/** The same rows in both layouts and as plain arrays (for `brute`), written through `put` and `drop`. */
function twins(dim: number, seed: number, vector: (rnd: () => number, i: number) => number[]) {
  const rnd = random(seed);
  const rows = new Map<string, number[]>();
  const dense = new DenseRows(dim);
  const sparse = new SparseRows(dim);
  const put = (i: number) => {
    const v = vector(rnd, i);
    rows.set(id(i), v);
    dense.upsert(id(i), encodeVector(v));
    sparse.upsert(id(i), encodeVector(v));
  };
  const drop = (i: number) => {
    rows.delete(id(i));
    dense.remove(id(i));
    sparse.remove(id(i));
  };
  return { rnd, rows, dense, sparse, put, drop };
}

describe('sparse posting lists against dense blocks', () => {
  it('give every row the same double, for sparse and dense vectors and queries', () => {
    const dim = 48;
    for (const share of [0.1, 0.3, 1]) {
      const rnd = random(Math.round(share * 100));
      const vs = Array.from({ length: 5000 }, () => vectorOf(rnd, dim, share));
      const ids = vs.map((_, i) => id(i));
      const raw = vs.map((v) => encodeVector(v));
      const dense = new DenseRows(dim);
      const sparse = new SparseRows(dim);
      dense.append(ids, raw);
      sparse.append(ids, raw);
      for (const qShare of [0.05, 0.2, 1]) {
        const q = vectorOf(rnd, dim, qShare);
        if (!q.some((x) => x !== 0)) q[3] = 0.5;
        const want = all(dense, q);
        expect(all(sparse, q), `rows ${share}, query ${qShare}`).toEqual(want);
        expect(want).toEqual(brute(new Map(ids.map((x, i) => [x, vs[i]!])), q, dim));
        expect(top(sparse, q, 10)).toEqual(want.slice(0, 10));
      }
    }
  });

  it('rank the local embedder`s vectors the same, and the sparse set holds only their non-zero values', () => {
    const rnd = random(5);
    const words = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}x`);
    const text = () => Array.from({ length: 30 }, () => words[Math.floor(Math.abs(rnd()) * 300)]).join(' ');
    const vs = Array.from({ length: 3000 }, () => localEmbed(text()));
    const ids = vs.map((_, i) => id(i));
    const set = VectorSet.of(
      0n,
      ids,
      vs.map((v) => encodeVector(v)),
    );
    expect(set.layout).toBe('sparse');
    const dense = new DenseRows(vs[0]!.length);
    dense.append(
      ids,
      vs.map((v) => encodeVector(v)),
    );
    const sparse = new SparseRows(vs[0]!.length);
    sparse.append(
      ids,
      vs.map((v) => encodeVector(v)),
    );
    expect(sparse.entries).toBe(vs.reduce((n, v) => n + v.filter((x) => x !== 0).length, 0));
    expect(sparse.bytes).toBeLessThan(dense.bytes);
    for (let i = 0; i < 20; i++) {
      const q = localEmbed(words.slice(i * 3, i * 3 + 3).join(' '));
      const t = new TopK(50);
      set.scan(q, t);
      expect(t.hits).toEqual(top(dense, q, 50));
      expect(all(sparse, q)).toEqual(all(dense, q));
    }
  });

  it('keep the smaller chunk ids among equal scores at the cut, in ids written in any order, across two sets', () => {
    const dim = 16;
    const rnd = random(11);
    // 40 distinct vectors, each written 30 times under shuffled ids: every score is tied 30 ways.
    const distinct = Array.from({ length: 40 }, () => vectorOf(rnd, dim, 0.4));
    const order = Array.from({ length: 1200 }, (_, i) => i).sort(() => rnd());
    const rows = new Map(order.map((i) => [id(i), distinct[i % 40]!]));
    const [first, second] = [new Map([...rows].slice(0, 700)), new Map([...rows].slice(700))];
    for (const q of [vectorOf(rnd, dim, 0.5), vectorOf(rnd, dim, 1)]) {
      if (!q.some((x) => x !== 0)) q[0] = 1;
      const want = brute(rows, q, dim);
      for (const k of [1, 7, 30, 45, 200]) {
        const t = new TopK(k);
        for (const part of [first, second]) {
          const sparse = new SparseRows(dim);
          const dense = new DenseRows(dim);
          sparse.append(
            [...part.keys()],
            [...part.values()].map((v) => encodeVector(v)),
          );
          dense.append(
            [...part.keys()],
            [...part.values()].map((v) => encodeVector(v)),
          );
          expect(top(sparse, q, k), `k ${k}`).toEqual(top(dense, q, k));
          sparse.scan(unit(q, dim), t);
        }
        expect(t.hits, `k ${k}`).toEqual(want.slice(0, k));
      }
    }
  });

  it('stay equal through incremental appends, overwrites and deletions (with the compaction they trigger)', () => {
    const dim = 32;
    const { rnd, rows, dense, sparse, put, drop } = twins(dim, 17, (r) => vectorOf(r, dim, 0.25));
    const paged = new SparseRows(dim);
    const check = (what: string) => {
      expect(sparse.size, what).toBe(rows.size);
      for (let n = 0; n < 4; n++) {
        const q = vectorOf(rnd, dim, 0.2 + n * 0.2);
        q[n] = 0.7;
        const want = brute(rows, q, dim);
        expect(all(sparse, q), what).toEqual(want);
        expect(all(dense, q), what).toEqual(want);
      }
    };
    for (let i = 0; i < 3000; i++) put(i);
    check('appended one by one');
    // The same rows appended in pages (a whole load) hold the same entries.
    const ids = [...rows.keys()];
    for (let at = 0; at < ids.length; at += 700)
      paged.append(
        ids.slice(at, at + 700),
        ids.slice(at, at + 700).map((x) => encodeVector(rows.get(x)!)),
      );
    paged.trim();
    const q0 = vectorOf(rnd, dim, 0.3);
    expect(all(paged, q0)).toEqual(all(sparse, q0));
    const before = sparse.entries;
    for (let i = 0; i < 3000; i += 13) drop(i);
    expect(sparse.entries).toBe(before); // retired slots keep their entries until a compaction
    check('a few deletions, retired not compacted');
    for (let i = 1; i < 3000; i += 5) if (rows.has(id(i))) put(i); // overwrites: old slots retired
    for (let i = 3000; i < 3400; i++) put(i);
    for (let i = 2; i < 3000; i += 3) drop(i);
    expect(sparse.entries).toBeLessThan(before); // compacted at a quarter retired
    check('overwrites, appends and deletions, compacted');
    sparse.compact();
    check('compacted again');
    for (const x of [...rows.keys()]) drop(Number(x.slice(1)));
    expect(sparse.size).toBe(0);
    expect(all(sparse, q0)).toEqual([]);
    put(9000);
    check('emptied and refilled');
  });

  it('score the listed rows alone as the scan does (scanRows), new rows among them', () => {
    const dim = 40;
    const rnd = random(23);
    const sparse = new SparseRows(dim);
    const dense = new DenseRows(dim);
    const vs = Array.from({ length: 2000 }, () => vectorOf(rnd, dim, 0.2));
    vs.forEach((v, i) => {
      sparse.upsert(id(i), encodeVector(v));
      dense.upsert(id(i), encodeVector(v));
    });
    sparse.remove(id(1990));
    dense.remove(id(1990));
    const q = vectorOf(rnd, dim, 0.3);
    q[1] = 0.4;
    const listed = [id(5), id(1200), id(1990), id(1999), 'absent'];
    const scores = new Map(all(sparse, q).map((h) => [h.id, h.sim]));
    for (const rows of [sparse, dense]) {
      const t = new TopK(10);
      rows.scanRows(unit(q, dim), listed, t);
      const want = listed
        .filter((x) => scores.has(x))
        .map((x) => ({ id: x, sim: scores.get(x)! }))
        .sort((a, b) => b.sim - a.sim);
      expect(t.hits).toEqual(want);
    }
  });
});

describe('long posting lists', () => {
  it('span segments: appends, scanRows on late slots, deletions and compaction rank as the dense blocks', () => {
    const dim = 3;
    const { rnd, rows, dense, sparse, put, drop } = twins(dim, 31, (r, i) => {
      const v = vectorOf(r, dim, 0.3);
      v[i % dim] = r() || 0.25; // every row non-zero somewhere; each list grows past 8,192 entries
      return v;
    });
    const same = (what: string) => {
      for (let n = 0; n < 3; n++) {
        const q = vectorOf(rnd, dim, 0.5);
        q[n] = 0.6;
        expect(top(sparse, q, 200), what).toEqual(top(dense, q, 200));
        expect(top(sparse, q, 50), what).toEqual(brute(rows, q, dim).slice(0, 50));
      }
    };
    for (let i = 0; i < 20_000; i++) put(i);
    sparse.trim();
    expect(sparse.entries).toBeGreaterThan(dim * 8192);
    same('appended');
    for (let i = 20_000; i < 20_100; i++) put(i); // after a trim: the last segments grow again
    const q = vectorOf(rnd, dim, 1);
    const listed = [id(19_999), id(20_050), id(10_000)];
    const scores = new Map(brute(rows, q, dim).map((h) => [h.id, h.sim]));
    const t = new TopK(10);
    sparse.scanRows(unit(q, dim), listed, t);
    expect(t.hits).toEqual(
      listed
        .filter((x) => scores.has(x))
        .map((x) => ({ id: x, sim: scores.get(x)! }))
        .sort((a, b) => b.sim - a.sim),
    );
    for (let i = 0; i < 20_100; i += 3) drop(i);
    same('a third deleted, compacted');
  });
});

describe('a trimmed posting list', () => {
  it('keeps a little headroom, so the first appends after a whole load copy no segment', () => {
    for (const n of [5, 3_000, 8_192 + 7_000]) {
      const list = new Posting();
      for (let i = 0; i < n; i++) list.push(i, i / n);
      list.trim();
      const tail = list.slots.at(-1)!;
      const free = list.capacity - list.n;
      // A list shorter than its first allocation (16 entries) keeps that allocation.
      expect(free, `${n} entries`).toBeGreaterThanOrEqual(n < 16 ? 16 - n : 16);
      expect(free, `${n} entries`).toBeLessThanOrEqual(256);
      for (let i = 0; i < Math.min(free, 16); i++) list.push(n + i, 1);
      expect(list.slots.at(-1), `${n} entries`).toBe(tail);
      expect(list.slotAt(n), `${n} entries`).toBe(n);
      expect(list.n).toBe(n + Math.min(free, 16));
    }
  });
});

describe('a TopK of 0', () => {
  it('takes nothing from either layout (a warm-up ranks nothing), without reading a floor it has not got', () => {
    const rnd = random(3);
    for (const share of [0.1, 1]) {
      const vs = Array.from({ length: 50 }, () => vectorOf(rnd, 24, share));
      const set = VectorSet.of(
        0n,
        vs.map((_, i) => id(i)),
        vs.map((v) => encodeVector(v)),
      );
      const t = new TopK(0);
      expect(t.floor).toBe(0);
      set.scan(vectorOf(rnd, 24, 1), t);
      expect(t.hits).toEqual([]);
    }
  });
});

describe('VectorSet.scorer', () => {
  it("gives a vector not written yet the double the set's scan gives it once written, sparse and dense", () => {
    const rnd = random(21);
    for (const [dim, share] of [
      [384, 0.15],
      [32, 1],
    ] as const) {
      const vs = Array.from({ length: 300 }, () => vectorOf(rnd, dim, share));
      const set = VectorSet.of(
        0n,
        vs.map((_, i) => id(i)),
        vs.map((v) => encodeVector(v)),
      );
      expect(set.layout).toBe(share < 0.5 ? 'sparse' : 'dense');
      for (let n = 0; n < 20; n++) {
        const q = vectorOf(rnd, dim, n % 2 ? 0.05 : 0.6);
        if (!q.some((x) => x !== 0)) q[1] = 1;
        // A new chunk and changed ones: shorter than the set's dimension (zero-padded as written), longer (cut
        // to it), and stored in the other form (a dense vector in a sparse set, a sparse one in a dense set).
        const fresh = vectorOf(rnd, dim, share);
        const short = vectorOf(rnd, dim - 3, share);
        const long = vectorOf(rnd, dim + 3, share);
        const other = vectorOf(rnd, dim, share < 0.5 ? 1 : 0.1);
        const score = set.scorer(q)!;
        const written: Array<[string, number[]]> = [
          ['new', fresh],
          [id(n), short],
          [id(n + 100), long],
          [id(n + 200), other],
        ];
        const expected = written.map(([, v]) => score(encodeVector(v)));
        for (const [chunk, v] of written) set.upsert(chunk, encodeVector(v));
        const t = new TopK(1e6);
        set.scan(q, t);
        const got = new Map(t.hits.map((h) => [h.id, h.sim]));
        // The scan offers positive scores only.
        written.forEach(([chunk], i) => expect(got.get(chunk)).toBe(expected[i]! > 0 ? expected[i] : undefined));
      }
    }
    expect(new VectorSet(0n).scorer([1])).toBeNull();
  });
});

describe('VectorSet layout', () => {
  it('is chosen from the stored vectors` density, and chosen again once the set is empty', () => {
    const rnd = random(3);
    const sparseVs = Array.from({ length: 10 }, () => vectorOf(rnd, 64, 0.1));
    const denseVs = Array.from({ length: 10 }, () => vectorOf(rnd, 64, 1));
    expect(VectorSet.of(0n, ['a'], [encodeVector(sparseVs[0]!)]).layout).toBe('sparse');
    expect(VectorSet.of(0n, ['a'], [encodeVector(denseVs[0]!)]).layout).toBe('dense');
    const set = new VectorSet(0n);
    expect(set.layout).toBe('empty');
    set.upsert('a', encodeVector(denseVs[0]!));
    expect(set.layout).toBe('dense');
    set.remove('a');
    set.upsert('b', encodeVector(sparseVs[1]!));
    expect(set.layout).toBe('sparse');
    expect(set.size).toBe(1);
  });
});

describe('estimatedSetBytes', () => {
  it("is within a fifth of a loaded set's bytes, for sparse and dense vectors, from a sample of 200", () => {
    const rnd = random(5);
    for (const [share, layout] of [
      [0.15, 'sparse'],
      [1, 'dense'],
    ] as const) {
      const raw = Array.from({ length: 5000 }, () => encodeVector(vectorOf(rnd, 384, share)));
      const set = VectorSet.of(
        1n,
        raw.map((_, i) => id(i)),
        raw,
      );
      set.trim();
      expect(set.layout).toBe(layout);
      const estimate = estimatedSetBytes(raw.length, raw.slice(0, 200));
      expect(estimate / set.bytes, layout).toBeGreaterThan(0.8);
      expect(estimate / set.bytes, layout).toBeLessThan(1.2);
    }
    expect(estimatedSetBytes(0, [])).toBe(0);
  });
});

describe('a sparse scan over several tiles of slots', () => {
  it('ranks and scores rows as the brute force does, at tile edges, after deletions and compaction', () => {
    const dim = 4;
    const rnd = random(47);
    const rows = new Map<string, number[]>();
    const sparse = new SparseRows(dim);
    const vector = (i: number) => {
      const v = vectorOf(rnd, dim, 0.4);
      v[i % dim] = rnd() || 0.5;
      return v;
    };
    // 32,768 slots a tile: three tiles, appended a page at a time as a whole load does.
    for (let page = 0; page < 80_000; page += 5_000) {
      const ids = Array.from({ length: 5_000 }, (_, k) => id(page + k));
      const vs = ids.map((_, k) => vector(page + k));
      ids.forEach((x, k) => rows.set(x, vs[k]!));
      sparse.append(ids, vs.map(encodeVector));
    }
    sparse.trim();
    const check = (what: string, listed: string[]) => {
      for (let n = 0; n < 3; n++) {
        const q = vectorOf(rnd, dim, 0.6);
        q[n] = 0.7;
        const exact = brute(rows, q, dim);
        expect(top(sparse, q, 300), what).toEqual(exact.slice(0, 300));
        const scores = new Map(exact.map((h) => [h.id, h.sim]));
        const t = new TopK(listed.length);
        sparse.scanRows(unit(q, dim), listed, t);
        expect(t.hits, what).toEqual(
          listed
            .filter((x) => scores.has(x))
            .map((x) => ({ id: x, sim: scores.get(x)! }))
            .sort((a, b) => b.sim - a.sim || (a.id < b.id ? -1 : 1)),
        );
      }
    };
    const drop = (i: number) => {
      rows.delete(id(i));
      sparse.remove(id(i));
    };
    // Slots on both sides of the tiles' edges (32,767 | 32,768 and 65,535 | 65,536); a thousand spread over
    // every tile; and rows of the last tile alone (the first two tiles add nothing for them).
    const spread = Array.from({ length: 1_000 }, (_, n) => id(n * 80 + (n % 80)));
    check('loaded', [id(32_767), id(32_768), id(65_535), id(65_536), id(79_999)]);
    check('a thousand rows listed, in every tile', spread);
    check('listed in the last tile only', [id(70_001), id(79_998)]);
    for (let i = 1; i < 80_000; i += 7) drop(i); // retired slots, not compacted yet (a seventh)
    check('a seventh deleted', [id(32_766), id(32_768), id(65_537)]);
    for (let i = 0; i < 80_000; i += 5) drop(i); // now past a quarter: compacted, slots renumbered
    for (let i = 80_000; i < 80_500; i++) {
      const v = vector(i);
      rows.set(id(i), v);
      sparse.upsert(id(i), encodeVector(v));
    }
    check('compacted, then appended', [id(32_769), id(50_003), id(80_499)]);
  });
});
