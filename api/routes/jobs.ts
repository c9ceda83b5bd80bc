import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { EchoJobEntity, type EchoJob } from '../../shared/db/entities/index.js';
import type { AppConfig } from '../../shared/config.js';
import { ConflictError, NotFoundError } from '../../shared/errors.js';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';
import type { EchoResult } from '../../workflows/echo-definitions.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { toIso } from '../../shared/dates.js';
import { workflowUrl } from '../../shared/temporal/workflow-url.js';
import { RequestCodes } from '../../shared/http/error-codes.js';

const WorkflowUrl = z
  .string()
  .nullable()
  .describe('The Temporal UI page of the workflow; null when TEMPORAL_UI_URL is not configured');

const EchoJobView = z
  .object({
    job_id: z.string(),
    workflow_id: z.string(),
    workflow_url: WorkflowUrl,
    message: z.string(),
    recorded_at: z.string(),
    tenant: z.string(),
    requested_by: z.string(),
  })
  .meta({ id: 'EchoJob' });

const JobId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" and "-" only, at most 64')
  .describe('Idempotency key: retrying with the same job_id never starts a second workflow');

/** How long the POST waits for the workflow before answering 202 with the job to poll. */
const RESULT_WAIT_MS = 20_000;

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
function echoJobView(config: AppConfig, row: EchoJob) {
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

export const echoWorkflowId = (jobId: string) => `echo/${jobId}`;

export const jobRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/jobs/echo',
    operationId: 'runEchoJob',
    summary: 'Run the echo workflow and wait for its result',
    description:
      'Starts workflow `echo/<job_id>`, whose activity writes a row through MikroORM, and answers its result. Proves API → Temporal → worker → PostgreSQL.',
    tags: ['jobs'],
    access: { kind: 'authenticated' },
    body: z.object({ message: z.string().min(1).max(4_000), job_id: JobId.optional() }),
    responses: {
      200: { description: 'The workflow result, read back from PostgreSQL', schema: successEnvelope(EchoJobView) },
      202: {
        description:
          'Still running after 20 s (for example while PostgreSQL is down and the activity retries); poll GET /api/jobs/echo/{job_id}',
        schema: successEnvelope(
          z.object({
            job_id: z.string(),
            workflow_id: z.string(),
            workflow_url: WorkflowUrl,
            status: z.literal('running'),
          }),
        ),
      },
      409: { description: '`JOB_ID_TAKEN`: the job_id belongs to another tenant' },
    },
    handler: async ({ body, principal, deps, em, koa }) => {
      const jobId = body.job_id ?? randomUUID();
      const workflowId = echoWorkflowId(jobId);
      try {
        await deps.temporal.workflow.start(workflowRef('echoWorkflow'), {
          taskQueue: deps.config.temporal.taskQueue,
          workflowId,
          args: [{ jobId, tenant: principal.tenant, message: body.message, requestedBy: principal.id }],
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
      const result = await waitForResult(
        deps.temporal.workflow.getHandle(workflowId).result() as Promise<EchoResult>,
        RESULT_WAIT_MS,
      );
      if (result === 'pending') {
        koa.status = 202;
        return {
          success: true,
          data: {
            job_id: jobId,
            workflow_id: workflowId,
            workflow_url: workflowUrl(deps.config, workflowId),
            status: 'running',
          },
        };
      }
      const row = await em.findOneOrFail(EchoJobEntity, { jobId: result.jobId });
      if (row.tenant !== principal.tenant)
        throw new ConflictError(`job_id ${jobId} is already taken; choose another.`, {
          code: RequestCodes.JOB_ID_TAKEN,
        });
      return {
        success: true,
        data: echoJobView(deps.config, row),
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/jobs/echo/:job_id',
    operationId: 'getEchoJob',
    summary: 'Read an echo job and its workflow status',
    tags: ['jobs'],
    access: { kind: 'authenticated' },
    params: z.object({ job_id: JobId }),
    responses: {
      200: { description: 'The job', schema: successEnvelope(EchoJobView.extend({ workflow_status: z.string() })) },
      404: { description: 'Unknown job, or one of another tenant' },
    },
    handler: async ({ params, principal, deps, em }) => {
      const row = await em.findOne(EchoJobEntity, { jobId: params.job_id, tenant: principal.tenant });
      if (!row) throw new NotFoundError(`No echo job ${params.job_id}.`);
      let workflowStatus: string;
      try {
        workflowStatus = (await deps.temporal.workflow.getHandle(row.workflowId).describe()).status.name;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        workflowStatus = 'retention_expired';
      }
      return {
        success: true,
        data: {
          ...echoJobView(deps.config, row),
          workflow_status: workflowStatus,
        },
      };
    },
  }),
];
