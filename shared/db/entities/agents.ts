import { column, table, type Row } from './table.js';

/** Who may use an agent: everyone in the tenant when both lists are empty. */
export interface AgentAccess {
  roles: string[];
  users: string[];
}

/** An agent callers can hold threads with: built-in (Eve, Adam), created over the API, or managed (from a source). */
export const AgentRowEntity = table('AgentRow', 'agents', {
  id: column.string().primary(),
  tenant: column.string(),
  name: column.string(),
  description: column.text().nullable(),
  instructions: column.text(),
  toolGroups: column.json<string[]>(),
  access: column.json<AgentAccess>(),
  source: column.string<'builtin' | 'api' | 'managed'>(),
  isEditable: column.boolean(),
  /** The LLM provider the agent asks (a managed manifest's `llm_provider`); null: the tenant's default. */
  llmProvider: column.string().nullable(),
  /** Default skill groups (a managed manifest's `default_skill_groups`). */
  skillGroups: column.json<string[]>().with({ default: '[]' }),
  createdBy: column.string(),
  createdAt: column.date(),
  updatedAt: column.date(),
});
export type AgentRow = Row<typeof AgentRowEntity>;
