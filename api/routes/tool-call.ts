import { z } from 'zod';
import { defineRoute, errorResponse, successEnvelope } from '../http/route.js';
import { invokeTool } from '../../shared/tools/invoke.js';
import { publishedToolCall } from '../../shared/tools/published.js';

// Strict like every tool's arguments: `{tool, args}` (a typo) is refused, not run with no arguments.
const ToolCallBody = z.strictObject({
  tool: z.string().min(1).max(100).describe('A registered tool, e.g. action_review'),
  arguments: z
    .record(z.string(), z.unknown())
    .default({})
    .describe("The tool's input; for action_review `action` picks the operation"),
});

const published = publishedToolCall();

export const toolCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/tool_call',
    operationId: 'callTool',
    summary: 'Call a platform tool (agents with their gsk_ token; people where the tool allows)',
    tags: ['tools'],
    access: { kind: 'authenticated', permission: null },
    // The route takes any tool name and arguments object; invokeTool checks the caller's access, then the
    // arguments against the tool's strict schema (an unknown argument is a 400 naming the known ones).
    body: ToolCallBody,
    publishedBody: published.body,
    responses: {
      200: {
        description:
          'The tool’s result (shared/tools/result-contract.ts): a JSON object with snake_case keys (the document-index tool keeps the spec’s `Success`, `TotalCount`, …); a refusal is never a result but an error envelope',
        schema: successEnvelope(published.answer),
      },
      400: errorResponse(
        'Invalid arguments (`bad_request`): `payload.fields` names each failing one; an unknown argument has `code` `unrecognized_keys` and `known` (the arguments its tool or action takes)',
      ),
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
