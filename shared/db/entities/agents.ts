import { EntitySchema } from '@mikro-orm/core';

/** Who may use an agent: everyone in the tenant when both lists are empty. */
export interface AgentAccess {
  roles: string[];
  users: string[];
}

/** An agent callers can hold threads with: built-in (Eve, Adam), created over the API, or managed (from a source). */
export interface AgentRow {
  id: string;
  tenant: string;
  name: string;
  description: string | null;
  instructions: string;
  toolGroups: string[];
  access: AgentAccess;
  source: 'builtin' | 'api' | 'managed';
  isEditable: boolean;
  /** The LLM provider the agent asks (a managed manifest's `llm_provider`); null: the tenant's default. */
  llmProvider: string | null;
  /** Default skill groups (a managed manifest's `default_skill_groups`). */
  skillGroups: string[];
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export const AgentRowEntity = new EntitySchema<AgentRow>({
  name: 'AgentRow',
  tableName: 'agents',
  properties: {
    id: { type: 'string', primary: true },
    tenant: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'text', nullable: true },
    instructions: { type: 'text' },
    toolGroups: { type: 'json' },
    access: { type: 'json' },
    source: { type: 'string' },
    isEditable: { type: 'boolean' },
    llmProvider: { type: 'string', nullable: true },
    skillGroups: { type: 'json', default: '[]' },
    createdBy: { type: 'string' },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
