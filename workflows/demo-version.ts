import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { DemoActivities } from '../activities/demo.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type {
  DemoRunInput,
  DemoRunStatus,
  DemoRunStep,
  DemoVersionInput,
  DemoVersionStatus,
} from './demo-version-definitions.js';
import { trackOutcome } from './visibility.js';

const db = proxyActivities<DemoActivities>(ActivityProfiles.database);
/** A step may fail for real (its check throws): a few attempts, then the run ends `failed`. */
const steps = proxyActivities<DemoActivities>(ActivityProfiles.checkedStep);

/** Validation of a demo version: `draft` → `validating` → `ready`, or `failed` with its `error_code`. */
export async function demoVersionWorkflow(input: DemoVersionInput): Promise<DemoVersionStatus> {
  return trackOutcome('demoVersionWorkflow', async () => {
    await db.demoVersionMarkValidating(input);
    return db.demoVersionValidate(input);
  });
}

/**
 * One run of a ready version: `prepared` → `running`, then each step in turn (every bound agent,
 * blueprint and connection must still resolve), then `completed` when every step was done,
 * `incomplete` when a step was skipped (its subject is gone) or the run was cancelled before the
 * end, `failed` when a step's check failed (after its retries) or the version was no longer ready.
 */
export async function demoRunWorkflow(input: DemoRunInput): Promise<DemoRunStatus> {
  return trackOutcome('demoRunWorkflow', () => runDemo(input));
}

async function runDemo(input: DemoRunInput): Promise<DemoRunStatus> {
  const start = await db.demoRunStart(input);
  if (!start.started) return 'failed';
  const plan: DemoRunStep[] = start.steps;
  let error: string | null = null;
  let cancelled = false;
  for (let i = 0; i < plan.length; i++) {
    const step = plan[i]!;
    if (error || cancelled) {
      plan[i] = { ...step, status: 'skipped', detail: cancelled ? 'run cancelled' : 'an earlier step failed' };
      continue;
    }
    try {
      plan[i] = await steps.demoRunStep({ runId: input.runId, step });
    } catch (err) {
      if (isCancellation(err)) {
        cancelled = true;
        plan[i] = { ...step, status: 'skipped', detail: 'run cancelled' };
      } else {
        error = `step ${step.kind} ${step.target} failed`;
        plan[i] = { ...step, status: 'failed', detail: err instanceof Error ? err.message : String(err) };
      }
    }
  }
  return await CancellationScope.nonCancellable(() => db.demoRunFinish({ runId: input.runId, steps: plan, error }));
}
