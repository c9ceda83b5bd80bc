/**
 * Directory ingestion in virtual time: batches of files, the durable pause and compaction checkpoint
 * every `checkpointInterval` documents, a batch retried after a failure, and the `ingestProgress`
 * query. Stub activities count each batch and compaction.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CHUNK_CONFIG } from '../../shared/document-index/chunking.js';
import type { ingestWorkflow } from '../../workflows/ingest.js';
import { ingestProgressQuery, ingestWorkflowId, type IngestInput } from '../../workflows/ingest-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker, timerSeconds } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

/** Stubs: every file is added with one chunk, except `*.bin` files, which are skipped; `failFirst` batches fail once. */
function ingestStubs(failFirst = 0) {
  let failures = 0;
  return recorded({
    ingestDocumentBatch: async ({ files }: { files: string[] }) => {
      if (failures < failFirst) {
        failures++;
        throw new Error('embedding provider unreachable');
      }
      return {
        added: files
          .filter((f) => !f.endsWith('.bin'))
          .map((f) => ({ file_id: `f-${f}`, filepath: f, status: 'added', chunks: 1 })),
        skipped: files.filter((f) => f.endsWith('.bin')).map((f) => ({ filepath: f, reason: 'binary' })),
        warnings: [] as string[],
      };
    },
    compactDocumentChunks: async () => undefined,
    buildDocumentVectorIndexes: async () => ({ built: 1 }),
  });
}

function input(files: string[], overrides: Partial<IngestInput> = {}): IngestInput {
  return {
    tenant: 't1',
    indexName: 'docs',
    root: '/data/docs',
    files,
    skipped: [{ filepath: 'node_modules', reason: 'excluded' }],
    chunkConfig: NO_CHUNK_CONFIG,
    batchSize: 2,
    checkpointInterval: 4,
    checkpointSleepMs: 5_000,
    ...overrides,
  };
}

async function ingest(stubs: ReturnType<typeof ingestStubs>, args: IngestInput) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const handle = await env.client.workflow.start<typeof ingestWorkflow>('ingestWorkflow', {
    taskQueue,
    workflowId: ingestWorkflowId(args.indexName, randomUUID()),
    args: [args],
  });
  return worker.runUntil(async () => ({
    handle,
    result: await handle.result(),
    progress: await handle.query(ingestProgressQuery),
  }));
}

const files = (n: number) => Array.from({ length: n }, (_, i) => (i === 2 ? `f${i}.bin` : `f${i}.md`));

describe('ingestWorkflow', () => {
  it('ingests in batches with a paused compaction checkpoint every four documents, not after the last batch', async () => {
    const stubs = ingestStubs();
    const { handle, result, progress } = await ingest(stubs, input(files(9)));
    expect(stubs.count('ingestDocumentBatch')).toBe(5);
    // Checkpoints after files 4 and 8; none after the ninth (the last batch).
    expect(stubs.count('compactDocumentChunks')).toBe(2);
    expect(await timerSeconds(handle)).toEqual([5, 5]);
    expect(result.added).toHaveLength(8);
    expect(result.skipped).toEqual([
      { filepath: 'node_modules', reason: 'excluded' },
      { filepath: 'f2.bin', reason: 'binary' },
    ]);
    expect(progress).toEqual({ files_total: 9, files_done: 9, added: 8, skipped: 1 });
    // The index's HNSW index (pgvector) built once, after the last batch.
    expect(stubs.calls.buildDocumentVectorIndexes).toEqual([{ tenant: 't1', indexName: 'docs' }]);
  });

  it('compacts without a pause when the checkpoint sleep is zero', async () => {
    const stubs = ingestStubs();
    const { handle } = await ingest(stubs, input(files(6), { checkpointSleepMs: 0 }));
    expect(stubs.count('compactDocumentChunks')).toBe(1);
    expect(await timerSeconds(handle)).toEqual([]);
  });

  it("passes the call's chunk parameters to every batch (none when the input has none) and reports a warning every batch gives once", async () => {
    const chunkParams = { chunk_size: 8, chunk_overlap: 0, chunk_strategy: null };
    const repeated = "chunk parameters: the index's defaults changed while the call ran";
    const stubs = recorded({
      ingestDocumentBatch: async ({ files }: { files: string[] }) => ({
        added: files.map((f) => ({ file_id: `f-${f}`, filepath: f, status: 'added', chunks: 1 })),
        skipped: [] as Array<{ filepath: string; reason: string }>,
        warnings: [repeated, `${files[0]}: empty paragraph dropped`],
      }),
      compactDocumentChunks: async () => undefined,
      buildDocumentVectorIndexes: async () => ({ built: 1 }),
    });
    const { result } = await ingest(stubs, input(['a.md', 'b.md', 'c.md', 'd.md'], { chunkParams }));
    expect(stubs.calls.ingestDocumentBatch).toEqual([
      expect.objectContaining({ files: ['a.md', 'b.md'], chunkParams }),
      expect.objectContaining({ files: ['c.md', 'd.md'], chunkParams }),
    ]);
    expect(result.warnings).toEqual([repeated, 'a.md: empty paragraph dropped', 'c.md: empty paragraph dropped']);
    const legacy = ingestStubs();
    await ingest(legacy, input(['a.md']));
    expect(legacy.calls.ingestDocumentBatch![0]).not.toHaveProperty('chunkParams');
  });

  it('retries a failing batch until it answers; its files are counted once', async () => {
    const stubs = ingestStubs(2);
    const { result, progress } = await ingest(stubs, input(['a.md', 'b.md']));
    expect(stubs.count('ingestDocumentBatch')).toBe(3);
    expect(result.added.map((a) => a.filepath)).toEqual(['a.md', 'b.md']);
    expect(progress).toMatchObject({ files_done: 2, added: 2 });
    expect(stubs.count('compactDocumentChunks')).toBe(0);
  });
});
