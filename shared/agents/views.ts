/** The wire shape of an agent (`Agent` in the OpenAPI document) and its mapping from the stored row. */
import { z } from 'zod';
import type { AgentRow } from '../db/entities/agents.js';
import { toIso } from '../dates.js';

export const AgentView = z
  .object({
    agent_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    instructions: z.string(),
    tool_groups: z.array(z.string()),
    access: z.object({ roles: z.array(z.string()), users: z.array(z.string()) }),
    source: z.enum(['builtin', 'api', 'managed']),
    is_editable: z.boolean(),
    llm_provider: z
      .string()
      .nullable()
      .describe("The LLM provider the agent asks (managed agents: the manifest's llm_provider); null: the default"),
    skill_groups: z.array(z.string()).describe("Default skill groups (managed agents: the manifest's)"),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Agent' });

export const agentView = (a: AgentRow) => ({
  agent_id: a.id,
  name: a.name,
  description: a.description,
  instructions: a.instructions,
  tool_groups: a.toolGroups,
  access: a.access,
  source: a.source,
  is_editable: a.isEditable,
  llm_provider: a.llmProvider ?? null,
  skill_groups: a.skillGroups ?? [],
  created_by: a.createdBy,
  created_at: toIso(a.createdAt),
  updated_at: toIso(a.updatedAt),
});
