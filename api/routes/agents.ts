import { z } from 'zod';
import {
  createAgent,
  deleteAgent,
  getVisibleAgent,
  listVisibleAgents,
  updateAgent,
} from '../../shared/agents/registry.js';
import { TOOL_GROUP_NAMES } from '../../shared/agents/tool-groups.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { AgentView, agentView } from '../../shared/agents/views.js';

const AccessSchema = z
  .object({
    roles: z.array(z.string().min(1).max(100)).max(100).optional(),
    users: z.array(z.string().min(1).max(200)).max(1000).optional(),
  })
  .describe('Who may use the agent; both lists empty means everyone in the tenant');

const Name = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[\p{L}\p{N} _.-]+$/u, 'letters, digits, spaces, "_", "." and "-"');
const CreateBody = z.object({
  name: Name,
  instructions: z.string().min(1).max(20_000),
  description: z.string().max(2_000).nullable().optional(),
  tool_groups: z
    .array(z.enum(TOOL_GROUP_NAMES, { error: `unknown tool group; known groups: ${TOOL_GROUP_NAMES.join(', ')}` }))
    .max(50)
    .optional()
    .describe('Tool groups (each maps to its tools; see the architecture doc); an unknown name is refused with 400'),
  access: AccessSchema.optional(),
});
const AgentId = z.object({ agent_id: z.string().min(1).max(200) });

export const agentRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/agents',
    operationId: 'listAgents',
    summary: 'Agents the caller may use (agent managers see every agent of the tenant)',
    tags: ['agents'],
    access: { kind: 'authenticated', permission: null },
    responses: {
      200: { description: 'Agents by name', schema: successEnvelope(z.object({ agents: z.array(AgentView) })) },
    },
    handler: async ({ em, principal }) => ({
      success: true,
      data: { agents: (await listVisibleAgents(em, principal)).map(agentView) },
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/agents',
    operationId: 'createAgent',
    summary: 'Create an agent',
    tags: ['agents'],
    access: { kind: 'authenticated', permission: 'manage_agents' },
    body: CreateBody,
    successStatus: 201,
    responses: {
      201: { description: 'Created', schema: successEnvelope(AgentView) },
      409: { description: '`AGENT_NAME_TAKEN`' },
    },
    handler: async ({ em, principal, body }) => ({
      success: true,
      data: agentView(await createAgent(em, principal, { ...body, toolGroups: body.tool_groups })),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/agents/:agent_id',
    operationId: 'getAgent',
    summary: 'One agent (404 when the caller may not see it)',
    tags: ['agents'],
    access: { kind: 'authenticated', permission: null },
    params: AgentId,
    responses: {
      200: { description: 'The agent', schema: successEnvelope(AgentView) },
      404: { description: 'Unknown or hidden' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: agentView(await getVisibleAgent(em, principal, params.agent_id)),
    }),
  }),
  defineRoute({
    method: 'patch',
    path: '/api/agents/:agent_id',
    operationId: 'updateAgent',
    summary: 'Change an agent (managed agents are not editable; built-ins keep their names)',
    tags: ['agents'],
    access: { kind: 'authenticated', permission: 'manage_agents' },
    params: AgentId,
    body: CreateBody.partial(),
    responses: {
      200: { description: 'Updated', schema: successEnvelope(AgentView) },
      409: { description: '`AGENT_NOT_EDITABLE`, `BUILT_IN_AGENT`, `AGENT_NAME_TAKEN`' },
    },
    handler: async ({ em, principal, params, body }) => ({
      success: true,
      data: agentView(await updateAgent(em, principal, params.agent_id, { ...body, toolGroups: body.tool_groups })),
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/agents/:agent_id',
    operationId: 'deleteAgent',
    summary: 'Delete an agent (not built-in or managed ones)',
    tags: ['agents'],
    access: { kind: 'authenticated', permission: 'manage_agents' },
    params: AgentId,
    responses: {
      200: { description: 'Deleted', schema: successEnvelope(AgentView) },
      409: { description: '`BUILT_IN_AGENT`, `AGENT_NOT_EDITABLE`' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: agentView(await deleteAgent(em, principal, params.agent_id)),
    }),
  }),
];
