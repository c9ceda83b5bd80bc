/**
 * RECHUNK with stub activities, in virtual time: the copy in batches then the swap, another pass when
 * documents changed during the copy (at most three), the temporary index dropped on any failure, and
 * a copy batch retried while embedding fails.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CHUNK_CONFIG } from '../../shared/document-index/chunking.js';
import { rechunkWorkflowId, type RechunkInput } from '../../workflows/rechunk-definitions.js';
import { vectorIndexBuildWorkflowId } from '../../workflows/vector-index-build-definitions.js';
import { recordHistory } from '../helpers/histories.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, runStubbed, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

const BATCH = 10;
type Swap =
  { swapped: true; docs: number; chunksAfter: number; vectorIndexBuild: boolean } | { swapped: false; reason: string };

/** Stubs: each pass copies `docs` documents; the swaps answer in turn (the last repeats). */
function rechunkStubs(opts: { docs: number; swaps: Swap[]; missing?: boolean; copyFailures?: number }) {
  let copied = 0;
  let failures = 0;
  return recorded({
    beginIndexRechunk: async () =>
      opts.missing ? { missing: true } : { sourceId: 'ix_src', tempId: 'ix_tmp', chunksBefore: 40 },
    copyIndexRechunkBatch: async ({ afterId }: { afterId: string | null }) => {
      if (failures < (opts.copyFailures ?? 0)) {
        failures++;
        throw new Error('embedding provider unavailable');
      }
      if (afterId === null) copied = 0;
      const docs = Math.min(BATCH, opts.docs - copied);
      copied += docs;
      return { docs, lastId: `d${copied}`, warnings: docs < BATCH ? [] : [`batch to d${copied}`] };
    },
    swapIndexRechunk: async () => (opts.swaps.length > 1 ? opts.swaps.shift() : opts.swaps[0]),
    dropIndexRechunkTemp: async () => undefined,
    buildDocumentVectorIndexes: async () => ({ built: 1 }),
  });
}

/** Runs a rechunk on a stub worker until `until` (given its handle; by default its result) resolves. */
async function rechunk<T = unknown>(
  stubs: { activities: Parameters<typeof stubWorker>[1] },
  until: (handle: WorkflowHandle) => Promise<T> = (handle) => handle.result() as Promise<T>,
): Promise<T> {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const input: RechunkInput = {
    tenant: 't1',
    indexName: 'docs',
    runId: randomUUID(),
    config: NO_CHUNK_CONFIG,
    batchSize: BATCH,
  };
  const handle = await env.client.workflow.start('rechunkWorkflow', {
    taskQueue,
    workflowId: rechunkWorkflowId('t1', `docs-${input.runId}`),
    args: [input],
  });
  return worker.runUntil(until(handle));
}

const swapped: Swap = { swapped: true, docs: 25, chunksAfter: 60, vectorIndexBuild: false };

describe('rechunkWorkflow', () => {
  it('copies in batches, swaps and completes', async () => {
    const stubs = rechunkStubs({ docs: 25, swaps: [swapped] });
    expect(await rechunk(stubs)).toMatchObject({
      status: 'completed',
      docs_rechunked: 25,
      chunks_before: 40,
      chunks_after: 60,
      Warnings: ['batch to d10', 'batch to d20'],
    });
    expect(stubs.count('copyIndexRechunkBatch')).toBe(3);
    expect(stubs.count('swapIndexRechunk')).toBe(1);
    expect(stubs.count('dropIndexRechunkTemp')).toBe(0);
    // No HNSW build is due (no pgvector, or too few rows): none runs, before the swap or after it.
    expect(stubs.count('buildDocumentVectorIndexes')).toBe(0);
  });

  it("answers at the swap and leaves the new index's HNSW build to a workflow of its own (pgvector)", async () => {
    let release!: () => void;
    const building = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const stubs = recorded({
      beginIndexRechunk: async () => ({ sourceId: 'ix_src', tempId: 'ix_tmp', chunksBefore: 40 }),
      copyIndexRechunkBatch: async () => ({ docs: 3, lastId: 'd3', warnings: [], done: true }),
      swapIndexRechunk: async () => {
        order.push('swap');
        return { ...swapped, vectorIndexBuild: true };
      },
      dropIndexRechunkTemp: async () => undefined,
      buildDocumentVectorIndexes: async () => {
        order.push('build');
        await building;
        return { built: 1 };
      },
    });
    let handle!: WorkflowHandle;
    const [result, build] = await rechunk(stubs, async (h) => {
      handle = h;
      const r = await h.result();
      const child = env.client.workflow.getHandle(vectorIndexBuildWorkflowId('ix_tmp'));
      // The rechunk has answered while the build still runs; it ends on its own.
      const running = (await child.describe()).status.name;
      release();
      return [r, { running, result: await child.result(), parent: (await child.describe()).parentExecution }] as const;
    });
    expect(result).toMatchObject({ status: 'completed', docs_rechunked: 25, chunks_after: 60 });
    expect(build).toMatchObject({ running: 'RUNNING', result: { built: 1 } });
    expect(build.parent?.workflowId).toBe(handle.workflowId);
    expect(order).toEqual(['swap', 'build']);
    expect(stubs.calls.buildDocumentVectorIndexes).toEqual([{ indexId: 'ix_tmp' }]);
    await recordHistory('rechunk-vector-build-after-swap', handle);
    await recordHistory(
      'vector-index-build-completed',
      env.client.workflow.getHandle(vectorIndexBuildWorkflowId('ix_tmp')),
    );
  });

  it('starts the HNSW build after a swap answered by a worker of the version before (no vectorIndexBuild field)', async () => {
    const stubs = rechunkStubs({ docs: 5, swaps: [{ swapped: true, docs: 5, chunksAfter: 9 } as Swap] });
    const built = await rechunk(stubs, async (handle) => {
      expect(await handle.result()).toMatchObject({ status: 'completed', chunks_after: 9 });
      return env.client.workflow.getHandle(vectorIndexBuildWorkflowId('ix_tmp')).result();
    });
    expect(built).toEqual({ built: 1 });
    expect(stubs.calls.buildDocumentVectorIndexes).toEqual([{ indexId: 'ix_tmp' }]);
  });

  it('retries a failing HNSW build without limit, backing off to 10 minutes apart, and it lands once the cause is gone', async () => {
    let attempts = 0;
    const stubs = recorded({
      buildDocumentVectorIndexes: async () => {
        if (++attempts <= 2) throw new Error('could not extend file: No space left on device');
        return { built: 1 };
      },
    });
    const { result, handle } = await runStubbed(env, stubs.activities, 'vectorIndexBuildWorkflow', {
      workflowId: vectorIndexBuildWorkflowId(`ix_${randomUUID()}`),
      args: [{ tenant: 't1', indexName: 'docs', indexId: 'ix_full' }],
    });
    expect(result).toEqual({ built: 1 });
    expect(attempts).toBe(3);
    // The retry policy the server follows (retry timers are real time even here, so not waited for): no attempt
    // limit, each wait doubling up to 10 minutes, so a build that keeps failing runs a few times an hour.
    const events = (await handle.fetchHistory()).events ?? [];
    const policy = events.find((e) => e.activityTaskScheduledEventAttributes)!.activityTaskScheduledEventAttributes!
      .retryPolicy!;
    expect(Number(policy.maximumInterval!.seconds)).toBe(600);
    expect(policy.maximumAttempts ?? 0).toBe(0);
    expect(policy.backoffCoefficient).toBe(2);
  });

  it('keeps copying after a batch cut short by its content budget, until a batch says done', async () => {
    let copied = 0;
    const stubs = recorded({
      beginIndexRechunk: async () => ({ sourceId: 'ix_src', tempId: 'ix_tmp', chunksBefore: 40 }),
      // Large documents: three per batch (fewer than the batch size) until the last of 8.
      copyIndexRechunkBatch: async () => {
        const docs = Math.min(3, 8 - copied);
        copied += docs;
        return { docs, lastId: `d${copied}`, warnings: [], done: copied === 8 };
      },
      swapIndexRechunk: async () => ({ swapped: true, docs: 8, chunksAfter: 30, vectorIndexBuild: false }),
      dropIndexRechunkTemp: async () => undefined,
      buildDocumentVectorIndexes: async () => ({ built: 1 }),
    });
    expect(await rechunk(stubs)).toMatchObject({ status: 'completed', docs_rechunked: 8 });
    expect(stubs.count('copyIndexRechunkBatch')).toBe(3);
    expect(stubs.calls.copyIndexRechunkBatch!.map((c) => (c as { afterId: string | null }).afterId)).toEqual([
      null,
      'd3',
      'd6',
    ]);
    // Each batch is told how many documents the pass copied before it (its statistics refresh points).
    expect(stubs.calls.copyIndexRechunkBatch!.map((c) => (c as { copied?: number }).copied)).toEqual([0, 3, 6]);
  });

  it('copies again when documents changed during the copy, then swaps', async () => {
    const stubs = rechunkStubs({ docs: 15, swaps: [{ swapped: false, reason: 'documents_changed' }, swapped] });
    expect(await rechunk(stubs)).toMatchObject({ status: 'completed' });
    expect(stubs.count('copyIndexRechunkBatch')).toBe(4);
    expect(stubs.count('swapIndexRechunk')).toBe(2);
    // The second pass counts its copies from nought again.
    expect(stubs.calls.copyIndexRechunkBatch!.map((c) => (c as { copied?: number }).copied)).toEqual([0, 10, 0, 10]);
  });

  it('gives up after three passes, drops the temporary index and leaves the original', async () => {
    const stubs = rechunkStubs({ docs: 5, swaps: [{ swapped: false, reason: 'documents_changed' }] });
    expect(await rechunk(stubs)).toMatchObject({ status: 'failed', chunks_before: 40 });
    expect(stubs.count('swapIndexRechunk')).toBe(3);
    expect(stubs.calls.dropIndexRechunkTemp).toEqual([{ tempId: 'ix_tmp' }]);
  });

  it('stops at once when the index was deleted during the copy', async () => {
    const stubs = rechunkStubs({ docs: 5, swaps: [{ swapped: false, reason: 'index_deleted' }] });
    expect(await rechunk(stubs)).toMatchObject({ status: 'failed' });
    expect(stubs.count('swapIndexRechunk')).toBe(1);
    expect(stubs.count('dropIndexRechunkTemp')).toBe(1);
  });

  it('retries a copy batch while embedding fails, then completes', async () => {
    const stubs = rechunkStubs({ docs: 5, swaps: [swapped], copyFailures: 2 });
    expect(await rechunk(stubs)).toMatchObject({ status: 'completed' });
    expect(stubs.count('copyIndexRechunkBatch')).toBe(3);
  });

  it('fails without copying when the index does not exist', async () => {
    const stubs = rechunkStubs({ docs: 5, swaps: [swapped], missing: true });
    expect(await rechunk(stubs)).toMatchObject({ status: 'failed', error: 'No document index named "docs".' });
    expect(stubs.count('copyIndexRechunkBatch')).toBe(0);
    expect(stubs.count('dropIndexRechunkTemp')).toBe(0);
  });
});
