/**
 * The rechunk workflow's id and input. The API imports this module to start it, so it holds only
 * definitions and plain types.
 */
import type { ChunkConfig } from '../shared/document-index/chunking.js';

/** One rechunk per index at a time: a second start with this id is refused while one runs. */
export const rechunkWorkflowId = (indexName: string) => `rechunk/${indexName}`;

export interface RechunkInput {
  tenant: string;
  indexName: string;
  /** Names the temporary index (`__rechunk__/<name>/<runId>`). */
  runId: string;
  config: ChunkConfig;
  /** Documents per copy activity. */
  batchSize: number;
}

export interface RechunkResult {
  status: 'completed' | 'failed';
  error?: string;
  docs_rechunked: number;
  chunks_before: number;
  chunks_after: number;
  chunk_config: ChunkConfig;
  Warnings: string[];
  approximate_reassembly_notes: string[];
}
