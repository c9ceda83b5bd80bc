import { z } from 'zod';
import { ETL_OUTPUT_PAGE_DEFAULT, ETL_OUTPUT_PAGE_MAX } from '../etl/runs.js';
import { describeJob, getRun, listJobs, startRun } from '../etl/service.js';
import { defineTool } from './registry.js';
import { DescribeEtlJobResult, GetEtlRunResult, ListEtlJobsResult, RunEtlJobResult } from './results.js';

/** Talend job and context names: letters, digits, underscores (never a path). */
const JobName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,199}$/, 'a job name: letters, digits and underscores');
const ParamName = /^[A-Za-z_][A-Za-z0-9_.]{0,199}$/;

/** The group `etl_tools` (spec, ETL-tool settings); each answers the same shapes with a local or a remote runner. */
export const listEtlJobsTool = defineTool({
  name: 'list_etl_jobs',
  description:
    "ETL jobs: project_jobs (the project's process/ folder) and built_jobs (built jobs in etl.jobs_dir, or the remote runner's).",
  input: z.object({}).strict(),
  result: ListEtlJobsResult,
  principalKinds: ['agent', 'person'],
  permission: 'view_connections',
  handler: async ({ deps }) => await listJobs(deps),
});

export const describeEtlJobTool = defineTool({
  name: 'describe_etl_job',
  description:
    'Describes a project job from its process/*.item file: components, where each reads or writes, their connections, context variables (passwords masked). Needs etl.project_path.',
  input: z
    .object({
      job_name: JobName,
      version: z
        .string()
        .regex(/^\d+(\.\d+)*$/)
        .max(20)
        .optional(),
    })
    .strict(),
  result: DescribeEtlJobResult,
  principalKinds: ['agent', 'person'],
  permission: 'view_connections',
  handler: async ({ deps, input }) => await describeJob(deps, input.job_name, input.version),
});

export const runEtlJobTool = defineTool({
  name: 'run_etl_job',
  description:
    'Runs a built job (workflow etl-run/<run_id>) with context parameters, killed at etl.run_timeout_seconds; answers the run (poll it with get_etl_run). ' +
    'Agents may run only jobs the project shows writing to no customer system; others need a person (raise an Action Review proposal).',
  input: z
    .object({
      job_name: JobName,
      context: JobName.optional().describe('Context to run with (--context); the job’s default when omitted'),
      context_params: z
        .record(
          z.string().regex(ParamName, 'a context variable name'),
          z
            .string()
            .max(4000)
            .regex(/^[^\n\r]*$/, 'one line'),
        )
        .refine((r) => Object.keys(r).length <= 100, 'at most 100 context parameters')
        .default({}),
    })
    .strict(),
  result: RunEtlJobResult,
  principalKinds: ['agent', 'person'],
  // Running a job acts on customer systems with connection settings: the connection-management permission.
  permission: 'manage_all_connections',
  handler: async ({ deps, em, principal, input, idempotencyKey }) =>
    await startRun(deps, em, principal, input, idempotencyKey),
});

export const getEtlRunTool = defineTool({
  name: 'get_etl_run',
  description: `Polls a run: status, exit code, and a page of its output (offset, limit default ${ETL_OUTPUT_PAGE_DEFAULT}, at most ${ETL_OUTPUT_PAGE_MAX} characters; next_offset for the next page).`,
  input: z
    .object({
      run_id: z.string().regex(/^etl_[0-9a-f]{24}$/, 'a run id from run_etl_job'),
      offset: z.number().int().min(0).max(1_000_000_000).default(0),
      limit: z.number().int().min(1).max(ETL_OUTPUT_PAGE_MAX).default(ETL_OUTPUT_PAGE_DEFAULT),
    })
    .strict(),
  result: GetEtlRunResult,
  principalKinds: ['agent', 'person'],
  permission: 'view_connections',
  handler: async ({ em, principal, input }) => await getRun(em, principal, input.run_id, input.offset, input.limit),
});
