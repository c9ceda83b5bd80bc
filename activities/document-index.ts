import type { MikroORM } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';
import type { AppConfig } from '../shared/config.js';
import type { ChunkConfig } from '../shared/document-index/chunking.js';
import { buildHnswIndexesOf } from '../shared/document-index/hnsw.js';
import { compactionCheckpoint, ingestFiles } from '../shared/document-index/ingest.js';
import { beginRechunk, dropRechunkTemp, rechunkCopyBatch, swapRechunk } from '../shared/document-index/rechunk.js';
import { withHeartbeat } from './heartbeat.js';

/** The rechunk workflow's steps (shared/document-index/rechunk.ts); each is idempotent. */
export function createDocumentIndexActivities(deps: { orm: MikroORM; config: AppConfig }) {
  return {
    beginIndexRechunk(input: { tenant: string; indexName: string; runId: string; config: ChunkConfig }) {
      return beginRechunk(deps.orm.em.fork(), input);
    },
    copyIndexRechunkBatch(input: Parameters<typeof rechunkCopyBatch>[2]) {
      return withHeartbeat(2_000, () => rechunkCopyBatch(deps.orm.em.fork(), deps.config, input));
    },
    /**
     * The swap; asked to (`requestVectorIndexBuild`), it records on the new index the HNSW build it is due
     * (pgvector) in the swap's transaction and answers `vectorIndexBuild`, which the rechunk starts next.
     */
    swapIndexRechunk(input: {
      tenant: string;
      indexName: string;
      sourceId: string;
      tempId: string;
      requestVectorIndexBuild?: boolean;
    }) {
      const { requestVectorIndexBuild, ...swap } = input;
      const minRows = requestVectorIndexBuild ? deps.config.documentIndex.hnswMinRows : null;
      return withHeartbeat(2_000, () => swapRechunk(deps.orm.em.fork(), swap, minRows));
    },
    dropIndexRechunkTemp(input: { tempId: string }) {
      return withHeartbeat(2_000, () => dropRechunkTemp(deps.orm.em.fork(), input));
    },
    /** One batch of a directory ingestion (idempotent per file content hash). */
    ingestDocumentBatch(input: Parameters<typeof ingestFiles>[2]) {
      return withHeartbeat(2_000, () => ingestFiles(deps.orm.em.fork(), deps.config, input));
    },
    compactDocumentChunks() {
      return compactionCheckpoint(deps.orm.em.fork(), deps.config);
    },
    /**
     * pgvector's HNSW indexes built in bulk over the stored rows (nothing without pgvector): at the end of an
     * ingestion, and after a rechunk's swap (`vectorIndexBuildWorkflow`; before it in older histories).
     */
    async buildDocumentVectorIndexes(input: { tenant: string; indexName: string } | { indexId: string }) {
      const { cancellationSignal } = Context.current();
      const built = await withHeartbeat(2_000, () =>
        buildHnswIndexesOf(deps.orm.em.fork(), deps.config, input, cancellationSignal),
      );
      return { built: built.filter((b) => b.outcome === 'built').length };
    },
  };
}

export type DocumentIndexActivities = ReturnType<typeof createDocumentIndexActivities>;
