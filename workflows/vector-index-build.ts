import { proxyActivities } from '@temporalio/workflow';
import type { DocumentIndexActivities } from '../activities/document-index.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { VectorIndexBuildInput, VectorIndexBuildResult } from './vector-index-build-definitions.js';
import { trackOutcome } from './visibility.js';

/** pgvector's HNSW build: minutes at a million vectors, heartbeating. */
const { buildDocumentVectorIndexes } = proxyActivities<DocumentIndexActivities>(ActivityProfiles.databaseBuild);

/**
 * Builds pgvector's HNSW indexes of a document index that serves already (a rechunk's new index, started by
 * the rechunk after its swap, so the swap does not wait for minutes of graph building). Until the build is
 * valid, a search the process's vector cache cannot answer ranks among the chunks matching a query word;
 * writes go on meanwhile and are in the index when it becomes valid.
 */
export async function vectorIndexBuildWorkflow(input: VectorIndexBuildInput): Promise<VectorIndexBuildResult> {
  return trackOutcome(
    'vectorIndexBuildWorkflow',
    () => buildDocumentVectorIndexes({ indexId: input.indexId }),
    () => 'completed',
  );
}
