// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/** The flow-run workflow's id and input. The API imports this module to start it. */

/** One workflow per run; the run id is the resource id. */
export const flowRunWorkflowId = (runId: string) => `flow-run/${runId}`;

export interface FlowRunInput {
  runId: string;
  tenant: string;
  /** The run's steps in order (their definitions are rows of `flow_run_steps`, read by each step's activity). */
  steps: Array<{ index: number; runConcurrently: boolean }>;
}
