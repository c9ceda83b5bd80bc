/**
 * The re-embedding workflow's id and input. The API imports this module to start it, so it holds only
 * definitions and plain types.
 */
import type { EmbeddingIdentity } from '../shared/embeddings/consumers.js';

/** One re-embedding per tenant: a newer identity change terminates the running one and starts anew. */
export const embeddingReindexWorkflowId = (tenant: string) => `embedding-reindex/${tenant}`;

/** Settings fixed at start, so replay never depends on the environment. */
export interface EmbeddingReindexInput {
  tenant: string;
  /** The identity change this run serves (recorded in `llm_settings.reindex.run_id` and the progress row). */
  runId: string;
  identity: EmbeddingIdentity;
  previous: EmbeddingIdentity | null;
  /** Texts per batch (`PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE`). */
  batchSize: number;
  /** Where a continued-as-new run resumes. */
  resume?: { consumers: string[]; consumerIndex: number; afterKey: string | null };
}

export interface EmbeddingReindexResult {
  status: 'completed' | 'failed' | 'superseded';
  batches: number;
}
