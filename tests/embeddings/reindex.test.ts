/**
 * Re-embedding after an embedding identity change: the API starts `embeddingReindexWorkflow`, which
 * re-embeds a test-only consumer's texts through the fake model in batches; the worker (its own
 * process) is SIGKILLed midway and a new one finishes; a newer change supersedes a running run.
 * `CHAOS_KILLS` workers are killed in turn inside the same batch (1 here in `npm test`; `npm run
 * chaos` runs this file with more through tests/chaos/reindex-kills.test.ts).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { embeddingReindexWorkflowId } from '../../workflows/embedding-reindex-definitions.js';
import { query } from '../helpers/db.js';
import { TEST_EMBEDDING_TABLE_SQL } from '../helpers/embedding-test-consumer.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { recordHistory } from '../helpers/histories.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let llm: FakeLlm;
let stack: Stack;
let tenant: string;
const workers: WorkerProcess[] = [];
const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
const TIMEOUT_MS = 120_000 + KILLS * 60_000;

function worker(): WorkerProcess {
  const w = spawnWorkerProcess({
    DATABASE_URL: stack.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE: '2',
    TEST_EMBEDDING_CONSUMER: '1',
  });
  workers.push(w);
  return w;
}

const call = (method: string, path: string, body?: unknown) =>
  http(stack.url, method, path, body === undefined ? {} : { body });
const status = async () => (await call('GET', '/api/config/models/embeddings/reindexing-status')).body.data;
const identity = (model: string) => ({ provider_kind: 'other', sub_provider: 'acme', model_name: model });
const items = () =>
  query<{ key: string; text: string; identity: Record<string, string> | null; vector: number[] | null }>(
    stack.db.url,
    'select key, text, identity, vector from test_embedding_items where tenant = $1 order by key',
    [tenant],
  );

/** Polls until `check` holds (no timing assertion: the deadline only bounds a broken run). */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  llm = await startFakeLlm();
  stack = await startStack({ worker: false, env: { PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE: '2' } });
  tenant = stack.config.auth.deploymentTenant;
  await query(stack.db.url, TEST_EMBEDDING_TABLE_SQL);
  const texts = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
  for (const [i, text] of texts.entries())
    await query(
      stack.db.url,
      'insert into test_embedding_items (tenant, key, text, vector, identity) values ($1, $2, $3, $4, $5)',
      [tenant, `k${i}`, text, JSON.stringify([9, 9, 9]), JSON.stringify(identity('embed-a'))],
    );
  const saved = await call('POST', '/api/config/llm-providers/other', {
    sub_provider: 'acme',
    base_url: llm.baseUrl,
    api_key: 'k1',
    model_name: 'fake-model',
  });
  expect(saved.body.success).toBe(true);
  const first = await call('PUT', '/api/config/models/embeddings/config', identity('embed-a'));
  expect(first.body).toMatchObject({ success: true, message: 'Embedding identity set.' });
}, 120_000);
afterAll(async () => {
  llm?.release({ content: 'bye' });
  if (llm) llm.embeddingsHangAfter = undefined;
  for (const w of workers) await w.stop();
  await stack?.close();
  await llm?.close();
});

describe('re-embedding workflow', () => {
  it('starts on an identity change and survives a worker SIGKILLed midway', { timeout: TIMEOUT_MS }, async () => {
    expect((await status()).status).toBe('idle');
    // The first batch is answered, the second hangs (each attempt at it): the worker dies inside it.
    llm.embeddingsHangAfter = 1;
    let w = worker();
    await w.ready;
    const changed = await call('PUT', '/api/config/models/embeddings/config', identity('embed-b'));
    expect(changed.body).toMatchObject({ success: true });
    expect(changed.body.message).toMatch(/marked for re-embedding/);
    const midway = await until('first batch done', status, (s) => s.done === 2);
    expect(midway).toMatchObject({
      status: 'running',
      total: 5,
      failed: 0,
      indexes: ['test_texts'],
      indexes_total: 1,
      indexes_done: 0,
      from: identity('embed-a'),
      to: identity('embed-b'),
    });
    for (let k = 0; k < KILLS; k++) {
      // Attempt k + 1 at the second batch is sent (and held): the worker is inside it.
      await until(
        'second batch sent',
        async () => llm.calls.filter((c) => c.path === '/v1/embeddings').length,
        (n) => n >= 2 + k,
      );
      expect((await w.kill()).signal).toBe('SIGKILL');
      if (k === KILLS - 1) llm.embeddingsHangAfter = undefined;
      w = worker();
      await w.ready;
    }
    const done = await until('re-embedding completed', status, (s) => s.status !== 'running');
    expect(done).toMatchObject({ status: 'completed', total: 5, done: 5, failed: 0, indexes_done: 1, error: null });
    expect(done.finished_at).not.toBeNull();
    const rows = await items();
    expect(rows.map((r) => r.identity)).toEqual(rows.map(() => identity('embed-b')));
    expect(rows.map((r) => r.vector)).toEqual(rows.map(() => [0.1, 0.2, 0.3]));
    // Every text went to the model whole, in batches of two.
    expect(llm.embeddingInputs.flat().sort()).toEqual(
      expect.arrayContaining(['alpha', 'bravo', 'charlie', 'delta', 'echo']),
    );
    expect(Math.max(...llm.embeddingInputs.map((b) => b.length))).toBeLessThanOrEqual(2);
    // No text was embedded twice: the answered batches are the first and the attempts after the last kill.
    expect(llm.embeddingInputs.flat().sort()).toEqual(['alpha', 'bravo', 'charlie', 'delta', 'echo']);
    const handle = stack.api.deps.temporal.workflow.getHandle(embeddingReindexWorkflowId(tenant));
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    await recordHistory('embedding-reindex-worker-restart', handle);
    process.stderr.write(`[chaos] embedding re-index: 5 texts, ${KILLS} kill(s) mid-batch\n`);
  });

  it('a newer identity change supersedes the running re-embedding', async () => {
    llm.embeddingsHang = true;
    await call('PUT', '/api/config/models/embeddings/config', identity('embed-c'));
    const firstRun = await until(
      'run c started',
      status,
      (s) => s.status === 'running' && s.to?.model_name === 'embed-c',
    );
    const handle = stack.api.deps.temporal.workflow.getHandle(embeddingReindexWorkflowId(tenant));
    const runC = (await handle.describe()).runId;
    await call('PUT', '/api/config/models/embeddings/config', identity('embed-d'));
    llm.embeddingsHang = false;
    const done = await until(
      'run d completed',
      status,
      (s) => s.to?.model_name === 'embed-d' && s.status === 'completed',
    );
    expect(done.run_id).not.toBe(firstRun.run_id);
    expect(done).toMatchObject({ total: 5, done: 5, failed: 0, from: identity('embed-c') });
    const previous = await stack.api.deps.temporal.workflow
      .getHandle(embeddingReindexWorkflowId(tenant), runC)
      .describe();
    expect(previous.status.name).toBe('TERMINATED');
    expect((await items()).every((r) => r.identity?.model_name === 'embed-d')).toBe(true);
  }, 180_000);

  it('an unchanged identity starts nothing and refuses an unsaved provider without writing', async () => {
    const before = await status();
    const same = await call('PUT', '/api/config/models/embeddings/config', identity('embed-d'));
    expect(same.body).toMatchObject({ success: true, message: 'The embedding identity is unchanged.' });
    const unsaved = await call('PUT', '/api/config/models/embeddings/config', {
      provider_kind: 'openai',
      model_name: 'x',
    });
    expect([unsaved.status, unsaved.body.error_type]).toEqual([404, 'not_found']);
    expect(await status()).toEqual(before);
    const bad = await call('PUT', '/api/config/models/embeddings/config', { ...identity('e'), extra: 1 });
    expect(bad.status).toBe(422);
    expect(await status()).toEqual(before);
  });
});
