import { z } from 'zod';
import { resolveDefaultAgent } from '../../../shared/agents/default-agent.js';
import { defaultAgentSettings } from '../../../shared/agents/gateway-settings.js';
import { listUsableAgents } from '../../../shared/agents/registry.js';
import { defineMcpAction, type McpActionContext } from './registry.js';

export const listAgentsAction = defineMcpAction({
  name: 'list_agents',
  versions: ['v1', 'v2'],
  description: 'The agents you may hold threads with, and which one is your default.',
  params: z.object({}),
  handler: async ({ em, principal, deps }) => {
    const agents = await listUsableAgents(em, principal);
    const resolved = resolveDefaultAgent(agents, await defaultAgentSettings(em, deps.config, principal.tenant));
    return {
      agents: agents.map((a) => ({
        agent_id: a.id,
        name: a.name,
        description: a.description,
        is_default: resolved.ok && resolved.agent.id === a.id,
      })),
      default_agent: resolved.ok
        ? { agent_id: resolved.agent.id, name: resolved.agent.name, reason: resolved.reason }
        : null,
      ...(resolved.ok ? {} : { default_agent_refusal: { code: resolved.code, message: resolved.message } }),
    };
  },
});

/** The default-agent part of `status`: the caller's resolved default, or why there is none. */
export async function defaultAgentView({ em, principal, deps }: McpActionContext<unknown>) {
  const resolved = resolveDefaultAgent(
    await listUsableAgents(em, principal),
    await defaultAgentSettings(em, deps.config, principal.tenant),
  );
  return resolved.ok
    ? { agent_id: resolved.agent.id, name: resolved.agent.name, reason: resolved.reason }
    : { agent_id: null, refusal: { code: resolved.code, message: resolved.message } };
}
