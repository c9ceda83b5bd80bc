/**
 * The echo job (POST/GET /api/jobs/echo): starts workflow `echo/<job_id>` idempotently, waits a while
 * for its result, and reads the recorded row back for the caller's tenant.
 */
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { toIso } from '../dates.js';
import { EchoJobEntity, type EchoJob } from '../db/entities/index.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { SearchAttributes } from '../temporal/search-attributes.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { workflowUrl } from '../temporal/workflow-url.js';
import type { EchoResult } from '../../workflows/echo-definitions.js';
import { RequestCodes } from '../http/error-codes.js';

/** How long the POST waits for the workflow before answering 202 with the job to poll. */
const RESULT_WAIT_MS = 20_000;

export const echoWorkflowId = (jobId: string) => `echo/${jobId}`;

async function waitForResult<T>(result: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  result.catch(() => undefined); // an abandoned wait must not surface later as an unhandled rejection
  try {
    return await Promise.race([
      result,
      new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A recorded echo job as both routes answer it (`EchoJobView`). */
export function echoJobView(config: AppConfig, row: EchoJob) {
  return {
    job_id: row.jobId,
    workflow_id: row.workflowId,
    workflow_url: workflowUrl(config, row.workflowId),
    message: row.message,
    recorded_at: toIso(row.recordedAt),
    tenant: row.tenant,
    requested_by: row.requestedBy,
  };
}

async function startEchoWorkflow(deps: AppDeps, principal: Principal, jobId: string, message: string) {
  try {
    await deps.temporal.workflow.start(workflowRef('echoWorkflow'), {
      taskQueue: deps.config.temporal.taskQueue,
      workflowId: echoWorkflowId(jobId),
      args: [{ jobId, tenant: principal.tenant, message, requestedBy: principal.id }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SearchAttributes.tenant, value: principal.tenant },
        { key: SearchAttributes.resourceId, value: jobId },
        { key: SearchAttributes.status, value: 'running' },
      ],
      memo: { requested_by: principal.id, kind: 'echo' },
    });
  } catch (err) {
    // A completed run with this id exists: its result is the answer to this retry.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * Runs the echo job: the recorded job (`done`), or the job to poll (`running`) when the workflow has
 * not answered within 20 s. A job id of another tenant is 409 `JOB_ID_TAKEN`.
 */
export async function runEchoJob(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  body: { message: string; job_id?: string },
) {
  const jobId = body.job_id ?? randomUUID();
  const workflowId = echoWorkflowId(jobId);
  await startEchoWorkflow(deps, principal, jobId, body.message);
  const handle = deps.temporal.workflow.getHandle(workflowId);
  const result = await waitForResult(handle.result() as Promise<EchoResult>, RESULT_WAIT_MS);
  if (result === 'pending') {
    const running = { job_id: jobId, workflow_id: workflowId, workflow_url: workflowUrl(deps.config, workflowId) };
    return { state: 'running' as const, data: { ...running, status: 'running' as const } };
  }
  const row = await em.findOneOrFail(EchoJobEntity, { jobId: result.jobId });
  if (row.tenant !== principal.tenant)
    throw new ConflictError(`job_id ${jobId} is already taken; choose another.`, { code: RequestCodes.JOB_ID_TAKEN });
  return { state: 'done' as const, data: echoJobView(deps.config, row) };
}

/** An echo job of the caller's tenant with its workflow's status (`retention_expired` once Temporal forgot it). */
export async function readEchoJob(deps: AppDeps, em: EntityManager, principal: Principal, jobId: string) {
  const row = await em.findOne(EchoJobEntity, { jobId, tenant: principal.tenant });
  if (!row) throw new NotFoundError(`No echo job ${jobId}.`);
  let workflowStatus: string;
  try {
    workflowStatus = (await deps.temporal.workflow.getHandle(row.workflowId).describe()).status.name;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    workflowStatus = 'retention_expired';
  }
  return { ...echoJobView(deps.config, row), workflow_status: workflowStatus };
}
