import { z } from 'zod';
import { currentEmbedder } from '../../shared/document-index/embedder.js';
import { indexStats } from '../../shared/document-index/store.js';
import { defineRoute, successEnvelope } from '../http/route.js';

export const ChunkConfig = z.object({
  chunk_size: z.number().int().nullable(),
  chunk_overlap: z.number().int().nullable(),
  chunk_strategy: z.enum(['sentence', 'one_chunk_per_doc']).nullable(),
});

export const IndexStats = z.object({
  name: z.string(),
  file_count: z.number().int().describe('user documents only'),
  document_count: z.number().int(),
  chunk_count: z.number().int(),
  created_at: z.string(),
  needs_reindex: z.boolean(),
  chunk_config: ChunkConfig.nullable().describe('null for an index stranded in another embedding collection'),
  embedding_collection: z.string().describe('the current collection, {provider}_{sanitized_model}_index'),
  collections: z.array(z.string()).describe('collections holding vectors of this index'),
  managed: z.boolean(),
});

export const indexRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/indexes',
    operationId: 'listDocumentIndexes',
    summary: 'Document index inventory (the same data as the _document_index action GET_INDICES_STATS)',
    tags: ['document-indexes'],
    access: { kind: 'authenticated' },
    responses: {
      200: {
        description: 'Index statistics; system indexes twin and harvester excluded',
        schema: successEnvelope(z.object({ indexes: z.array(IndexStats), embedding_collection: z.string() })),
      },
    },
    handler: async ({ em, deps, principal }) => {
      const embedder = await currentEmbedder(em, deps.config, principal.tenant);
      const indexes = await indexStats(em, principal.tenant, embedder.collection);
      return { success: true, data: { indexes, embedding_collection: embedder.collection } };
    },
  }),
];
