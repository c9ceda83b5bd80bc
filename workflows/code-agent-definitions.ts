// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { defineQuery } from '@temporalio/workflow';
import type { CodeAgentLiveStatus } from '../shared/code-agent/runs.js';

/** The code-agent run workflow's id, input and query. The API and the Action Review executor start it. */

/** One workflow per run, whatever the adapter; the run id is the resource id. */
export const codeAgentWorkflowId = (runId: string) => `code-agent/${runId}`;

export interface CodeAgentRunInput {
  runId: string;
  tenant: string;
  adapter: 'cloud' | 'local';
  /** Local: the runner is killed after this; cloud: the run is given up `expired` after this. */
  timeoutSeconds: number;
  /** Cloud: the first poll delay; it doubles while the remote status stays, up to 8 times this. */
  pollSeconds: number;
}

/** Status, remote status and PR URL while the run goes on. */
export const codeAgentStatusQuery = defineQuery<CodeAgentLiveStatus>('codeAgentStatus');

/** Type of the non-retryable failure an activity throws when the run can never succeed (refused create, bad connection). */
export const CODE_AGENT_REFUSED = 'CODE_AGENT_REFUSED';
/** Type of the non-retryable failure the local runner throws when it finds its run already started (a re-attempt). */
export const CODE_AGENT_ALREADY_STARTED = 'CODE_AGENT_ALREADY_STARTED';
