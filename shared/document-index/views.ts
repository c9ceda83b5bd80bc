// The wire shape of an index's statistics, shared by the index routes and the `_document_index` tool.
import { z } from 'zod';

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

/** A knowledge base: a named bundle of document-index names, and the agents it is assigned to. */
export const KnowledgeBaseView = z
  .object({
    id: z.string().describe('"kb_" and 32 lowercase hex characters'),
    name: z.string(),
    description: z.string(),
    index_names: z.array(z.string()).describe('the bundled document-index names, sorted'),
    agent_ids: z.array(z.string()).describe('the agents it is assigned to, sorted'),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'KnowledgeBase' });
export type KnowledgeBaseView = z.infer<typeof KnowledgeBaseView>;

/** An agent's knowledge bases, and the index names its SEARCH and ASK see (their union). */
export const AgentKnowledgeView = z.object({
  agent_id: z.string(),
  knowledge_bases: z.array(KnowledgeBaseView),
  index_names: z.array(z.string()).describe('the union of its knowledge bases’ index names, sorted'),
});
