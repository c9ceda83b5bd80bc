import { z } from 'zod';
import { BadRequestError, ForbiddenError, NotFoundError } from '../../shared/errors.js';
import { defineRoute } from '../http/route.js';
import { toolRegistry } from '../tools/index.js';

const ToolCallBody = z.object({
  tool: z.string().min(1).max(100).describe('A registered tool, e.g. action_review'),
  arguments: z.record(z.string(), z.unknown()).default({}).describe("The tool's input; for action_review `action` picks the operation"),
});

export const toolCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/tool_call',
    operationId: 'callTool',
    summary: 'Call a platform tool (agents with their gsk_ token; people where the tool allows)',
    tags: ['tools'],
    access: { kind: 'authenticated' },
    body: ToolCallBody,
    responses: {
      200: { description: 'The tool’s result', schema: z.object({ success: z.literal(true), tool: z.string(), result: z.unknown() }) },
      403: { description: 'The tool does not accept this kind of caller, or a permission is missing' },
      404: { description: 'Unknown tool, or a subject the caller may not see' },
    },
    handler: async ({ body, principal, deps, em, requestId }) => {
      const tool = toolRegistry.get(body.tool);
      if (!tool) throw new NotFoundError(`No tool named "${body.tool}".`, { available_tools: toolRegistry.names() });
      if (!tool.principalKinds.includes(principal.kind)) {
        throw new ForbiddenError(`The ${tool.name} tool is limited to ${tool.principalKinds.join(' or ')} callers; you are calling as ${principal.kind}.`, {
          required_principal_kinds: tool.principalKinds,
          principal_kind: principal.kind,
        });
      }
      if (tool.permission && principal.kind !== 'agent' && !principal.permissions.has(tool.permission)) {
        throw new ForbiddenError(`Permission denied: the ${tool.name} tool needs the "${tool.permission}" permission. Ask an administrator to grant you a role that includes it.`, {
          required_permission: tool.permission,
        });
      }
      const parsed = tool.input.safeParse(body.arguments);
      if (!parsed.success) {
        throw new BadRequestError(`Invalid arguments for ${tool.name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`, {
          fields: parsed.error.issues.map((i) => ({ field: ['body', 'arguments', ...i.path.map(String)].join('.'), message: i.message, code: i.code })),
        });
      }
      const result = await tool.handler({ input: parsed.data, principal, deps, em, requestId });
      return { success: true, tool: tool.name, result };
    },
  }),
];
