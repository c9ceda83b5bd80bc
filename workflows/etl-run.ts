import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { EtlActivities } from '../activities/etl.js';
import type { EtlRunStatus } from '../shared/etl/runs.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { ETL_RUN_ALREADY_STARTED, type EtlRunInput } from './etl-run-definitions.js';
import { trackOutcome } from './visibility.js';

const db = proxyActivities<EtlActivities>(ActivityProfiles.database);

/** Seconds the run activity may take beyond the job's own timeout (the kill grace, the last output write). */
const SLACK_SECONDS = 120;

/**
 * One run of a built ETL job: a single activity runs the launcher (here or on the remote runner),
 * heartbeating, and kills it at the timeout. It is never retried: a job may write to customer
 * systems, so a worker crash mid-run (heartbeat timeout) ends the run `interrupted` instead of
 * silently running it again. The activity also refuses a run it finds already started.
 */
export async function etlRunWorkflow(input: EtlRunInput): Promise<EtlRunStatus> {
  // A failed job is the run's outcome, not a workflow failure: the status is where operators find it.
  return trackOutcome('etlRunWorkflow', () => runOnce(input));
}

async function runOnce(input: EtlRunInput): Promise<EtlRunStatus> {
  const run = proxyActivities<EtlActivities>(
    ActivityProfiles.heartbeatingOnce(input.timeoutSeconds + SLACK_SECONDS, 20),
  );
  try {
    return await run.etlRunExecute(input);
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const reason =
      cause instanceof TimeoutFailure
        ? 'The worker running the job stopped answering (it may have crashed); the run was not restarted.'
        : cause instanceof ApplicationFailure && cause.type === ETL_RUN_ALREADY_STARTED
          ? 'The run had already started on a worker that stopped; it was not started again.'
          : 'The run stopped unexpectedly; it was not restarted.';
    return await db.etlRunMarkInterrupted({ runId: input.runId, reason });
  }
}
