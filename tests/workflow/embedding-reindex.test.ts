/**
 * Re-embedding after an identity change, in virtual time: each consumer walked in batches with its
 * end recorded, a run superseded at its start or mid-walk, and a provider that stays down failing the
 * run after the batch's attempts. Stub activities count each batch.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddingIdentity } from '../../shared/embeddings/consumers.js';
import {
  embeddingReindexWorkflowId,
  type EmbeddingReindexInput,
} from '../../workflows/embedding-reindex-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

const BATCH = 5;
const identity: EmbeddingIdentity = { provider_kind: 'openai', sub_provider: '', model_name: 'text-embedding-3-small' };

type Batch = { items: number; lastKey: string | null; stop?: { status: 'superseded' } };

/** Stubs: each consumer holds the given number of items; `batch` may override an answer. */
function reindexStubs(
  items: Record<string, number>,
  opts: { begin?: 'running' | 'superseded'; batch?: (consumer: string, n: number) => Batch | Error | undefined } = {},
) {
  const served = new Map<string, number>();
  return recorded({
    beginEmbeddingReindex: async () => ({ status: opts.begin ?? 'running', consumers: Object.keys(items) }),
    reembedBatch: async ({ consumer }: { consumer: string }) => {
      const n = (served.get(consumer) ?? 0) + 1;
      served.set(consumer, n);
      const override = opts.batch?.(consumer, n);
      if (override instanceof Error) throw override;
      if (override) return override;
      const left = items[consumer]! - (n - 1) * BATCH;
      return { items: Math.max(0, Math.min(BATCH, left)), lastKey: `${consumer}-${n}` };
    },
    embeddingConsumerDone: async () => undefined,
    finishEmbeddingReindex: async () => undefined,
  });
}

async function reindex(stubs: ReturnType<typeof reindexStubs>, tenant: string) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const input: EmbeddingReindexInput = { tenant, runId: `run-${tenant}`, identity, previous: null, batchSize: BATCH };
  const handle = await env.client.workflow.start('embeddingReindexWorkflow', {
    taskQueue,
    workflowId: embeddingReindexWorkflowId(tenant),
    args: [input],
  });
  return worker.runUntil(handle.result());
}

describe('embeddingReindexWorkflow', () => {
  it('walks every consumer in batches and records each consumer done, then the end', async () => {
    const stubs = reindexStubs({ documents: 12, wiki: 5 });
    expect(await reindex(stubs, 't_walk')).toEqual({ status: 'completed', batches: 5 });
    // documents: 5 + 5 + 2; wiki: 5 + an empty batch that ends the walk.
    expect(stubs.count('reembedBatch')).toBe(5);
    expect(stubs.calls.embeddingConsumerDone).toMatchObject([{ consumersDone: 1 }, { consumersDone: 2 }]);
    expect(stubs.calls.finishEmbeddingReindex).toEqual([
      { tenant: 't_walk', runId: 'run-t_walk', status: 'completed' },
    ]);
  });

  it('does nothing when a newer identity change superseded it before it began', async () => {
    const stubs = reindexStubs({ documents: 12 }, { begin: 'superseded' });
    expect(await reindex(stubs, 't_superseded')).toEqual({ status: 'superseded', batches: 0 });
    expect(stubs.count('reembedBatch')).toBe(0);
    expect(stubs.count('finishEmbeddingReindex')).toBe(0);
  });

  it('stops where a batch finds the identity changed', async () => {
    const stubs = reindexStubs(
      { documents: 20 },
      { batch: (_, n) => (n === 2 ? { items: 0, lastKey: null, stop: { status: 'superseded' } } : undefined) },
    );
    expect(await reindex(stubs, 't_mid')).toEqual({ status: 'superseded', batches: 2 });
    expect(stubs.count('embeddingConsumerDone')).toBe(0);
    expect(stubs.calls.finishEmbeddingReindex).toEqual([{ tenant: 't_mid', runId: 'run-t_mid', status: 'superseded' }]);
  });

  it('fails the run after ten attempts of a batch while the provider stays down', async () => {
    const stubs = reindexStubs({ documents: 20 }, { batch: () => new Error('provider unavailable') });
    expect(await reindex(stubs, 't_down')).toEqual({ status: 'failed', batches: 0 });
    expect(stubs.count('reembedBatch')).toBe(10);
    expect(stubs.calls.finishEmbeddingReindex).toMatchObject([{ status: 'failed' }]);
  });
});
