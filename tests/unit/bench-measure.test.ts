/**
 * The benchmarks' measures (`bench/lib/measure.ts`): latencies kept in order, and measurements of one path taken
 * apart pooled into one (issue 32's benchmark pools its timed pairs), its percentiles those of all the operations.
 */
import { describe, expect, it } from 'vitest';
import { measure, measurePair, pooled } from '../../bench/lib/measure.js';

/** An operation that resolves after `ms` (a timer), counted in `ran`. */
const waiting = (ms: (i: number) => number, ran: number[]) => async (i: number) => {
  ran.push(i);
  await new Promise((resolve) => setTimeout(resolve, ms(i)));
};

describe('measures', () => {
  it('keeps every latency, ascending, and takes percentiles from them', async () => {
    const ran: number[] = [];
    const m = await measure(
      'waits',
      20,
      2,
      waiting((i) => i % 3, ran),
    );
    expect(ran.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(m.count).toBe(20);
    expect(m.latencies).toHaveLength(20);
    expect([...m.latencies]).toEqual([...m.latencies].sort((a, b) => a - b));
    expect([m.p50, m.p95]).toEqual([m.latencies[10], m.latencies[19]]);
  });

  it('pools measurements of one path: counts, times and latencies together', () => {
    const of = (latencies: number[], seconds: number) => ({
      label: 'path',
      count: latencies.length,
      seconds,
      throughput: latencies.length / seconds,
      p50: latencies[Math.floor(latencies.length / 2)]!,
      p95: latencies[Math.floor(latencies.length * 0.95)]!,
      latencies,
    });
    const fast = of(
      Array.from({ length: 19 }, (_, i) => 1 + i / 100),
      0.02,
    );
    const slow = of([40], 0.04);
    const both = pooled([slow, fast]);
    expect(both.label).toBe('path');
    expect(both.count).toBe(20);
    expect(both.seconds).toBeCloseTo(0.06, 9);
    expect(both.throughput).toBeCloseTo(20 / 0.06, 6);
    expect(both.latencies).toEqual([...fast.latencies, 40]);
    // 20 operations: the p95 is the 20th (index 19), the one slow operation; the fast measurement's own is not.
    expect(both.p95).toBe(40);
    expect(fast.p95).toBe(1.18);
    expect(both.p50).toBe(1.1);
  });

  it('measures a pair in alternating rounds, every operation of each once', async () => {
    const [a, b]: [number[], number[]] = [[], []];
    const [subject, baseline] = await measurePair(
      { label: 'subject', op: waiting(() => 0, a) },
      { label: 'baseline', op: waiting(() => 0, b) },
      30,
      1,
      3,
    );
    expect(a).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(b).toEqual(a);
    expect([subject.count, baseline.count]).toEqual([30, 30]);
    expect([subject.label, baseline.label]).toEqual(['subject', 'baseline']);
  });
});
