import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import type { Permission } from '../auth/rbac.js';
import { groupOfTool, toolsOfGroups } from '../agents/tool-groups.js';
import { ForbiddenError, NotFoundError, PlatformError } from '../errors.js';
import { parseInput } from '../validation.js';
import type { AppDeps } from '../app-deps.js';
import { toolRegistry } from './index.js';
import { ensureBuiltInAgents } from '../agents/registry.js';
import { AgentRowEntity } from '../db/entities/index.js';

/**
 * An agent registered in the agent registry may call only the tools of its tool groups, whichever
 * path it calls from (its own turns or a `gsk_` token on `POST /api/tool_call`). Bots the registry
 * does not know (external sandbox runs) are limited by each tool's accepted principal kinds.
 */
async function assertAgentMayUse(em: EntityManager, principal: Principal, toolName: string): Promise<void> {
  await ensureBuiltInAgents(em, principal.tenant);
  const agent = await em.findOne(AgentRowEntity, { id: principal.botId ?? principal.id, tenant: principal.tenant });
  if (agent && !toolsOfGroups(agent.toolGroups).has(toolName)) {
    const group = groupOfTool(toolName);
    throw new ForbiddenError(
      `Agent ${agent.name} is not given the ${toolName} tool; an administrator can add its group${group ? ` ${group}` : ''} to the agent's tool groups.`,
      {
        reason: 'tool_not_in_agent_groups',
        tool: toolName,
        tool_group: group ?? null,
        tool_groups: agent.toolGroups,
      },
    );
  }
}

/** Non-agent callers need the permission; agents act within their token's bot and thread. */
function requirePermission(toolName: string, principal: Principal, permission: Permission): void {
  if (principal.kind === 'agent' || principal.permissions.has(permission)) return;
  throw new ForbiddenError(
    `Permission denied: this call of the ${toolName} tool needs the "${permission}" permission. Ask an administrator to grant you a role that includes it.`,
    {
      required_permission: permission,
    },
  );
}

/**
 * Calls a registered tool as `principal`: who may call it, its permission, its input schema, then
 * its handler. The one path for `POST /api/tool_call` and for agents during thread turns.
 */
export async function invokeTool(
  name: string,
  args: unknown,
  principal: Principal,
  ctx: { deps: AppDeps; em: EntityManager; requestId: string; idempotencyKey?: string },
): Promise<unknown> {
  const tool = toolRegistry.get(name);
  if (!tool) {
    const group = groupOfTool(name);
    if (group)
      throw new PlatformError(
        'not_available_here',
        `The ${name} tool (group ${group}) is not built in this release yet.`,
        { reason: 'tool_not_built', tool: name, tool_group: group },
      );
    throw new NotFoundError(`No tool named "${name}".`, { available_tools: toolRegistry.names() });
  }
  if (principal.kind === 'agent') await assertAgentMayUse(ctx.em, principal, tool.name);
  if (!tool.principalKinds.includes(principal.kind)) {
    throw new ForbiddenError(
      `The ${tool.name} tool is limited to ${tool.principalKinds.join(' or ')} callers; you are calling as ${principal.kind}.`,
      {
        required_principal_kinds: tool.principalKinds,
        principal_kind: principal.kind,
      },
    );
  }
  if (typeof tool.permission === 'string') requirePermission(tool.name, principal, tool.permission);
  const input = parseInput(tool.input, args, ['body', 'arguments'], `arguments for ${tool.name}`);
  if (typeof tool.permission === 'function') requirePermission(tool.name, principal, tool.permission(input));
  return tool.handler({
    input,
    principal,
    deps: ctx.deps,
    em: ctx.em,
    requestId: ctx.requestId,
    idempotencyKey: ctx.idempotencyKey,
  });
}
