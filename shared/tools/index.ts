import { actionReviewTool } from './action-review.js';
import { agentFilesTool } from './agent-files.js';
import { crmConnectorTool } from './crm-connector.js';
import { describeEtlJobTool, getEtlRunTool, listEtlJobsTool, runEtlJobTool } from './etl.js';
import { documentIndexTool } from './document-index.js';
import { enhancementActionTool } from './enhancement.js';
import { blueprintsTool } from './blueprints.js';
import { missionTool } from './mission.js';
import { ToolRegistry, type AnyTool } from './registry.js';

/** Every tool the platform offers; `POST /api/tool_call` and agent turns (also over the MCP gateway) dispatch through it. */
export const toolRegistry = new ToolRegistry([
  actionReviewTool as AnyTool,
  agentFilesTool as AnyTool,
  crmConnectorTool as AnyTool,
  listEtlJobsTool as AnyTool,
  describeEtlJobTool as AnyTool,
  runEtlJobTool as AnyTool,
  getEtlRunTool as AnyTool,
  documentIndexTool as AnyTool,
  enhancementActionTool as AnyTool,
  blueprintsTool as AnyTool,
  missionTool as AnyTool,
]);
