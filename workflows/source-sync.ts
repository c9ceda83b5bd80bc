import {
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowFailure,
  ParentClosePolicy,
  executeChild,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { ManagedSourceActivities } from '../activities/managed-sources.js';
import type { PrepareAnswer, SyncRecordInput } from '../activities/managed-sources/sync.js';
import type { RefListing } from '../shared/git/fetch-pack.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { IngestInput, IngestResult } from './ingest-definitions.js';
import type {
  DocumentFeedPlan,
  DocumentFeedSummary,
  SourceSyncInput,
  SourceSyncResult,
} from './source-sync-definitions.js';
import { childSearchAttributes, trackOutcome } from './visibility.js';
import { GitSyncCodes, ManagedSourceCodes } from '../shared/managed-sources/error-codes.js';

const db = proxyActivities<ManagedSourceActivities>(ActivityProfiles.database);
/** Git over the network: transient failures retried a few times; classified ones (credentials, refs) are not. */
const gitOps = proxyActivities<ManagedSourceActivities>(ActivityProfiles.gitNetwork);
/**
 * The record (the source's row, its job and, for a blueprint repository, the blueprints' import in one
 * transaction) heartbeats under the batch profile: a worker killed mid-import is noticed in 10 s, and a
 * large import is not cut at the database profile's 30 s.
 */
const record = proxyActivities<ManagedSourceActivities>(ActivityProfiles.databaseBatch);
/** `managedSyncQuick`, the no-change resync inside the first workflow task: one attempt, else `managedSyncPrepare`. */
const shortcut = proxyLocalActivities<ManagedSourceActivities>(ActivityProfiles.localShortcut);

/**
 * One sync of a managed source: resolve the release ref on the remote (moved tags refused), fetch
 * the commit shallowly and check it out with `checkout_exclude` applied, scan the working tree,
 * record the result. Every phase that runs writes the job row, so progress is readable while it
 * runs; any failure ends the job `error` with a classified code (never a stuck `running` job).
 * Since patch `sync-prepare`, a sync is one activity (resolve, fetch, checkout, scan, feed plan,
 * record), split only around the document feed's ingestion child workflows when it has files to
 * ingest; histories recorded before it replay the six-activity sequence. Since patch `sync-quick`,
 * a resync that finds the synced commit is a local activity instead (see `prepare`).
 */
export async function sourceSyncWorkflow(input: SourceSyncInput): Promise<SourceSyncResult> {
  // The outcome, `failed` included: the sync itself completes, so only this status shows its failure.
  return trackOutcome(
    'sourceSyncWorkflow',
    () => syncOnce(input),
    ({ outcome }) => outcome,
  );
}

async function syncOnce(input: SourceSyncInput): Promise<SourceSyncResult> {
  try {
    if (patched('sync-prepare')) return await syncPrepared(input);
    const resolved = await gitOps.managedSyncResolve(input);
    if (resolved.refusal) return await db.managedSyncFinish({ ...input, result: resolved.refusal });
    const checkout = await gitOps.managedSyncFetch({ ...input, resolved: resolved.ref });
    const scan = await gitOps.managedSyncScan(input);
    // Histories recorded before the document feed replay without it.
    const feed = patched('kb-document-feed') ? await feedDocuments(input) : {};
    return await record.managedSyncRecord({ ...input, resolved: resolved.ref, checkout, scan, ...feed });
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const code =
      cause instanceof ApplicationFailure && cause.type && /^[A-Z_]+$/.test(cause.type)
        ? cause.type
        : ManagedSourceCodes.SYNC_FAILED;
    const message = cause instanceof Error ? cause.message : 'The sync failed.';
    return await db.managedSyncFail({ ...input, errorCode: code, message });
  }
}

/** The sync in one activity, or, when the document feed has files to ingest, its child workflows and then the record. */
async function syncPrepared(input: SourceSyncInput): Promise<SourceSyncResult> {
  const prepared = await prepare(input);
  if (prepared.refusal) return await db.managedSyncFinish({ ...input, result: prepared.refusal });
  if (prepared.result) return prepared.result;
  const { resolved, checkout, scan, plan } = prepared;
  let feed: Pick<SyncRecordInput, 'feed' | 'documentFeedError'>;
  try {
    feed = { feed: { plan, ingested: await ingestDocuments(input, plan) } };
  } catch (err) {
    feed = { documentFeedError: errorOf(err, GitSyncCodes.DOCUMENT_FEED_FAILED) };
  }
  return await record.managedSyncRecord({ ...input, resolved, checkout, scan, ...feed });
}

/**
 * `managedSyncPrepare`; since patch `sync-quick` first the local activity `managedSyncQuick`, which
 * finishes a resync that finds the synced commit in this workflow task (no activity task, no second
 * workflow task). Any other sync goes on in `managedSyncPrepare`, replaying the ref listing the local
 * activity read; a failed local activity leaves it all to `managedSyncPrepare` (its retries, its codes).
 */
async function prepare(input: SourceSyncInput): Promise<PrepareAnswer> {
  if (!patched('sync-quick')) return await gitOps.managedSyncPrepare(input);
  let listing: RefListing | null = null;
  try {
    const quick = await shortcut.managedSyncQuick(input);
    if (quick.prepared) return quick.prepared;
    listing = quick.listing;
  } catch (err) {
    if (isCancellation(err)) throw err; // the sync was cancelled: not a failed shortcut
    // managedSyncPrepare resolves again below.
  }
  return await gitOps.managedSyncPrepare({ ...input, listing });
}

const errorOf = (err: unknown, fallback: string) => {
  let cause = err;
  while (cause instanceof ActivityFailure || cause instanceof ChildWorkflowFailure) cause = cause.cause;
  const code =
    cause instanceof ApplicationFailure && cause.type && /^[A-Z_]+$/.test(cause.type) ? cause.type : fallback;
  return { code, message: cause instanceof Error ? cause.message : 'The document feed failed.' };
};

/**
 * The document feed (`document_indexes` enabled): plan per first-level folder of `documents_root`,
 * ingest each index's changed files in a child `ingestWorkflow` (Git-backed documents), then the
 * summary per index. A failure is recorded as a hydrate error of type `document_indexes`; the sync
 * itself still records its commit.
 */
async function feedDocuments(
  input: SourceSyncInput,
): Promise<{ documentFeed?: DocumentFeedSummary; documentFeedError?: { code: string; message: string } }> {
  try {
    const plan = await gitOps.managedDocumentFeedPlan(input);
    if (!plan.enabled) return {};
    const ingested = await ingestDocuments(input, plan);
    return { documentFeed: await db.managedDocumentFeedSummary({ ...input, plan, ingested }) };
  } catch (err) {
    return { documentFeedError: errorOf(err, GitSyncCodes.DOCUMENT_FEED_FAILED) };
  }
}

/** The plan's ingestion child workflows, one after the other: documents ingested per index. */
async function ingestDocuments(input: SourceSyncInput, plan: DocumentFeedPlan): Promise<Record<string, number>> {
  const ingested: Record<string, number> = {};
  for (const run of plan.ingests) {
    const r = await executeChild<(i: IngestInput) => Promise<IngestResult>>('ingestWorkflow', {
      workflowId: run.workflowId,
      args: [run.input],
      parentClosePolicy: ParentClosePolicy.TERMINATE,
      ...childSearchAttributes('ingestWorkflow', {
        tenant: input.tenant,
        resourceId: run.indexName,
        status: 'running',
      }),
    });
    ingested[run.indexName] = r.added.length;
  }
  return ingested;
}
