import { patched, proxyActivities, setHandler, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { DocumentIndexActivities } from '../activities/document-index.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import { ingestProgressQuery, type IngestInput, type IngestProgress, type IngestResult } from './ingest-definitions.js';
import { trackFailure } from './visibility.js';

const { compactDocumentChunks } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.database);

/** A batch embeds its files' chunks (maybe remotely): it heartbeats, and a dead worker's batch runs again elsewhere. */
const { ingestDocumentBatch } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.documentBatch);
/** pgvector's HNSW indexes built in bulk once the rows are stored (minutes at a million vectors): it heartbeats. */
const { buildDocumentVectorIndexes } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.databaseBuild);

/**
 * ADD_DOCUMENTS of a directory (id `ingest/<index>/<id>`): the planned files in batches, each batch
 * idempotent per file content hash (a batch re-run after a worker crash finds its files `unchanged`
 * and adds no chunk twice), with the compaction checkpoint every `checkpointInterval` documents.
 * Progress is the `ingestProgress` query.
 */
export async function ingestWorkflow(input: IngestInput): Promise<IngestResult> {
  return trackFailure('ingestWorkflow', async () => {
    const result: IngestResult = { added: [], skipped: [...input.skipped], warnings: [] };
    const progress: IngestProgress = { files_total: input.files.length, files_done: 0, added: 0, skipped: 0 };
    setHandler(ingestProgressQuery, () => progress);
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'running' }]);
    let sinceCheckpoint = 0;
    for (let i = 0; i < input.files.length; i += input.batchSize) {
      const files = input.files.slice(i, i + input.batchSize);
      const r = await ingestDocumentBatch({
        tenant: input.tenant,
        indexName: input.indexName,
        root: input.root,
        files,
        chunkConfig: input.chunkConfig,
        ...(input.chunkParams ? { chunkParams: input.chunkParams } : {}),
        ...(input.managedSourceId ? { managedSourceId: input.managedSourceId } : {}),
      });
      // A batch retried after a crash reports the files its first attempt stored as unchanged.
      result.added.push(...r.added);
      result.skipped.push(...r.skipped);
      // A warning every batch gives (the chunking one after a rechunk swap) is reported once.
      for (const w of r.warnings) if (!result.warnings.includes(w)) result.warnings.push(w);
      progress.files_done += files.length;
      progress.added = result.added.length;
      progress.skipped = result.skipped.length - input.skipped.length;
      sinceCheckpoint += files.length;
      if (sinceCheckpoint >= input.checkpointInterval && i + input.batchSize < input.files.length) {
        sinceCheckpoint = 0;
        if (input.checkpointSleepMs > 0) await sleep(input.checkpointSleepMs);
        await compactDocumentChunks();
      }
    }
    // The index becomes searchable through pgvector's HNSW index, built over the stored rows at once
    // (histories recorded before this step replay without it).
    if (patched('docidx-hnsw-build'))
      await buildDocumentVectorIndexes({ tenant: input.tenant, indexName: input.indexName });
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'completed' }]);
    return result;
  });
}
