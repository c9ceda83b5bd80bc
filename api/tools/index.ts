import { actionReviewTool } from './action-review.js';
import { agentFilesTool } from './agent-files.js';
import { ToolRegistry, type AnyTool } from './registry.js';

/** Every tool the platform offers; `POST /api/tool_call` and (later) the MCP gateway dispatch through it. */
export const toolRegistry = new ToolRegistry([
  actionReviewTool as AnyTool,
  agentFilesTool as AnyTool,
]);
