import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { parse as parseYaml } from 'yaml';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import {
  FlowRunEntity,
  FlowRunStepEntity,
  ManagedFlowEntity,
  type FlowRunRow,
  type FlowRunStepRow,
  type ManagedFlowRow,
  type ManagedSourceRow,
} from '../db/entities/index.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import { checkActingUser, checkedOutFlows, tenantSources } from '../managed-sources/flow-promotions.js';
import { ManagedSourceCodes } from '../managed-sources/error-codes.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { flowRunWorkflowId } from '../../workflows/flow-run-definitions.js';
import { flowSteps, type FlowRunStatus, type FlowStep } from './definition.js';
import { flowRunStepView, flowRunView } from './views.js';

/**
 * Flow runs (issue 31, item 3): a promoted flow of one of the tenant's managed sources runs as
 * workflow `flow-run/<run_id>` over the manifest it was promoted with. The rows are written here
 * (the run and its steps, `pending`) before the workflow starts; the workflow's activities write the
 * outcomes (shared/flows/store.ts).
 */

/** How long a cancel waits for the run to end before answering that it is still ending. */
const CANCEL_WAIT_MS = 20_000;

const notFound = (what: string, flowName: string) =>
  new NotFoundError(what, { code: ManagedSourceCodes.FLOW_UNKNOWN, flow_name: flowName });

/** The promoted flow and the manifest text it was promoted with; refuses what cannot run. */
async function promotedFlow(
  em: EntityManager,
  deps: AppDeps,
  source: ManagedSourceRow,
  flowName: string,
): Promise<{ flow: ManagedFlowRow; text: string }> {
  const flow = await em.findOne(ManagedFlowEntity, { sourceId: source.id, flowName });
  const checkedOut = (await checkedOutFlows(deps.config, source)).find((f) => f.flowName === flowName);
  if (!flow) {
    if (!checkedOut) throw notFound(`Managed source ${source.id} has no flow ${flowName}.`, flowName);
    throw new ConflictError(`Flow ${flowName} is synced but not promoted; promote it before running it.`, {
      code: ManagedSourceCodes.FLOW_NOT_PROMOTED,
      flow_name: flowName,
    });
  }
  const text = flow.definition ?? (checkedOut?.contentHash === flow.contentHash ? checkedOut.text : null);
  if (text === null)
    throw new ConflictError(
      `Flow ${flowName} was promoted before flow runs kept the promoted manifest, and the source has moved on since; promote the flow again to run it.`,
      { code: ManagedSourceCodes.FLOW_DEFINITION_UNAVAILABLE, flow_name: flowName },
    );
  return { flow, text };
}

function parsedSteps(flowName: string, text: string): FlowStep[] {
  let manifest: unknown;
  try {
    manifest = parseYaml(text);
  } catch {
    manifest = undefined;
  }
  const parsed = flowSteps(manifest);
  if ('problem' in parsed)
    throw new BadRequestError(`Flow ${flowName} cannot run: ${parsed.problem}.`, {
      code: ManagedSourceCodes.FLOW_INVALID,
      flow_name: flowName,
      reason: parsed.problem,
    });
  return parsed.steps;
}

const pendingStep = (runId: string, s: FlowStep): FlowRunStepRow => ({
  runId,
  stepIndex: s.index,
  name: s.name,
  kind: s.kind,
  definition: s.definition,
  runConcurrently: s.runConcurrently,
  status: 'pending',
  attempts: 0,
  result: null,
  error: null,
  startedAt: null,
  finishedAt: null,
});

/** Starts a run of a promoted flow for an acting person; answers the run with its steps (all `pending`). */
export async function startFlowRun(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  target: { sourceId: string; flowName: string },
) {
  checkActingUser(principal, 'Running a flow');
  const [source] = await tenantSources(em, principal.tenant, target.sourceId);
  if (!source) throw notFound(`No managed source ${target.sourceId}.`, target.flowName);
  const { flow, text } = await promotedFlow(em, deps, source, target.flowName);
  const steps = parsedSteps(target.flowName, text);
  const runId = `frun_${randomBytes(16).toString('hex')}`;
  const run: FlowRunRow = {
    runId,
    tenant: principal.tenant,
    sourceId: source.id,
    flowName: flow.flowName,
    commitSha: flow.commitSha,
    contentHash: flow.contentHash,
    status: 'running',
    startedBy: principal.id,
    startedByRoles: principal.roles,
    error: null,
    createdAt: new Date(),
    finishedAt: null,
  };
  await em.transactional(async (tx) => {
    await tx.insert(FlowRunEntity, run);
    if (steps.length)
      await tx.insertMany(
        FlowRunStepEntity,
        steps.map((s) => pendingStep(runId, s)),
      );
  });
  await deps.temporal.workflow.start(workflowRef('flowRunWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: flowRunWorkflowId(runId),
    args: [
      {
        runId,
        tenant: principal.tenant,
        steps: steps.map((s) => ({ index: s.index, runConcurrently: s.runConcurrently })),
      },
    ],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: lifecycleSearchAttributes('flowRunWorkflow', {
      tenant: principal.tenant,
      resourceId: runId,
      status: 'running',
    }),
  });
  return getFlowRun(deps, em.fork(), principal, runId, run);
}

async function tenantRun(em: EntityManager, principal: Principal, runId: string): Promise<FlowRunRow> {
  const run = await em.findOne(FlowRunEntity, { runId, tenant: principal.tenant });
  if (!run) throw new NotFoundError(`No flow run ${runId}.`, { run_id: runId });
  return run;
}

/** One of the tenant's runs with its steps in order (404 for another tenant's). */
export async function getFlowRun(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  runId: string,
  known?: FlowRunRow,
) {
  const run = known ?? (await tenantRun(em, principal, runId));
  const steps = await em.find(FlowRunStepEntity, { runId: run.runId }, { orderBy: { stepIndex: 'asc' } });
  return { ...flowRunView(deps.config, run, steps.length), steps: steps.map(flowRunStepView) };
}

/** The tenant's runs, newest first, optionally of one source, flow or status. */
export async function listFlowRuns(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  filter: { sourceId?: string; flowName?: string; status?: FlowRunStatus; limit: number },
) {
  const runs = await em.find(
    FlowRunEntity,
    {
      tenant: principal.tenant,
      ...(filter.sourceId ? { sourceId: filter.sourceId } : {}),
      ...(filter.flowName ? { flowName: filter.flowName } : {}),
      ...(filter.status ? { status: filter.status } : {}),
    },
    { orderBy: { createdAt: 'desc', runId: 'desc' }, limit: filter.limit + 1 },
  );
  const page = runs.slice(0, filter.limit);
  const counts = new Map<string, number>();
  if (page.length)
    for (const s of await em.find(
      FlowRunStepEntity,
      { runId: { $in: page.map((r) => r.runId) } },
      { fields: ['runId'] },
    ))
      counts.set(s.runId, (counts.get(s.runId) ?? 0) + 1);
  return {
    runs: page.map((r) => flowRunView(deps.config, r, counts.get(r.runId) ?? 0)),
    truncated: runs.length > page.length,
  };
}

const finished = (run: FlowRunRow) =>
  new ConflictError(`Flow run ${run.runId} already ended (${run.status}); there is nothing to cancel.`, {
    code: ManagedSourceCodes.FLOW_RUN_FINISHED,
    run_id: run.runId,
    status: run.status,
  });

/**
 * Cancels a running run: its running steps are cancelled and no other starts. 409 `FLOW_RUN_FINISHED`
 * when it already ended (or ended on its own before the cancel reached it). Answers the run once it
 * ended, or `cancel_pending` when it is still ending after the wait.
 */
export async function cancelFlowRun(deps: AppDeps, em: EntityManager, principal: Principal, runId: string) {
  const run = await tenantRun(em, principal, runId);
  if (run.status !== 'running') throw finished(run);
  const handle = deps.temporal.workflow.getHandle(flowRunWorkflowId(runId));
  try {
    await handle.cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    handle.result().catch(() => undefined),
    new Promise((resolve) => (timer = setTimeout(resolve, CANCEL_WAIT_MS))),
  ]);
  clearTimeout(timer);
  const after = await tenantRun(em.fork(), principal, runId);
  if (after.status !== 'running' && after.status !== 'cancelled') throw finished(after);
  return {
    ...(await getFlowRun(deps, em.fork(), principal, runId, after)),
    cancel_pending: after.status === 'running',
  };
}
