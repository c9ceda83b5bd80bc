/**
 * Tool groups: what an agent's `tool_groups` name, each mapped to its tools in this one table.
 * Reserved groups list the tool names the spec gives a later family; an agent may name them now,
 * and calling one of their tools before it is built answers a clear 501. Workflow-safe (pure data).
 */
export const TOOL_GROUPS = {
  action_review: { tools: ['action_review'], description: 'Raise and follow Action Review proposals' },
  agent_files: { tools: ['agent_files'], description: 'Store files for the caller' },
  crm_connector_tools: {
    tools: ['crm_connector'],
    description: 'CRM merge preview, approval and execution; bounded CRM reads and writes',
  },
  etl_tools: {
    tools: ['list_etl_jobs', 'describe_etl_job', 'run_etl_job', 'get_etl_run'],
    description: 'ETL jobs: list, describe, run built jobs, poll runs',
  },
  document_index_tools: { tools: ['_document_index'], description: 'Document indexes: ingest, search, ask, rechunk' },
  enhancement_tools: {
    tools: ['enhancement_action'],
    description: 'Code-agent runs: start (agents through Action Review), follow status and pull request',
  },
  blueprints: {
    tools: ['blueprints'],
    description: 'Blueprints: list, read and recommend mission templates; edit them in work-in-progress sessions',
  },
  missions: { tools: ['mission'], description: 'Missions: start from a blueprint, status, answer questions, steer' },
} as const satisfies Record<string, { tools: readonly string[]; description: string }>;

export type ToolGroupName = keyof typeof TOOL_GROUPS;
export const TOOL_GROUP_NAMES = Object.keys(TOOL_GROUPS) as ToolGroupName[];

export function isToolGroup(name: string): name is ToolGroupName {
  return Object.hasOwn(TOOL_GROUPS, name);
}

/** The tools the named groups give (unknown names give nothing). */
export function toolsOfGroups(groups: readonly string[]): Set<string> {
  const tools = new Set<string>();
  for (const g of groups) if (isToolGroup(g)) for (const t of TOOL_GROUPS[g].tools) tools.add(t);
  return tools;
}

/** The group a tool belongs to, if any. */
export function groupOfTool(tool: string): ToolGroupName | undefined {
  return TOOL_GROUP_NAMES.find((g) => (TOOL_GROUPS[g].tools as readonly string[]).includes(tool));
}
