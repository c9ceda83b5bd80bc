import { listAgentsAction } from './agents.js';
import { loginAction, loginStatusAction, logoutAction } from './legacy.js';
import { McpActionCatalog, type AnyMcpAction } from './registry.js';
import {
  roomCreateAction,
  roomJoinAction,
  roomListAction,
  roomReadAction,
  roomSendAction,
  roomWhoAction,
} from './rooms.js';
import { readSkillAction } from './skills.js';
import { helpAction, statusAction } from './status.js';
import {
  askAction,
  startThreadAction,
  threadContinueAction,
  threadCreateAction,
  threadGetAction,
  updateGoalAction,
} from './threads.js';

/**
 * Every action of the MCP gateway's `platform` tool, in one explicit list (as routes are in
 * `api/routes/index.ts` and tools in `shared/tools/index.ts`): an action is part of the gateway when,
 * and only when, it is listed here. Which versions offer it is declared on the action itself.
 */
export const mcpActions: readonly AnyMcpAction[] = [
  statusAction,
  helpAction,
  loginAction,
  loginStatusAction,
  logoutAction,
  listAgentsAction,
  threadCreateAction,
  startThreadAction,
  threadContinueAction,
  threadGetAction,
  updateGoalAction,
  askAction,
  roomListAction,
  roomCreateAction,
  roomJoinAction,
  roomSendAction,
  roomReadAction,
  roomWhoAction,
  readSkillAction,
];

export const mcpActionCatalog = new McpActionCatalog(mcpActions);
