import { z } from 'zod';
import { readEchoJob, runEchoJob } from '../../shared/jobs/echo.js';
import { defineRoute, successEnvelope } from '../http/route.js';

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

export const jobRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/jobs/echo',
    operationId: 'runEchoJob',
    summary: 'Run the echo workflow and wait for its result',
    description:
      'Starts workflow `echo/<job_id>`, whose activity writes a row through MikroORM, and answers its result. Proves API → Temporal → worker → PostgreSQL.',
    tags: ['jobs'],
    access: { kind: 'authenticated', permission: null },
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
      const { state, data } = await runEchoJob(deps, em, principal, body);
      if (state === 'running') koa.status = 202;
      return { success: true, data };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/jobs/echo/:job_id',
    operationId: 'getEchoJob',
    summary: 'Read an echo job and its workflow status',
    tags: ['jobs'],
    access: { kind: 'authenticated', permission: null },
    params: z.object({ job_id: JobId }),
    responses: {
      200: { description: 'The job', schema: successEnvelope(EchoJobView.extend({ workflow_status: z.string() })) },
      404: { description: 'Unknown job, or one of another tenant' },
    },
    handler: async ({ params, principal, deps, em }) => ({
      success: true,
      data: await readEchoJob(deps, em, principal, params.job_id),
    }),
  }),
];
