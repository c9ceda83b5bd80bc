import { z } from 'zod';
import { defineRoute, successEnvelope } from '../http/route.js';
import { invokeTool } from '../tools/invoke.js';

const ToolCallBody = z.object({
  tool: z.string().min(1).max(100).describe('A registered tool, e.g. action_review'),
  arguments: z
    .record(z.string(), z.unknown())
    .default({})
    .describe("The tool's input; for action_review `action` picks the operation"),
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
      200: {
        description:
          'The tool’s result (api/tools/result-contract.ts): a JSON object with snake_case keys (the document-index tool keeps the spec’s `Success`, `TotalCount`, …); a refusal is never a result but an error envelope',
        schema: successEnvelope(z.object({ tool: z.string(), result: z.unknown() })),
      },
      403: { description: 'The tool does not accept this kind of caller, or a permission is missing' },
      404: { description: 'Unknown tool, or a subject the caller may not see' },
      409: {
        description:
          'A conflict the tool names (e.g. _document_index: existing name, managed_repo_guard, rechunk_in_progress)',
      },
      502: { description: 'A language-model or embedding provider failure (error_type llm_error)' },
      501: {
        description:
          'A tool of a reserved tool group that is not built yet (payload.reason tool_not_built), or a feature this deployment has not set up (enhancement_action START_CODE_AGENT: payload.code CODING_AGENT_UNSUPPORTED, payload.missing)',
      },
    },
    handler: async ({ body, principal, deps, em, requestId }) => {
      const result = await invokeTool(body.tool, body.arguments, principal, { deps, em, requestId });
      return { success: true, data: { tool: body.tool, result } };
    },
  }),
];
