// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CodeAgentLiveStatus } from '../shared/code-agent/runs.js';

/** The code-agent run workflow's id, input and query. The API and the Action Review executor start it. */

/** One workflow per run, whatever the adapter; the run id is the resource id. */
export const codeAgentWorkflowId = (runId: string) => `code-agent/${runId}`;

export interface CodeAgentRunInput {
  runId: string;
  tenant: string;
  adapter: 'cloud' | 'local' | 'agent_cli';
  /** Local: the runner is killed after this; cloud: the run is given up `expired` after this. */
  timeoutSeconds: number;
  /** Cloud: the first poll delay; it doubles while the remote status stays, up to 8 times this. */
  pollSeconds: number;
}

/** Status, remote status and PR URL while the run goes on. */
export const codeAgentStatusQuery = defineQuery<CodeAgentLiveStatus>('codeAgentStatus');

/**
 * Cancels the run (tool action `CANCEL_CODE_AGENT`): cloud, `POST /v1/agents/{id}/runs/{runId}/cancel`
 * (a 409 `run_not_cancellable` is recorded and the run followed to its end); local and agent CLI, the
 * running activity is cancelled, which kills its process group. The run ends `cancelled`.
 */
export const codeAgentCancelSignal = defineSignal('cancel');

/** Type of the non-retryable failure an activity throws when the run can never succeed (refused create, bad connection). */
export const CODE_AGENT_REFUSED = 'CODE_AGENT_REFUSED';
/** Type of the non-retryable failure the local runner throws when it finds its run already started (a re-attempt). */
export const CODE_AGENT_ALREADY_STARTED = 'CODE_AGENT_ALREADY_STARTED';
