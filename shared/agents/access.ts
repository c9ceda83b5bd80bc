import type { Principal } from '../auth/principal.js';
import type { AgentAccess } from '../db/entities/agents.js';

/**
 * Whether a caller may use an agent: open agents (no roles, no users listed) are for everyone in the
 * tenant; otherwise one of the caller's roles or the caller's id must be listed. The system identity
 * may use any agent of its tenant.
 */
export function canUseAgent(
  principal: Pick<Principal, 'kind' | 'id' | 'roles' | 'tenant'>,
  agent: { tenant: string; access: AgentAccess },
): boolean {
  if (agent.tenant !== principal.tenant) return false;
  if (principal.kind === 'system') return true;
  const { roles, users } = agent.access;
  if (roles.length === 0 && users.length === 0) return true;
  return users.includes(principal.id) || principal.roles.some((r) => roles.includes(r));
}
