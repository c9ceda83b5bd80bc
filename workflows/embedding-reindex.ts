import {
  ActivityFailure,
  continueAsNew,
  proxyActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EmbeddingActivities } from '../activities/embeddings.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import type { EmbeddingReindexInput, EmbeddingReindexResult } from './embedding-reindex-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

const { beginEmbeddingReindex, embeddingConsumerDone, finishEmbeddingReindex } = proxyActivities<EmbeddingActivities>(
  ActivityProfiles.database,
);

/**
 * A batch is one embedding call: it heartbeats every 2 s, so a dead worker's batch is retried on
 * another within 10 s. A provider that stays down (retryable failures) fails the run after the
 * attempts, rather than leaving it `running` for ever.
 */
const { reembedBatch } = proxyActivities<EmbeddingActivities>(ActivityProfiles.embeddingBatch);

/**
 * Re-embedding after an embedding identity change (id `embedding-reindex/<tenant>`): counts what every
 * registered embedding consumer must re-embed, then walks each in batches (cursor = the last item's
 * key), and records the end. A newer change terminates this run and starts its own (the API starts it
 * with `TERMINATE_EXISTING`); activities of a superseded run find the identity changed and write nothing.
 */
export async function embeddingReindexWorkflow(input: EmbeddingReindexInput): Promise<EmbeddingReindexResult> {
  return trackFailure('embeddingReindexWorkflow', async () => {
    const { tenant, runId, identity, batchSize } = input;
    let consumers: string[];
    if (input.resume) consumers = input.resume.consumers;
    else {
      const begun = await beginEmbeddingReindex({ tenant, runId, identity, previous: input.previous });
      if (begun.status === 'superseded') {
        setLifecycleStatus('embeddingReindexWorkflow', 'superseded');
        return { status: 'superseded', batches: 0 };
      }
      consumers = begun.consumers;
    }
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'running' }]);
    let batches = 0;
    const end = async (status: EmbeddingReindexResult['status'], error?: string): Promise<EmbeddingReindexResult> => {
      await finishEmbeddingReindex({ tenant, runId, status, ...(error ? { error } : {}) });
      upsertSearchAttributes([{ key: SearchAttributes.status, value: status }]);
      return { status, batches };
    };
    for (let ci = input.resume?.consumerIndex ?? 0; ci < consumers.length; ci++) {
      let afterKey = ci === input.resume?.consumerIndex ? input.resume.afterKey : null;
      for (;;) {
        let r;
        try {
          r = await reembedBatch({ tenant, runId, identity, consumer: consumers[ci]!, afterKey, batchSize });
        } catch (err) {
          if (!(err instanceof ActivityFailure)) throw err;
          return end(
            'failed',
            'The embedding provider kept failing; re-embedding stopped. Change or save the identity again to retry.',
          );
        }
        batches++;
        if (r.stop) return end(r.stop.status, r.stop.status === 'failed' ? r.stop.error : undefined);
        afterKey = r.lastKey;
        if (r.items < batchSize) break;
        if (workflowInfo().continueAsNewSuggested)
          await continueAsNew<typeof embeddingReindexWorkflow>({
            ...input,
            resume: { consumers, consumerIndex: ci, afterKey },
          });
      }
      await embeddingConsumerDone({ tenant, runId, consumersDone: ci + 1 });
    }
    return end('completed');
  });
}
