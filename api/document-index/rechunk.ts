import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import { resolveChunkConfig, type ChunkParams } from '../../shared/document-index/chunking.js';
import { configOf, requireIndex } from '../../shared/document-index/store.js';
import { BadRequestError, ConflictError } from '../../shared/errors.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { rechunkWorkflowId } from '../../workflows/rechunk-definitions.js';
import type { AppDeps } from '../deps.js';
import type { Ctx } from './actions.js';

/** Documents per copy activity of a rechunk. */
const RECHUNK_BATCH = 20;

/**
 * RECHUNK: starts `rechunk/<index_name>` (a second one while it runs is refused 409) and answers its
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
  let handle;
  try {
    handle = await deps.temporal.workflow.start(workflowRef('rechunkWorkflow'), {
      workflowId: rechunkWorkflowId(indexName),
      taskQueue: deps.config.temporal.taskQueue,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      args: [{ tenant: c.tenant, indexName, runId: randomUUID(), config: resolved.config, batchSize: RECHUNK_BATCH }],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      throw new ConflictError(`A rechunk of index "${indexName}" is already running; wait for it to finish.`, {
        code: 'rechunk_in_progress',
        index_name: indexName,
        workflow_id: rechunkWorkflowId(indexName),
      });
    throw err;
  }
  const r = await handle.result();
  const { status, error, ...rest } = r;
  return { Success: status === 'completed', ...(error ? { Error: error } : {}), index_name: indexName, ...rest };
}
