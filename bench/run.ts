/** `npm run bench`: starts its own stack and prints each benchmark beside its baseline, with ratios. */
import { benchActionReview } from './action-review.js';
import { benchEcho } from './echo.js';
import { startBenchStack } from './lib/stack.js';

const count = Number(process.env.BENCH_COUNT ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const stack = await startBenchStack();
try {
  process.stdout.write(`# Benchmarks (${new Date().toISOString()}, ${(await import('node:os')).cpus().length} cores)\n\n`);
  process.stdout.write((await benchEcho(stack, count, concurrency)) + '\n');
  process.stdout.write((await benchActionReview(stack, count, concurrency)) + '\n');
} finally {
  await stack.close();
}
