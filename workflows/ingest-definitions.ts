/**
 * The directory-ingestion workflow's id, input, query and result. The API imports this module to start
 * it, so it holds only definitions and plain types.
 */
import { defineQuery } from '@temporalio/workflow';
import type { ChunkConfig, ChunkParams } from '../shared/document-index/chunking.js';

/** One workflow per ADD_DOCUMENTS call of a directory. */
export const ingestWorkflowId = (indexName: string, id: string) => `ingest/${indexName}/${id}`;

export interface IngestInput {
  tenant: string;
  indexName: string;
  root: string;
  /** Files to ingest, relative to `root`, as planned by the API (exclusions already applied). */
  files: string[];
  /** Excluded paths found while planning, reported with the result. */
  skipped: Array<{ filepath: string; reason: string }>;
  /** The chunking the call resolved when it began. */
  chunkConfig: ChunkConfig;
  /**
   * The call's own chunk parameters (`{}`: none): each batch resolves them against the index it finds, whose
   * defaults a rechunk swap may have changed meanwhile. Absent in workflows started before it.
   */
  chunkParams?: ChunkParams;
  /** Files per activity. */
  batchSize: number;
  /** Compaction checkpoint every `checkpointInterval` documents, after a durable pause of `checkpointSleepMs`. */
  checkpointInterval: number;
  checkpointSleepMs: number;
  /** A managed source's document feed: the documents are Git-backed, marked with this source. */
  managedSourceId?: string;
}

export interface IngestProgress {
  files_total: number;
  files_done: number;
  added: number;
  skipped: number;
}

export interface IngestResult {
  added: Array<{ file_id: string; filepath: string; status: string; chunks: number }>;
  skipped: Array<{ filepath: string; reason: string }>;
  warnings: string[];
}

export const ingestProgressQuery = defineQuery<IngestProgress>('ingestProgress');
