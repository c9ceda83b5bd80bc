export interface Measurement {
  label: string;
  count: number;
  seconds: number;
  throughput: number;
  p50: number;
  p95: number;
  /** Every operation's latency (ms), ascending. */
  latencies: readonly number[];
}

/** Runs operations `from`..`to - 1` with `concurrency` workers; answers the wall time and each latency. */
async function runBatch(from: number, to: number, concurrency: number, op: (i: number) => Promise<void>) {
  const latencies: number[] = [];
  let next = from;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < to) {
        const i = next++;
        const t0 = performance.now();
        await op(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { ms: performance.now() - started, latencies };
}

function summarise(label: string, count: number, ms: number, latencies: number[]): Measurement {
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  return {
    label,
    count,
    seconds: ms / 1000,
    throughput: count / (ms / 1000),
    p50: pct(0.5),
    p95: pct(0.95),
    latencies,
  };
}

/** Measurements of one path taken apart, as one: their operations, times and latencies together. */
export function pooled(measurements: readonly Measurement[]): Measurement {
  const count = measurements.reduce((n, m) => n + m.count, 0);
  const ms = measurements.reduce((t, m) => t + m.seconds * 1000, 0);
  return summarise(
    measurements[0]!.label,
    count,
    ms,
    measurements.flatMap((m) => m.latencies),
  );
}

/** Runs `count` operations with `concurrency` workers, timing each; no assertion, just figures. */
export async function measure(
  label: string,
  count: number,
  concurrency: number,
  op: (i: number) => Promise<void>,
): Promise<Measurement> {
  const { ms, latencies } = await runBatch(0, count, concurrency, op);
  return summarise(label, count, ms, latencies);
}

export interface Path {
  label: string;
  op: (i: number) => Promise<void>;
}

/**
 * Measures two paths fairly on a shared, noisy machine: `count` operations each, in `rounds`
 * alternating batches (A then B, then B then A, ...), so both see the same server state (the dev
 * server's SQLite file grows as runs accumulate) and the same background load. Throughput is each
 * path's operations over the time its own batches took.
 */
export async function measurePair(
  subject: Path,
  baseline: Path,
  count: number,
  concurrency: number,
  rounds = 10,
): Promise<[Measurement, Measurement]> {
  const per = Math.max(1, Math.ceil(count / rounds));
  const totals = new Map<Path, { ms: number; latencies: number[]; done: number }>([
    [subject, { ms: 0, latencies: [], done: 0 }],
    [baseline, { ms: 0, latencies: [], done: 0 }],
  ]);
  for (let round = 0; round * per < count; round++) {
    const from = round * per;
    const to = Math.min(count, from + per);
    for (const path of round % 2 === 0 ? [baseline, subject] : [subject, baseline]) {
      const batch = await runBatch(from, to, concurrency, path.op);
      const total = totals.get(path)!;
      total.ms += batch.ms;
      total.latencies.push(...batch.latencies);
      total.done += to - from;
    }
  }
  const of = (path: Path) => {
    const t = totals.get(path)!;
    return summarise(path.label, t.done, t.ms, t.latencies);
  };
  return [of(subject), of(baseline)];
}

export function report(title: string, subject: Measurement, baseline: Measurement): string {
  const row = (m: Measurement) =>
    `| ${m.label} | ${m.count} | ${m.throughput.toFixed(1)}/s | ${m.p50.toFixed(1)} ms | ${m.p95.toFixed(1)} ms |`;
  return [
    `### ${title}`,
    '',
    '| path | ops | throughput | p50 | p95 |',
    '|-|-|-|-|-|',
    row(baseline),
    row(subject),
    '',
    `ratio (${subject.label} / ${baseline.label}): throughput ${(subject.throughput / baseline.throughput).toFixed(2)}x, ` +
      `p50 ${(subject.p50 / baseline.p50).toFixed(2)}x, p95 ${(subject.p95 / baseline.p95).toFixed(2)}x`,
    '',
  ].join('\n');
}
