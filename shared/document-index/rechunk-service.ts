import { randomUUID } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { resolveChunkConfig, type ChunkParams } from './chunking.js';
import { configOf, requireIndex } from './store.js';
import { BadRequestError, ConflictError } from '../errors.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { legacyRechunkWorkflowId, rechunkWorkflowId } from '../../workflows/rechunk-definitions.js';
import type { AppDeps } from '../app-deps.js';
import type { Ctx } from './actions.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { DocumentIndexCodes } from './error-codes.js';

/**
 * Documents per copy activity of a rechunk (and at most `RECHUNK_BATCH_BYTES` of their content): each
 * activity costs the workflow a round trip through Temporal, so 20 documents a batch made a 100k-chunk
 * rechunk spend about a quarter of its time between activities. Not more: a batch is written in one
 * transaction, so a failed one is embedded again whole, and a remote embedder makes a call per document.
 */
export const RECHUNK_BATCH = 100;

/**
 * RECHUNK: starts `rechunk/<tenant>/<index_name>` (a second one while it runs is refused 409, and so is
 * one while a rechunk started under the old id `rechunk/<index_name>` still runs) and answers its
 * result. Without chunk parameters the index's stored defaults apply, else the sentence defaults.
 */
export async function rechunkAction(c: Ctx, deps: AppDeps, indexName: string, params: ChunkParams) {
  const index = await requireIndex(c.em, c.tenant, indexName);
  const given = params.chunk_size != null || params.chunk_overlap != null || params.chunk_strategy != null;
  const resolved = resolveChunkConfig(
    configOf(index),
    given ? params : { chunk_strategy: configOf(index).chunk_strategy ?? 'sentence' },
  );
  if ('error' in resolved) throw new BadRequestError(resolved.error, { reason: 'invalid_chunk_parameters' });
  const workflowId = rechunkWorkflowId(c.tenant, indexName);
  const inProgress = (id: string) =>
    new ConflictError(`A rechunk of index "${indexName}" is already running; wait for it to finish.`, {
      code: DocumentIndexCodes.rechunk_in_progress,
      index_name: indexName,
      workflow_id: id,
    });
  if (await legacyRechunkRunning(deps, indexName)) throw inProgress(legacyRechunkWorkflowId(indexName));
  let handle;
  try {
    handle = await deps.temporal.workflow.start(workflowRef('rechunkWorkflow'), {
      workflowId,
      taskQueue: deps.config.temporal.taskQueue,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      args: [{ tenant: c.tenant, indexName, runId: randomUUID(), config: resolved.config, batchSize: RECHUNK_BATCH }],
      typedSearchAttributes: lifecycleSearchAttributes('rechunkWorkflow', {
        tenant: c.tenant,
        resourceId: indexName,
        status: 'running',
      }),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw inProgress(workflowId);
    throw err;
  }
  const r = await handle.result();
  const { status, error, ...rest } = r;
  return { Success: status === 'completed', ...(error ? { Error: error } : {}), index_name: indexName, ...rest };
}

/** Whether a rechunk started under the pre-tenant id of this index name still runs. */
async function legacyRechunkRunning(deps: AppDeps, indexName: string): Promise<boolean> {
  try {
    const d = await deps.temporal.workflow.getHandle(legacyRechunkWorkflowId(indexName)).describe();
    return d.status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
