/**
 * The vector-index build's id and input: a rechunk starts it after its swap. Plain data, imported by the
 * rechunk workflow and the tests.
 */

/**
 * One build per document index (its id: a rechunk's new index has a new one). A second start while one
 * runs is not needed: the build is idempotent, and builds run one at a time in PostgreSQL anyway.
 */
export const vectorIndexBuildWorkflowId = (indexId: string) => `document-index-vector-build/${indexId}`;

export interface VectorIndexBuildInput {
  tenant: string;
  /** For operators (`PlatformResourceId`): the index's name when the build was started. */
  indexName: string;
  indexId: string;
}

export interface VectorIndexBuildResult {
  /** HNSW indexes built (0: none was due, or another build had made them). */
  built: number;
}
