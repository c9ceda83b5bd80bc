/** How the gateway picks the agent for a thread when the caller names none (spec, Gateway settings). */
import { AgentCodes } from './error-codes.js';
export type UnavailablePolicy = 'require_selection' | 'first_available';

export interface DefaultAgentSettings {
  /** Gateway setting `default_agent_id` (null/undefined when cleared). */
  settingAgentId?: string | null;
  /** Deployment setting `PLATFORM_MCP_DEFAULT_AGENT_ID`. */
  envAgentId?: string | null;
  settingPolicy?: UnavailablePolicy | null;
  envPolicy?: UnavailablePolicy | null;
}

export interface NamedAgent {
  id: string;
  name: string;
}

export type DefaultAgentResult<A extends NamedAgent> =
  | { ok: true; agent: A; reason: 'configured' | 'eve' | 'adam' | 'first_alphabetical' }
  | { ok: false; code: 'default_agent_unavailable' | 'no_accessible_agent'; message: string };

/**
 * The configured default (setting over env) when the caller may use it; otherwise, per the policy,
 * a refusal asking for a selection, or the per-caller chain: Eve, else Adam, else the first
 * accessible agent alphabetically. A caller with no accessible agent is refused.
 */
export function resolveDefaultAgent<A extends NamedAgent>(
  accessible: readonly A[],
  settings: DefaultAgentSettings,
): DefaultAgentResult<A> {
  const configured = settings.settingAgentId || settings.envAgentId || null;
  if (configured) {
    const agent = accessible.find((a) => a.id === configured);
    if (agent) return { ok: true, agent, reason: 'configured' };
    const policy = settings.settingPolicy ?? settings.envPolicy ?? 'require_selection';
    if (policy === 'require_selection') {
      return {
        ok: false,
        code: AgentCodes.default_agent_unavailable,
        message: `The configured default agent is not available to you; choose one with agent_id (list_agents shows yours).`,
      };
    }
  }
  const byName = (name: string) => accessible.find((a) => a.name.toLowerCase() === name);
  const eve = byName('eve');
  if (eve) return { ok: true, agent: eve, reason: 'eve' };
  const adam = byName('adam');
  if (adam) return { ok: true, agent: adam, reason: 'adam' };
  const first = [...accessible].sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id))[0];
  if (first) return { ok: true, agent: first, reason: 'first_alphabetical' };
  return {
    ok: false,
    code: AgentCodes.no_accessible_agent,
    message: 'No agent is available to you; ask an administrator for access to one.',
  };
}
