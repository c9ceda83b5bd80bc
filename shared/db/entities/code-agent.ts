import { BigIntType, EntitySchema } from '@mikro-orm/core';
import type { CodeAgentRunStatus, CodeAgentStep } from '../../code-agent/runs.js';

/** One code-agent run (workflow `code-agent/<run_id>`): cloud (remote run followed by polling) or the local runner. */
export interface CodeAgentRunRow {
  runId: string;
  tenant: string;
  adapter: 'cloud' | 'local' | 'agent_cli';
  status: CodeAgentRunStatus;
  prompt: string;
  ticketKey: string | null;
  connectionName: string | null;
  targetRepoUrl: string | null;
  targetBaseRef: string;
  autoCreatePr: boolean;
  timeoutSeconds: number;
  remoteAgentId: string | null;
  remoteRunId: string | null;
  remoteStatus: string | null;
  prUrl: string | null;
  branch: string | null;
  summary: string | null;
  exitCode: number | null;
  error: string | null;
  steps: CodeAgentStep[];
  output: string;
  outputBytes: number;
  outputTruncated: boolean;
  workerHost: string | null;
  processId: number | null;
  requestedBy: string;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
  /** agent_cli: the per-run worktree (`<worktree_root>/<run_id>`), removed when the run ends. */
  worktreePath: string | null;
  /** agent_cli: the `api_key` connection whose token clones, pushes and opens the pull request. */
  gitConnectionName: string | null;
  /** agent_cli: `pull_request` (branch pushed, PR opened) or `no_changes` (nothing to commit, no PR). */
  outcome: 'pull_request' | 'no_changes' | null;
}

export const CodeAgentRunEntity = new EntitySchema<CodeAgentRunRow>({
  name: 'CodeAgentRunRow',
  tableName: 'code_agent_runs',
  properties: {
    runId: { type: 'string', primary: true },
    tenant: { type: 'string' },
    adapter: { type: 'string' },
    status: { type: 'string' },
    prompt: { type: 'text' },
    ticketKey: { type: 'string', nullable: true },
    connectionName: { type: 'string', nullable: true },
    targetRepoUrl: { type: 'text', nullable: true },
    targetBaseRef: { type: 'string' },
    autoCreatePr: { type: 'boolean' },
    timeoutSeconds: { type: 'integer' },
    remoteAgentId: { type: 'string', nullable: true },
    remoteRunId: { type: 'string', nullable: true },
    remoteStatus: { type: 'string', nullable: true },
    prUrl: { type: 'text', nullable: true },
    branch: { type: 'string', nullable: true },
    summary: { type: 'text', nullable: true },
    exitCode: { type: 'integer', nullable: true },
    error: { type: 'text', nullable: true },
    steps: { type: 'json' },
    output: { type: 'text' },
    outputBytes: { type: new BigIntType('number') },
    outputTruncated: { type: 'boolean' },
    workerHost: { type: 'string', nullable: true },
    processId: { type: 'integer', nullable: true },
    requestedBy: { type: 'string' },
    createdAt: { type: 'Date' },
    startedAt: { type: 'Date', nullable: true },
    finishedAt: { type: 'Date', nullable: true },
    updatedAt: { type: 'Date' },
    worktreePath: { type: 'text', nullable: true },
    gitConnectionName: { type: 'string', nullable: true },
    outcome: { type: 'string', nullable: true },
  },
});
