import { z } from 'zod';
import { currentEmbedder } from '../../shared/document-index/embedder.js';
import { indexStats } from '../../shared/document-index/store.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { IndexStats } from '../../shared/document-index/views.js';

export const indexRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/indexes',
    operationId: 'listDocumentIndexes',
    summary: 'Document index inventory (the same data as the _document_index action GET_INDICES_STATS)',
    tags: ['document-indexes'],
    access: { kind: 'authenticated', permission: null },
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
