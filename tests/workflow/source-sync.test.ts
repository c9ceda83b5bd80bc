/**
 * One sync of a managed source with stub activities, in virtual time: a refused ref recorded as the
 * outcome, a classified git failure recorded with its code (never a stuck job), transient git failures
 * retried, and the document feed ingesting each index in a child ingest workflow.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CHUNK_CONFIG } from '../../shared/document-index/chunking.js';
import type { IngestInput } from '../../workflows/ingest-definitions.js';
import type { SourceSyncInput } from '../../workflows/source-sync-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

type Stub = (input: never) => Promise<unknown>;

const REF = { sha: 'abc123', tag: 'v1' };
/** What `managedSyncPrepare` answers when the document feed has files to ingest: the workflow runs them, then records. */
const prepared = (plan: unknown) => ({
  refusal: null,
  result: null,
  resolved: REF,
  checkout: { files: 3 },
  scan: { blueprints: 1 },
  plan,
});

/**
 * Stubs of a sync in its one-activity shape (`patched('sync-prepare')`; the six-activity shape of older
 * histories is replayed by tests/replay): `managedSyncPrepare` resolves, fetches, scans and records
 * unless it answers a refusal or a feed plan; `overrides` replace any stub.
 */
function syncStubs(overrides: Record<string, Stub> = {}) {
  return recorded({
    // The local activity (`patched('sync-quick')`) finds another commit: managedSyncPrepare goes on.
    managedSyncQuick: async () => ({ prepared: null, listing: null }),
    managedSyncPrepare: async () => ({ refusal: null, result: { outcome: 'synced' } }),
    managedSyncRecord: async () => ({ outcome: 'synced' }),
    managedSyncFinish: async () => ({ outcome: 'refused' }),
    managedSyncFail: async ({ errorCode }: { errorCode: string }) => ({ outcome: 'failed', errorCode }),
    ingestDocumentBatch: async ({ files }: { files: string[] }) => ({
      added: files.map((f) => ({ file_id: f, filepath: f, status: 'added', chunks: 1 })),
      skipped: [],
      warnings: [],
    }),
    compactDocumentChunks: async () => undefined,
    buildDocumentVectorIndexes: async () => ({ built: 0 }),
    ...overrides,
  });
}

async function sync(stubs: ReturnType<typeof syncStubs>) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const input: SourceSyncInput = { sourceId: 'ms_1', jobId: randomUUID(), tenant: 't1', trigger: 'api' };
  const handle = await env.client.workflow.start('sourceSyncWorkflow', {
    taskQueue,
    workflowId: `source-sync-test/${input.jobId}`,
    args: [input],
  });
  return worker.runUntil(handle.result());
}

/** A moved tag, as the resolve answers it. */
const REFUSAL = { refusal: { code: 'REF_MOVED' }, result: null };

/** The sync ends with the refusal recorded (`managedSyncFinish`) and nothing else. */
async function expectRefused(stubs: ReturnType<typeof syncStubs>) {
  expect(await sync(stubs)).toEqual({ outcome: 'refused' });
  expect(stubs.calls.managedSyncFinish).toMatchObject([{ result: { code: 'REF_MOVED' } }]);
  expect(stubs.count('managedSyncRecord')).toBe(0);
}

const ingest = (indexName: string, files: string[]): IngestInput => ({
  tenant: 't1',
  indexName,
  root: '/repo/docs',
  files,
  skipped: [],
  chunkConfig: NO_CHUNK_CONFIG,
  batchSize: 10,
  checkpointInterval: 100,
  checkpointSleepMs: 0,
  managedSourceId: 'ms_1',
});

describe('sourceSyncWorkflow', () => {
  it('resolves, fetches, scans and records the sync in one activity when nothing is to be ingested', async () => {
    const stubs = syncStubs();
    expect(await sync(stubs)).toEqual({ outcome: 'synced' });
    expect(stubs.count('managedSyncPrepare')).toBe(1);
    expect(stubs.calls.managedSyncPrepare).toMatchObject([{ sourceId: 'ms_1', tenant: 't1', trigger: 'api' }]);
    for (const step of ['managedSyncRecord', 'managedSyncFinish', 'managedSyncFail', 'ingestDocumentBatch'] as const)
      expect(stubs.count(step)).toBe(0);
  });

  it('a resync the local activity finishes (the synced commit) runs no activity', async () => {
    const stubs = syncStubs({
      managedSyncQuick: async () => ({ prepared: { refusal: null, result: { outcome: 'up_to_date' } } }),
    });
    expect(await sync(stubs)).toEqual({ outcome: 'up_to_date' });
    expect(stubs.calls.managedSyncQuick).toMatchObject([{ sourceId: 'ms_1', tenant: 't1', trigger: 'api' }]);
    for (const step of ['managedSyncPrepare', 'managedSyncRecord', 'managedSyncFinish', 'managedSyncFail'] as const)
      expect(stubs.count(step)).toBe(0);
  });

  it('hands the ref listing the local activity read to managedSyncPrepare', async () => {
    const listing = { request: 'http://git/r.git/info/refs?service=git-upload-pack', body: 'AAAA' };
    const stubs = syncStubs({ managedSyncQuick: async () => ({ prepared: null, listing }) });
    expect(await sync(stubs)).toEqual({ outcome: 'synced' });
    expect(stubs.calls.managedSyncPrepare).toMatchObject([{ sourceId: 'ms_1', listing }]);
  });

  it('a moved tag the local activity finds is recorded as the refusal', async () => {
    const stubs = syncStubs({ managedSyncQuick: async () => ({ prepared: REFUSAL }) });
    await expectRefused(stubs);
    expect(stubs.count('managedSyncPrepare')).toBe(0);
  });

  it('a failed local activity (one attempt) leaves the sync to managedSyncPrepare and its classified codes', async () => {
    const stubs = syncStubs({
      managedSyncQuick: async () => {
        throw ApplicationFailure.nonRetryable('authentication failed', 'GIT_AUTH_FAILED');
      },
      managedSyncPrepare: async () => {
        throw ApplicationFailure.nonRetryable('authentication failed', 'GIT_AUTH_FAILED');
      },
    });
    expect(await sync(stubs)).toEqual({ outcome: 'failed', errorCode: 'GIT_AUTH_FAILED' });
    expect(stubs.count('managedSyncQuick')).toBe(1);
    expect(stubs.calls.managedSyncPrepare).toMatchObject([{ sourceId: 'ms_1', listing: null }]);
    expect(stubs.count('managedSyncFail')).toBe(1);
  });

  it('records a refused ref (a moved tag) without anything else', async () => {
    await expectRefused(syncStubs({ managedSyncPrepare: async () => REFUSAL }));
  });

  it('ends the job failed with the classified code of a git failure, after one attempt', async () => {
    const stubs = syncStubs({
      managedSyncPrepare: async () => {
        throw ApplicationFailure.nonRetryable('authentication failed', 'GIT_AUTH_FAILED');
      },
    });
    expect(await sync(stubs)).toEqual({ outcome: 'failed', errorCode: 'GIT_AUTH_FAILED' });
    expect(stubs.count('managedSyncPrepare')).toBe(1);
    expect(stubs.calls.managedSyncFail).toMatchObject([
      { errorCode: 'GIT_AUTH_FAILED', message: 'authentication failed' },
    ]);
    expect(stubs.count('managedSyncRecord')).toBe(0);
  });

  it('retries a transient git failure and records the sync', async () => {
    let failures = 0;
    const stubs = syncStubs({
      managedSyncPrepare: async () => {
        if (failures++ < 2) throw new Error('connection reset');
        return { refusal: null, result: { outcome: 'synced' } };
      },
    });
    expect(await sync(stubs)).toEqual({ outcome: 'synced' });
    expect(stubs.count('managedSyncPrepare')).toBe(3);
    expect(stubs.count('managedSyncFail')).toBe(0);
  });

  it('feeds each planned index through a child ingest workflow and records the counts', async () => {
    const plan = {
      enabled: true,
      ingests: [
        { workflowId: `ingest/guides/${randomUUID()}`, indexName: 'guides', input: ingest('guides', ['a.md', 'b.md']) },
        { workflowId: `ingest/faq/${randomUUID()}`, indexName: 'faq', input: ingest('faq', ['q.md']) },
      ],
    };
    const stubs = syncStubs({ managedSyncPrepare: async () => prepared(plan) });
    expect(await sync(stubs)).toEqual({ outcome: 'synced' });
    expect(stubs.count('ingestDocumentBatch')).toBe(2);
    expect(stubs.calls.managedSyncRecord).toMatchObject([
      { resolved: REF, checkout: { files: 3 }, scan: { blueprints: 1 }, feed: { ingested: { guides: 2, faq: 1 } } },
    ]);
  });

  it('records the sync with the feed error when an ingestion child fails', async () => {
    const plan = {
      enabled: true,
      ingests: [
        { workflowId: `ingest/guides/${randomUUID()}`, indexName: 'guides', input: ingest('guides', ['a.md']) },
      ],
    };
    const stubs = syncStubs({
      managedSyncPrepare: async () => prepared(plan),
      ingestDocumentBatch: async () => {
        throw ApplicationFailure.nonRetryable('the embedding provider refused', 'EMBEDDING_FAILED');
      },
    });
    expect(await sync(stubs)).toEqual({ outcome: 'synced' });
    expect(stubs.calls.managedSyncRecord).toMatchObject([
      { resolved: REF, documentFeedError: { code: expect.stringMatching(/^[A-Z_]+$/) } },
    ]);
    expect(stubs.calls.managedSyncRecord[0]).not.toHaveProperty('feed');
    expect(stubs.count('managedSyncFail')).toBe(0);
  });
});
