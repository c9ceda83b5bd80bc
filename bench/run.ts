/** `npm run bench`: starts its own stack and prints each benchmark beside its baseline, with ratios. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { benchActionReview } from './action-review.js';
import { benchDocumentIndex, benchVectorCacheMb } from './document-index.js';
import { benchEcho } from './echo.js';
import { benchHeadline } from './headline.js';
import { startBenchStack } from './lib/stack.js';
import { benchSettingsSources } from './settings-sources.js';
import { benchThreads } from './threads.js';
import { benchProviderResolution } from './provider-resolution.js';
import { startFakeLlm } from '../tests/helpers/fake-llm.js';
import { benchManagedSync } from './managed-sync.js';
import { benchBlueprints } from './blueprints.js';
import { benchMissions } from './missions.js';

const count = Number(process.env.BENCH_COUNT ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
/** `BENCH_ONLY=echo,threads` runs a subset. */
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const wanted = (name: string) => !only || only.includes(name);
// Thread turns talk to a local OpenAI-compatible fake model, so the figures measure the platform, not a provider.
const llm = await startFakeLlm((req) => ({ content: `ok ${req.messages.length}` }));
// Managed sources keep their working trees under PLATFORM_DATA_DIR: a scratch folder, not the repository's `.data`.
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-data-'));
const stack = await startBenchStack({
  PLATFORM_LLM_BASE_URL: llm.baseUrl,
  PLATFORM_LLM_MODEL: 'bench-model',
  PLATFORM_DATA_DIR: dataDir,
  // The exact vector path's cache budget: as set, else sized by the document-index benchmark for its largest
  // size (its 1M size needs 1.6 GB of vectors; the default 512 MB holds about 330,000 chunks).
  ...(wanted('document-index') && benchVectorCacheMb()
    ? { PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB: benchVectorCacheMb()! }
    : {}),
  // pgvector's HNSW settings as set for the run (e.g. a 1M-chunk build's `..._HNSW_BUILD_MEMORY_MB`).
  ...Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[0].startsWith('PLATFORM_DOCUMENT_INDEX_HNSW_') && e[1] !== undefined,
    ),
  ),
});
try {
  process.stdout.write(
    `# Benchmarks (${new Date().toISOString()}, ${(await import('node:os')).cpus().length} cores, tracing ${
      process.env.BENCH_TRACING === '1' ? 'on (in-process exporter)' : 'off'
    })\n\n`,
  );
  if (wanted('echo')) process.stdout.write((await benchEcho(stack, count, concurrency)) + '\n');
  if (wanted('action-review')) process.stdout.write((await benchActionReview(stack, count, concurrency)) + '\n');
  if (wanted('threads')) process.stdout.write((await benchThreads(stack, count, concurrency)) + '\n');
  if (wanted('settings-sources')) process.stdout.write((await benchSettingsSources(stack, count, concurrency)) + '\n');
  if (wanted('document-index')) process.stdout.write((await benchDocumentIndex(stack)) + '\n');
  if (wanted('headline')) process.stdout.write((await benchHeadline(stack.config.databaseUrl!)) + '\n');
  // Last: it saves and activates a provider, which the other benchmarks must not see.
  if (wanted('provider-resolution'))
    process.stdout.write((await benchProviderResolution(stack, count, concurrency, llm.baseUrl)) + '\n');
  if (wanted('managed-sync'))
    process.stdout.write((await benchManagedSync(stack, Number(process.env.BENCH_SYNC_ROUNDS ?? 3))) + '\n');
  if (wanted('blueprints'))
    process.stdout.write((await benchBlueprints(stack, Number(process.env.BENCH_BLUEPRINT_ROUNDS ?? 3))) + '\n');
  if (wanted('missions'))
    process.stdout.write(
      (await benchMissions(
        stack,
        Number(process.env.BENCH_MISSIONS_SMALL ?? 10),
        Number(process.env.BENCH_MISSIONS_LARGE ?? 1000),
      )) + '\n',
    );
  const spans = stack.tracedSpans();
  if (spans !== undefined) process.stdout.write(`Spans exported in-process: ${spans}\n`);
} finally {
  await stack.close();
  await llm.close();
  await rm(dataDir, { recursive: true, force: true });
}
