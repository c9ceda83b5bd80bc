import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { resolvePermissions } from '../auth/custom-roles.js';
import { FlowRunEntity, FlowRunStepEntity, type FlowRunRow, type FlowRunStepRow } from '../db/entities/index.js';
import { ManagedSourceCodes } from '../managed-sources/error-codes.js';
import type { FlowRunStatus, FlowStepStatus } from './definition.js';

/**
 * The rows a flow run's activities write (issue 31, item 3). Every write is conditional on the state
 * it moves from, so a re-attempt, a late answer from a cancelled step or a second finish changes
 * nothing that is already decided.
 */

export type StepError = NonNullable<FlowRunStepRow['error']>;

const UNFINISHED: FlowStepStatus[] = ['pending', 'running'];

/**
 * Claims a step for an attempt: `pending` or `running` (an attempt whose worker died) becomes
 * `running` with one more attempt. Answers the step and its run to execute, or the outcome already
 * recorded (the step ended, or the run did).
 */
export async function claimStep(
  em: EntityManager,
  runId: string,
  stepIndex: number,
): Promise<{ step: FlowRunStepRow; run: FlowRunRow } | { recorded: FlowStepStatus }> {
  const run = await em.findOneOrFail(FlowRunEntity, { runId });
  const step = await em.findOneOrFail(FlowRunStepEntity, { runId, stepIndex });
  if (!UNFINISHED.includes(step.status)) return { recorded: step.status };
  if (run.status !== 'running') return { recorded: 'cancelled' };
  step.status = 'running';
  step.attempts += 1;
  step.startedAt ??= new Date();
  await em.flush();
  return { step, run };
}

/** Records a step's outcome unless it was decided meanwhile (cancelled); answers what stands. */
export async function recordStepOutcome(
  em: EntityManager,
  key: { runId: string; stepIndex: number },
  outcome: { ok: true; result: unknown } | { ok: false; error: StepError },
): Promise<FlowStepStatus> {
  await em.nativeUpdate(
    FlowRunStepEntity,
    { ...key, status: 'running' },
    outcome.ok
      ? { status: 'succeeded', result: outcome.result ?? null, finishedAt: new Date() }
      : { status: 'failed', error: outcome.error, finishedAt: new Date() },
  );
  return (await em.fork().findOneOrFail(FlowRunStepEntity, key)).status;
}

/** A step whose every attempt ended without an outcome (workers kept dying): failed, unless one was recorded. */
export async function abandonStep(
  em: EntityManager,
  key: { runId: string; stepIndex: number },
  reason: string,
): Promise<FlowStepStatus> {
  await em.nativeUpdate(
    FlowRunStepEntity,
    { ...key, status: { $in: UNFINISHED } },
    {
      status: 'failed',
      finishedAt: new Date(),
      error: {
        error: `The step's attempts all ended without an outcome (${reason}); it was not run again.`,
        error_type: 'internal',
        payload: { code: ManagedSourceCodes.FLOW_STEP_ABANDONED },
      },
    },
  );
  return (await em.fork().findOneOrFail(FlowRunStepEntity, key)).status;
}

/**
 * Ends a run once: `cancelled` cancels its unfinished steps, else the steps never started are
 * `skipped` and a failed run names its first failed step. Answers the run's recorded status.
 */
export async function finishRun(em: EntityManager, runId: string, status: FlowRunStatus): Promise<FlowRunStatus> {
  const now = new Date();
  const run = await em.findOneOrFail(FlowRunEntity, { runId });
  if (run.status !== 'running') return run.status;
  await em.nativeUpdate(
    FlowRunStepEntity,
    { runId, status: { $in: status === 'cancelled' ? UNFINISHED : ['pending'] } },
    { status: status === 'cancelled' ? 'cancelled' : 'skipped', finishedAt: now },
  );
  let error: string | null = null;
  if (status === 'failed') {
    const first = await em.findOne(FlowRunStepEntity, { runId, status: 'failed' }, { orderBy: { stepIndex: 'asc' } });
    error = first ? `Step ${first.stepIndex + 1} (${first.name}) failed: ${first.error?.error ?? 'no detail'}` : null;
  }
  if (status === 'cancelled') error = 'The run was cancelled.';
  await em.nativeUpdate(FlowRunEntity, { runId, status: 'running' }, { status, error, finishedAt: now });
  return (await em.fork().findOneOrFail(FlowRunEntity, { runId })).status;
}

/** The person who started the run, as tool steps act: their roles as of the start (custom roles as they are now). */
export async function starterPrincipal(em: EntityManager, run: FlowRunRow): Promise<Principal> {
  return {
    kind: 'person',
    id: run.startedBy,
    tenant: run.tenant,
    displayName: run.startedBy,
    roles: run.startedByRoles,
    permissions: await resolvePermissions(em, run.tenant, run.startedByRoles),
    credential: 'service_token',
  };
}
