import { capturedOutputColumns, processGroupColumns, runTimeColumns } from './run-columns.js';
import { column, table, type Row } from './table.js';
import type { CodeAgentRunStatus, CodeAgentStep } from '../../code-agent/runs.js';

/** One code-agent run (workflow `code-agent/<run_id>`): cloud (remote run followed by polling) or the local runner. */
export const CodeAgentRunEntity = table('CodeAgentRunRow', 'code_agent_runs', {
  runId: column.string().primary(),
  tenant: column.string(),
  adapter: column.string<'cloud' | 'local' | 'agent_cli'>(),
  status: column.string<CodeAgentRunStatus>(),
  prompt: column.text(),
  ticketKey: column.string().nullable(),
  connectionName: column.string().nullable(),
  targetRepoUrl: column.text().nullable(),
  targetBaseRef: column.string(),
  autoCreatePr: column.boolean(),
  timeoutSeconds: column.integer(),
  remoteAgentId: column.string().nullable(),
  remoteRunId: column.string().nullable(),
  remoteStatus: column.string().nullable(),
  prUrl: column.text().nullable(),
  branch: column.string().nullable(),
  summary: column.text().nullable(),
  exitCode: column.integer().nullable(),
  error: column.text().nullable(),
  steps: column.json<CodeAgentStep[]>(),
  ...capturedOutputColumns(),
  ...processGroupColumns(),
  ...runTimeColumns(),
  /** agent_cli: the per-run worktree (`<worktree_root>/<run_id>`), removed when the run ends. */
  worktreePath: column.text().nullable(),
  /** agent_cli: the `api_key` connection whose token clones, pushes and opens the pull request. */
  gitConnectionName: column.string().nullable(),
  /** agent_cli: `pull_request` (branch pushed, PR opened) or `no_changes` (nothing to commit, no PR). */
  outcome: column.string<'pull_request' | 'no_changes'>().nullable(),
});
export type CodeAgentRunRow = Row<typeof CodeAgentRunEntity>;
