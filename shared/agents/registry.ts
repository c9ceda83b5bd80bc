import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { AgentRowEntity, type AgentAccess, type AgentRow } from '../db/entities/agents.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { canUseAgent } from './access.js';
import { sql } from '../db/sql.js';
import { AgentCodes } from './error-codes.js';
import { onProcessReset } from '../process-state.js';

/** The agents every tenant has. Their access and instructions may be changed; they cannot be deleted. */
/** Built-in agents' tool groups: no CRM writes by default (an administrator adds crm_connector_tools). */
export const BUILT_IN_AGENTS = [
  {
    key: 'eve',
    name: 'Eve',
    description: 'General data agent: explores data systems, answers questions, proposes governed actions.',
    instructions:
      'You are Eve, a data agent on the platform. Answer precisely and say what you did. When an action would change a customer system, raise an Action Review proposal with the action_review tool instead of acting, and tell the caller that a person must approve it.',
    toolGroups: ['action_review', 'agent_files', 'document_index_tools'],
  },
  {
    key: 'adam',
    name: 'Adam',
    description: 'Engineering agent: code, pipelines and repository work.',
    instructions:
      'You are Adam, an engineering agent on the platform. Be concise and concrete. Changes to shared systems go through Action Review proposals (action_review tool).',
    toolGroups: ['action_review', 'agent_files', 'etl_tools', 'enhancement_tools'],
  },
] as const;

const builtInId = (tenant: string, key: string) => (tenant === 'default' ? key : `${key}@${tenant}`);
const seeded = new Set<string>();
onProcessReset('shared/agents/registry.ts#seeded', () => {
  seeded.clear();
});

/** Seeds the built-in agents of a tenant once (idempotent across processes). */
export async function ensureBuiltInAgents(em: EntityManager, tenant: string, now = new Date()): Promise<void> {
  if (seeded.has(tenant)) return;
  for (const agent of BUILT_IN_AGENTS) {
    await sql(
      em,
      `insert into agents (id, tenant, name, description, instructions, tool_groups, access, source, is_editable, created_by, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?::jsonb, '{"roles": [], "users": []}'::jsonb, 'builtin', true, 'system', ?, ?) on conflict do nothing`,
      [
        builtInId(tenant, agent.key),
        tenant,
        agent.name,
        agent.description,
        agent.instructions,
        JSON.stringify(agent.toolGroups),
        now,
        now,
      ],
    );
  }
  seeded.add(tenant);
}

/**
 * The name an agent is known by besides its id: a built-in's key (`eve`, in every tenant), an
 * imported agent's manifest `agent_id` (its id is `msa_<source hex>_<agent_id>`, so two sources never clash).
 */
export function aliasOf(agent: Pick<AgentRow, 'id' | 'source'>): string | null {
  if (agent.source === 'builtin') return agent.id.split('@')[0]!;
  if (agent.source === 'managed') return /^msa_[0-9a-f]+_(.+)$/.exec(agent.id)?.[1] ?? null;
  return null;
}

/** The agents `ref` names: the one with that id, else those whose alias it is (two or more: ambiguous). */
export function agentsNamed<A extends Pick<AgentRow, 'id' | 'source'>>(agents: readonly A[], ref: string): A[] {
  const exact = agents.find((a) => a.id === ref);
  return exact ? [exact] : agents.filter((a) => aliasOf(a) === ref);
}

/** Agents of the caller's tenant the caller may use (managers of agents see all of the tenant's). */
export async function listVisibleAgents(em: EntityManager, principal: Principal): Promise<AgentRow[]> {
  await ensureBuiltInAgents(em, principal.tenant);
  const rows = await em.find(AgentRowEntity, { tenant: principal.tenant }, { orderBy: { name: 'asc' } });
  return rows.filter((a) => canUseAgent(principal, a) || principal.permissions.has('manage_agents'));
}

/** Agents the caller may hold threads with (access rules only; management rights do not widen this). */
export async function listUsableAgents(em: EntityManager, principal: Principal): Promise<AgentRow[]> {
  await ensureBuiltInAgents(em, principal.tenant);
  const rows = await em.find(AgentRowEntity, { tenant: principal.tenant }, { orderBy: { name: 'asc' } });
  return rows.filter((a) => canUseAgent(principal, a));
}

/** One agent the caller may see; 404 otherwise (never 403 for a hidden subject). */
export async function getVisibleAgent(em: EntityManager, principal: Principal, id: string): Promise<AgentRow> {
  const agent = (await listVisibleAgents(em, principal)).find((a) => a.id === id);
  if (!agent) throw new NotFoundError(`No agent ${id}.`);
  return agent;
}

export interface AgentInput {
  name: string;
  instructions: string;
  description?: string | null;
  toolGroups?: string[];
  access?: Partial<AgentAccess>;
}

export async function createAgent(
  em: EntityManager,
  principal: Principal,
  input: AgentInput,
  now = new Date(),
): Promise<AgentRow> {
  await ensureBuiltInAgents(em, principal.tenant);
  await assertNameFree(em, principal.tenant, input.name);
  const row: AgentRow = {
    id: `agent_${randomBytes(8).toString('hex')}`,
    tenant: principal.tenant,
    name: input.name,
    description: input.description ?? null,
    instructions: input.instructions,
    toolGroups: input.toolGroups ?? [],
    access: { roles: input.access?.roles ?? [], users: input.access?.users ?? [] },
    source: 'api',
    isEditable: true,
    llmProvider: null,
    skillGroups: [],
    createdBy: principal.id,
    createdAt: now,
    updatedAt: now,
  };
  await em.insert(AgentRowEntity, row);
  return row;
}

export async function updateAgent(
  em: EntityManager,
  principal: Principal,
  id: string,
  patch: Partial<AgentInput>,
  now = new Date(),
): Promise<AgentRow> {
  const agent = await getVisibleAgent(em, principal, id);
  if (!agent.isEditable)
    throw new ConflictError(`Agent ${agent.name} is managed by a source and cannot be edited here.`, {
      code: AgentCodes.AGENT_NOT_EDITABLE,
    });
  if (patch.name !== undefined && patch.name.toLowerCase() !== agent.name.toLowerCase()) {
    if (agent.source === 'builtin')
      throw new ConflictError('Built-in agents keep their names.', { code: AgentCodes.BUILT_IN_AGENT });
    await assertNameFree(em, principal.tenant, patch.name);
  }
  const changes: Partial<AgentRow> = { updatedAt: now };
  if (patch.name !== undefined) changes.name = patch.name;
  if (patch.instructions !== undefined) changes.instructions = patch.instructions;
  if (patch.description !== undefined) changes.description = patch.description;
  if (patch.toolGroups !== undefined) changes.toolGroups = patch.toolGroups;
  if (patch.access !== undefined)
    changes.access = {
      roles: patch.access.roles ?? agent.access.roles,
      users: patch.access.users ?? agent.access.users,
    };
  await em.nativeUpdate(AgentRowEntity, { id }, changes);
  return { ...agent, ...changes };
}

export async function deleteAgent(em: EntityManager, principal: Principal, id: string): Promise<AgentRow> {
  const agent = await getVisibleAgent(em, principal, id);
  if (agent.source === 'builtin')
    throw new ConflictError('Built-in agents cannot be deleted; restrict their access instead.', {
      code: AgentCodes.BUILT_IN_AGENT,
    });
  if (!agent.isEditable)
    throw new ConflictError(`Agent ${agent.name} is managed by a source; remove it there.`, {
      code: AgentCodes.AGENT_NOT_EDITABLE,
    });
  await em.nativeDelete(AgentRowEntity, { id });
  return agent;
}

async function assertNameFree(em: EntityManager, tenant: string, name: string): Promise<void> {
  const [clash] = await sql<{ id: string }>(em, 'select id from agents where tenant = ? and lower(name) = lower(?)', [
    tenant,
    name,
  ]);
  if (clash) throw new ConflictError(`An agent named ${name} already exists.`, { code: AgentCodes.AGENT_NAME_TAKEN });
}
