import { ActivityFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { FlowActivities } from '../activities/flows.js';
import { flowBatches, FLOW_MAX_CONCURRENT_STEPS, type FlowRunStatus } from '../shared/flows/definition.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { FlowRunInput } from './flow-run-definitions.js';
import { trackOutcome } from './visibility.js';

const db = proxyActivities<FlowActivities>(ActivityProfiles.database);
const step = proxyActivities<FlowActivities>(ActivityProfiles.flowStep);

/**
 * One run of a promoted flow: its steps in order, a batch of consecutive `run_concurrently` steps at
 * most {@link FLOW_MAX_CONCURRENT_STEPS} at once. Each step is one heartbeating activity that records
 * its own outcome and, re-attempted after a worker died, answers the outcome it finds recorded
 * instead of running again; so a worker kill loses no step and repeats no completed one. A failed
 * step lets the steps already running end and starts no other (they end `skipped`); a cancel ends
 * the run `cancelled` with its unfinished steps.
 */
export async function flowRunWorkflow(input: FlowRunInput): Promise<FlowRunStatus> {
  return trackOutcome('flowRunWorkflow', () => runFlow(input));
}

async function runFlow(input: FlowRunInput): Promise<FlowRunStatus> {
  let failed = false;
  try {
    for (const batch of flowBatches(input.steps)) {
      failed = await runBatch(input.runId, batch);
      if (failed) break;
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    return CancellationScope.nonCancellable(() => db.flowRunFinish({ runId: input.runId, status: 'cancelled' }));
  }
  return db.flowRunFinish({ runId: input.runId, status: failed ? 'failed' : 'succeeded' });
}

/** Runs one batch, at most the cap at once; true when a step of it failed. */
async function runBatch(runId: string, batch: number[]): Promise<boolean> {
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < batch.length) {
      const stepIndex = batch[next++]!;
      if ((await runStep(runId, stepIndex)) !== 'succeeded') failed = true;
    }
  };
  await Promise.all(Array.from({ length: Math.min(FLOW_MAX_CONCURRENT_STEPS, batch.length) }, lane));
  return failed;
}

async function runStep(runId: string, stepIndex: number) {
  try {
    return await step.flowRunStep({ runId, stepIndex });
  } catch (err) {
    if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
    // Every attempt ended without an outcome (workers kept dying): the step failed, recorded so.
    return db.flowRunStepAbandoned({ runId, stepIndex, reason: err.cause?.message ?? err.message });
  }
}
