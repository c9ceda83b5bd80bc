// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/** Code-agent run states, steps and the view `enhancement_action` answers (table `code_agent_runs`). */

export const CODE_AGENT_RUN_STATUSES = [
  'queued',
  'creating',
  'running',
  'finished',
  'failed',
  'expired',
  'cancelled',
  'timed_out',
  'interrupted',
] as const;
export type CodeAgentRunStatus = (typeof CODE_AGENT_RUN_STATUSES)[number];
/** A run still in progress; every other status is terminal (same order as the list above). */
const CODE_AGENT_ACTIVE: readonly CodeAgentRunStatus[] = ['queued', 'creating', 'running'];
export const CODE_AGENT_TERMINAL: readonly CodeAgentRunStatus[] = CODE_AGENT_RUN_STATUSES.filter(
  (status) => !CODE_AGENT_ACTIVE.includes(status),
);

/** One step of a run, in order: what happened and when (ISO time). */
export interface CodeAgentStep {
  at: string;
  step: string;
  detail?: string;
}

/** The cloud provider's run status (PROTOCOLS.md: tolerate unknown values) as ours; unknown ones keep it running. */
export function statusOfRemote(remote: string): CodeAgentRunStatus {
  switch (remote.toUpperCase()) {
    case 'CREATING':
      return 'creating';
    case 'FINISHED':
      return 'finished';
    case 'ERROR':
      return 'failed';
    case 'CANCELLED':
      return 'cancelled';
    case 'EXPIRED':
      return 'expired';
    default:
      return 'running';
  }
}

/** What the workflow's query answers while it runs. */
export interface CodeAgentLiveStatus {
  status: CodeAgentRunStatus;
  remote_status: string | null;
  pr_url: string | null;
  /** Polls answered (or failed), counted when the answer arrives: a good poll's count comes with its `status`. */
  polls: number;
  /** The last failed poll (the provider unreachable); cleared by the next good one. */
  last_poll_error: string | null;
  next_poll_seconds: number | null;
  /** A `cancel` signal reached the run (CANCEL_CODE_AGENT); it ends `cancelled` unless it had already ended. */
  cancel_requested?: boolean;
}

export interface CodeAgentRunView {
  run_id: string;
  adapter: 'cloud' | 'local' | 'agent_cli';
  status: CodeAgentRunStatus;
  ticket_key: string | null;
  target_repo_url: string | null;
  target_base_ref: string;
  auto_create_pr: boolean;
  remote_agent_id: string | null;
  remote_run_id: string | null;
  remote_status: string | null;
  pr_url: string | null;
  branch: string | null;
  /** agent_cli: `pull_request` (branch pushed, PR opened) or `no_changes` (nothing committed, no PR). */
  outcome: 'pull_request' | 'no_changes' | null;
  summary: string | null;
  exit_code: number | null;
  error: string | null;
  steps: CodeAgentStep[];
  output: { text: string; bytes_seen: number; truncated: boolean } | null;
  requested_by: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** The workflow's own view while it runs (null once finished or when it could not be asked). */
  live: CodeAgentLiveStatus | null;
}
