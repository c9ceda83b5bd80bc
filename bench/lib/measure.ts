export interface Measurement {
  label: string;
  count: number;
  seconds: number;
  throughput: number;
  p50: number;
  p95: number;
}

/** Runs `count` operations with `concurrency` workers, timing each; no assertion, just figures. */
export async function measure(label: string, count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<Measurement> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const t0 = performance.now();
        await op(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  return { label, count, seconds, throughput: count / seconds, p50: pct(0.5), p95: pct(0.95) };
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
