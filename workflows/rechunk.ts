import {
  ActivityFailure,
  ParentClosePolicy,
  patched,
  proxyActivities,
  startChild,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { DocumentIndexActivities } from '../activities/document-index.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import type { RechunkInput, RechunkResult } from './rechunk-definitions.js';
import { vectorIndexBuildWorkflowId } from './vector-index-build-definitions.js';
import { vectorIndexBuildWorkflow } from './vector-index-build.js';
import { childSearchAttributes, setLifecycleStatus, trackFailure } from './visibility.js';

const { beginIndexRechunk } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.database);
/**
 * The swap and the temporary index's drop delete a whole index's rows (a million at the largest sizes):
 * they heartbeat under the batch profile's 5-minute limit instead of the 30 s one.
 */
const { swapIndexRechunk, dropIndexRechunkTemp } = proxyActivities<DocumentIndexActivities>(
  ActivityProfiles.databaseBatch,
);

/** A copy batch embeds its chunks (maybe through a remote provider): it heartbeats, and a dead worker's batch runs again elsewhere. */
const { copyIndexRechunkBatch } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.documentBatchBounded);
/**
 * pgvector's HNSW index of the temporary index, built after its copy and before the swap by histories recorded
 * before the build moved after the swap (`vectorIndexBuildWorkflow`); minutes at a million vectors: it heartbeats.
 */
const { buildDocumentVectorIndexes } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.databaseBuild);

/**
 * The new index's HNSW build runs after the swap, in a workflow of its own that outlives the rechunk: the index
 * serves at once (each process's vector cache ranks it exactly, a process that has not cached it yet ranks among
 * the chunks matching a query word), and the rechunk's time grows with its copy, not with the graph's build.
 */
const BUILD_AFTER_SWAP = 'docidx-vector-build-after-swap';

/** How often the copy runs again when documents changed during it, before giving up. */
const MAX_PASSES = 3;

function rechunkResult(
  config: RechunkInput['config'],
  status: RechunkResult['status'],
  extra: Partial<RechunkResult>,
): RechunkResult {
  return {
    status,
    docs_rechunked: 0,
    chunks_before: 0,
    chunks_after: 0,
    chunk_config: config,
    Warnings: [],
    approximate_reassembly_notes: [],
    ...extra,
  };
}

/** One copy pass into the temporary index, batch after batch (cursor = the last document's id). */
async function copyAll(
  input: RechunkInput,
  begun: { sourceId: string; tempId: string },
  warnings: string[],
): Promise<void> {
  let afterId: string | null = null;
  let copied = 0;
  for (;;) {
    const r: Awaited<ReturnType<typeof copyIndexRechunkBatch>> = await copyIndexRechunkBatch({
      tenant: input.tenant,
      sourceId: begun.sourceId,
      tempId: begun.tempId,
      afterId,
      limit: input.batchSize,
      chunkConfig: input.config,
      copied,
    });
    warnings.push(...r.warnings);
    afterId = r.lastId;
    copied += r.docs;
    // `done` (a batch may stop short of `batchSize` at its content budget); results recorded before it had none.
    if (r.done ?? r.docs < input.batchSize) break;
  }
}

/**
 * Starts the new index's HNSW build, which outlives the rechunk. One already started under its id is the same
 * build: the rechunk completes either way, its swap being done.
 */
async function startVectorIndexBuild(input: RechunkInput, indexId: string): Promise<void> {
  const { tenant, indexName } = input;
  try {
    await startChild(vectorIndexBuildWorkflow, {
      workflowId: vectorIndexBuildWorkflowId(indexId),
      args: [{ tenant, indexName, indexId }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      ...childSearchAttributes('vectorIndexBuildWorkflow', { tenant, resourceId: indexName, status: 'running' }),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * RECHUNK (id `rechunk/<tenant>/<index_name>`): rebuild into a temporary index, verify, swap atomically, drop the
 * old one. Any failure drops the temporary index; the original keeps serving throughout.
 */
export async function rechunkWorkflow(input: RechunkInput): Promise<RechunkResult> {
  return trackFailure('rechunkWorkflow', async () => {
    const { tenant, indexName, runId, config } = input;
    const result = (status: RechunkResult['status'], extra: Partial<RechunkResult>) =>
      rechunkResult(config, status, extra);
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'running' }]);
    const begun = await beginIndexRechunk({ tenant, indexName, runId, config });
    if ('missing' in begun) {
      setLifecycleStatus('rechunkWorkflow', 'failed');
      return result('failed', { error: `No document index named "${indexName}".` });
    }
    const warnings: string[] = [];
    const buildAfterSwap = patched(BUILD_AFTER_SWAP);
    try {
      for (let pass = 1; pass <= MAX_PASSES; pass++) {
        await copyAll(input, begun, warnings);
        // Before that change: the copied rows indexed at once before the swap made them searchable.
        if (!buildAfterSwap && patched('docidx-hnsw-build'))
          await buildDocumentVectorIndexes({ indexId: begun.tempId });
        const swap = await swapIndexRechunk({
          tenant,
          indexName,
          sourceId: begun.sourceId,
          tempId: begun.tempId,
          // The swap records the build it requests on the index, so searches know one is coming.
          ...(buildAfterSwap ? { requestVectorIndexBuild: true } : {}),
        });
        if (swap.swapped) {
          // A swap answered by a worker of the version before says nothing: the build is started all the same
          // (it builds nothing where none is due).
          if (buildAfterSwap && swap.vectorIndexBuild !== false) await startVectorIndexBuild(input, begun.tempId);
          upsertSearchAttributes([{ key: SearchAttributes.status, value: 'completed' }]);
          return result('completed', {
            docs_rechunked: swap.docs,
            chunks_before: begun.chunksBefore,
            chunks_after: swap.chunksAfter,
            Warnings: warnings,
          });
        }
        if (swap.reason === 'index_deleted') break;
      }
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
    }
    await dropIndexRechunkTemp({ tempId: begun.tempId });
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'failed' }]);
    return result('failed', {
      chunks_before: begun.chunksBefore,
      error:
        'The rechunk did not complete (the index changed during it, was deleted, or embedding kept failing); the original index is unchanged.',
      Warnings: warnings,
    });
  });
}
