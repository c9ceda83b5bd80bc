import { z } from 'zod';
import {
  agentKnowledge,
  assignKnowledgeBases,
  createKnowledgeBase,
  deleteKnowledgeBase,
  getKnowledgeBase,
  KNOWLEDGE_BASE_ID,
  listKnowledgeBases,
  updateKnowledgeBase,
} from '../../shared/document-index/knowledge-bases.js';
import { AgentKnowledgeView, KnowledgeBaseView } from '../../shared/document-index/views.js';
import { defineRoute, successEnvelope } from '../http/route.js';

/**
 * Knowledge bases: the spec names them (a bundle of index names assigned to agents) but shows no
 * route, so these are ours, published in the OpenAPI document. Reads need a signed-in caller of the
 * tenant; writes and assignments need `manage_agents`, the permission document-index writes need.
 */

const KbId = z.string().regex(KNOWLEDGE_BASE_ID, 'a knowledge-base id: "kb_" and 32 lowercase hex characters');
const Name = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[\p{L}\p{N} _.:-]+$/u, 'letters, digits, spaces, "_", ".", ":" and "-"');
const IndexNames = z
  .array(z.string().min(1).max(200))
  .max(200)
  .describe('Document-index names (each an existing index of the tenant; else 400 `unknown_index_names`)');
const kbParams = z.object({ knowledge_base_id: KbId });
const agentParams = z.object({ agent_id: z.string().min(1).max(200) });

const read = { tags: ['knowledge-bases'], access: { kind: 'authenticated' as const, permission: null } };
const write = {
  tags: ['knowledge-bases'],
  access: { kind: 'authenticated' as const, permission: 'manage_agents' as const },
};
const FORBIDDEN = { description: 'Without `manage_agents` (`forbidden`)' };
const UNKNOWN_KB = { description: 'No such knowledge base in this tenant' };
const TAKEN = { description: '`knowledge_base_name_taken`: the tenant has a knowledge base of this name' };
const BAD_INDEX = {
  description: '`unknown_index_names`: a name that is no document index of the tenant; nothing written',
};

export const knowledgeBaseRoutes = [
  defineRoute({
    ...read,
    method: 'get',
    path: '/api/knowledge-bases',
    operationId: 'listKnowledgeBases',
    summary: "The tenant's knowledge bases by name, with their index names and agents",
    responses: {
      200: {
        description: 'Knowledge bases',
        schema: successEnvelope(z.object({ knowledge_bases: z.array(KnowledgeBaseView) })),
      },
    },
    handler: async ({ em, principal }) => ({
      success: true,
      data: { knowledge_bases: await listKnowledgeBases(em, principal.tenant) },
    }),
  }),
  defineRoute({
    ...write,
    method: 'post',
    path: '/api/knowledge-bases',
    operationId: 'createKnowledgeBase',
    summary: 'Create a knowledge base: a named bundle of document-index names',
    body: z.object({ name: Name, description: z.string().max(4000).optional(), index_names: IndexNames }).strict(),
    bodyKind: 'config',
    successStatus: 201,
    responses: {
      201: { description: 'Created', schema: successEnvelope(KnowledgeBaseView) },
      400: BAD_INDEX,
      403: FORBIDDEN,
      409: TAKEN,
    },
    handler: async ({ em, principal, body }) => ({
      success: true,
      data: await createKnowledgeBase(em, principal, body),
    }),
  }),
  defineRoute({
    ...read,
    method: 'get',
    path: '/api/knowledge-bases/:knowledge_base_id',
    operationId: 'getKnowledgeBase',
    summary: 'One knowledge base of the tenant',
    params: kbParams,
    responses: {
      200: { description: 'The knowledge base', schema: successEnvelope(KnowledgeBaseView) },
      404: UNKNOWN_KB,
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await getKnowledgeBase(em, principal.tenant, params.knowledge_base_id),
    }),
  }),
  defineRoute({
    ...write,
    method: 'patch',
    path: '/api/knowledge-bases/:knowledge_base_id',
    operationId: 'updateKnowledgeBase',
    summary: "Rename, describe or rebundle a knowledge base (an index taken out stops answering its agents' next call)",
    params: kbParams,
    body: z
      .object({
        name: Name.optional(),
        description: z.string().max(4000).optional(),
        index_names: IndexNames.optional(),
      })
      .strict(),
    bodyKind: 'config',
    responses: {
      200: { description: 'Updated', schema: successEnvelope(KnowledgeBaseView) },
      400: BAD_INDEX,
      403: FORBIDDEN,
      404: UNKNOWN_KB,
      409: TAKEN,
    },
    handler: async ({ em, principal, params, body }) => ({
      success: true,
      data: await updateKnowledgeBase(em, principal, params.knowledge_base_id, body),
    }),
  }),
  defineRoute({
    ...write,
    method: 'delete',
    path: '/api/knowledge-bases/:knowledge_base_id',
    operationId: 'deleteKnowledgeBase',
    summary: 'Delete a knowledge base and its assignments (the indexes stay)',
    params: kbParams,
    responses: {
      200: { description: 'Deleted; the knowledge base as it was', schema: successEnvelope(KnowledgeBaseView) },
      403: FORBIDDEN,
      404: UNKNOWN_KB,
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await deleteKnowledgeBase(em, principal.tenant, params.knowledge_base_id),
    }),
  }),
  defineRoute({
    ...read,
    method: 'get',
    path: '/api/agents/:agent_id/knowledge-bases',
    operationId: 'getAgentKnowledgeBases',
    summary: "An agent's knowledge bases and the index names its _document_index SEARCH and ASK see",
    params: agentParams,
    responses: {
      200: { description: 'Its knowledge bases', schema: successEnvelope(AgentKnowledgeView) },
      404: { description: 'No such agent in this tenant' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await agentKnowledge(em, principal.tenant, params.agent_id),
    }),
  }),
  defineRoute({
    ...write,
    method: 'put',
    path: '/api/agents/:agent_id/knowledge-bases',
    operationId: 'assignAgentKnowledgeBases',
    summary: "Set an agent's knowledge bases (replaces the list; an empty list leaves it no index to search)",
    params: agentParams,
    body: z.object({ knowledge_base_ids: z.array(KbId).max(100) }).strict(),
    bodyKind: 'config',
    responses: {
      200: { description: 'Its knowledge bases now', schema: successEnvelope(AgentKnowledgeView) },
      400: {
        description: '`unknown_knowledge_bases`: an id that is no knowledge base of the tenant; nothing assigned',
      },
      403: FORBIDDEN,
      404: { description: 'No such agent in this tenant' },
    },
    handler: async ({ em, principal, params, body }) => ({
      success: true,
      data: await assignKnowledgeBases(em, principal, params.agent_id, body.knowledge_base_ids),
    }),
  }),
];
