import { randomUUID } from 'node:crypto';
import type { ChunkParams } from './chunking.js';
import { ingestFiles, planIngestion } from './ingest.js';
import { configOf, requireIndex } from './store.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { ingestWorkflowId } from '../../workflows/ingest-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { chunkConfigOrRefuse, managedRepoGuard, type Ctx } from './actions.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';

/** Files per ingestion activity. */
const INGEST_BATCH = 10;

/**
 * ADD_DOCUMENTS: a file is ingested in the request; a directory runs as workflow
 * `ingest/<index>/<id>` (batches idempotent per content hash, the compaction checkpoint every 50
 * documents), and the call answers its per-file report when it ends. Refusals (unknown index, bad chunk
 * parameters, a path outside the roots, an excluded file named explicitly, a Git-backed index) come
 * first and write nothing.
 */
export async function addDocumentsAction(
  c: Ctx,
  deps: AppDeps,
  indexName: string,
  filepath: string,
  params: ChunkParams,
) {
  const index = await requireIndex(c.em, c.tenant, indexName);
  if (index.managed_source_id) managedRepoGuard('ADD_DOCUMENTS', indexName);
  const chunkConfig = chunkConfigOrRefuse(configOf(index), params);
  const plan = await planIngestion(c.config, filepath);
  let report;
  let workflowId: string | undefined;
  if (!plan.directory) {
    report = await ingestFiles(c.em, c.config, {
      tenant: c.tenant,
      indexName,
      root: plan.root,
      files: plan.files,
      chunkConfig,
      chunkParams: params,
    });
    if (report.skipped[0]?.reason.startsWith('managed_repo_guard'))
      managedRepoGuard('ADD_DOCUMENTS', indexName, plan.files[0]);
  } else {
    workflowId = ingestWorkflowId(indexName, randomUUID());
    const { compactionInterval, compactionSleepS } = c.config.documentIndex;
    report = await deps.temporal.workflow.execute(workflowRef('ingestWorkflow'), {
      workflowId,
      taskQueue: deps.config.temporal.taskQueue,
      args: [
        {
          tenant: c.tenant,
          indexName,
          root: plan.root,
          files: plan.files,
          skipped: plan.skipped,
          chunkConfig,
          chunkParams: params,
          batchSize: INGEST_BATCH,
          checkpointInterval: compactionInterval,
          checkpointSleepMs: Math.round(compactionSleepS * 1000),
        },
      ],
      typedSearchAttributes: lifecycleSearchAttributes('ingestWorkflow', {
        tenant: c.tenant,
        resourceId: indexName,
        status: 'running',
      }),
    });
  }
  return {
    Success: true,
    index_name: indexName,
    added: report.added,
    skipped: report.skipped,
    Warnings: report.warnings,
    ...(workflowId ? { workflow_id: workflowId } : {}),
    ...(chunkConfig.chunk_strategy ? { chunk_config: chunkConfig } : {}),
  };
}
