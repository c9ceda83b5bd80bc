/**
 * The rechunk workflow's id and input. The API imports this module to start it, so it holds only
 * definitions and plain types.
 */
import type { ChunkConfig } from '../shared/document-index/chunking.js';

/**
 * One rechunk per index at a time: a second start with this id is refused while one runs. The tenant
 * is part of the id (URI-encoded, so it holds no `/`; index names hold none), so two tenants' indexes
 * of the same name rechunk independently.
 */
export const rechunkWorkflowId = (tenant: string, indexName: string) =>
  `rechunk/${encodeURIComponent(tenant)}/${indexName}`;

/**
 * The id rechunks had before the tenant was part of it (issue 13). One started under it may still run
 * after an upgrade; a new rechunk of an index of that name waits for it (409), in any tenant, since the
 * old id does not say whose index it rebuilds.
 */
export const legacyRechunkWorkflowId = (indexName: string) => `rechunk/${indexName}`;

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
