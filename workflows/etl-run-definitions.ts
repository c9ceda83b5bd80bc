// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/** The ETL run workflow's id and input. The API imports this module to start it. */

/** One workflow per run; the run id is the resource id. */
export const etlRunWorkflowId = (runId: string) => `etl-run/${runId}`;

export interface EtlRunInput {
  runId: string;
  tenant: string;
  /** `etl.run_timeout_seconds` when the run was requested; the activity's own limits derive from it. */
  timeoutSeconds: number;
}

/** Type of the non-retryable failure an activity throws when it finds its run already started (a re-attempt). */
export const ETL_RUN_ALREADY_STARTED = 'ETL_RUN_ALREADY_STARTED';
