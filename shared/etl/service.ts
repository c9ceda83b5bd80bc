import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { EtlRunEntity, type EtlRunRow } from '../db/entities/index.js';
import { ForbiddenError, NotFoundError } from '../errors.js';
import { findBuiltJob, listBuiltJobs, type BuiltJob } from './built-jobs.js';
import { describeProjectJob, listProjectJobs, type JobDescription, type ProjectJob } from './project.js';
import { EtlNotConfiguredError, EtlRunnerClient } from './runner-client.js';
import { pageOutput, type EtlRunView } from './runs.js';
import { refreshKeyring, secretBox } from '../secrets/secret-box.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { etlRunWorkflowId } from '../../workflows/etl-run-definitions.js';
import type { AppDeps } from '../app-deps.js';

export interface EtlJobList {
  project_jobs: ProjectJob[];
  built_jobs: BuiltJob[];
}

/** Where built jobs come from: the remote runner when `etl.runner_url` is set, else `etl.jobs_dir`. */
async function builtJobSource(deps: AppDeps) {
  const runnerUrl = await deps.settings.get('etl.runner_url');
  if (runnerUrl)
    return {
      kind: 'remote' as const,
      client: new EtlRunnerClient(runnerUrl, await deps.settings.get('etl.runner_token'), deps.config),
    };
  const jobsDir = await deps.settings.get('etl.jobs_dir');
  return jobsDir ? { kind: 'local' as const, jobsDir } : null;
}

async function requireProject(deps: AppDeps): Promise<string> {
  const projectPath = await deps.settings.get('etl.project_path');
  if (!projectPath)
    throw new EtlNotConfiguredError(
      'describe_etl_job reads the project: set etl.project_path (also with a remote runner).',
      ['etl.project_path'],
    );
  return projectPath;
}

/** `list_etl_jobs`: the project's jobs and the built jobs (local folder or remote runner). */
export async function listJobs(deps: AppDeps): Promise<EtlJobList> {
  const projectPath = await deps.settings.get('etl.project_path');
  const source = await builtJobSource(deps);
  if (!projectPath && !source)
    throw new EtlNotConfiguredError('No ETL project or built jobs are configured.', [
      'etl.project_path',
      'etl.jobs_dir',
      'etl.runner_url',
    ]);
  return {
    project_jobs: projectPath ? await listProjectJobs(projectPath) : [],
    built_jobs: !source
      ? []
      : source.kind === 'remote'
        ? await source.client.jobs()
        : await listBuiltJobs(source.jobsDir),
  };
}

export async function describeJob(deps: AppDeps, name: string, version?: string): Promise<JobDescription> {
  return await describeProjectJob(await requireProject(deps), name, version);
}

/**
 * Action Review for runs (documented in docs/architecture.md): an agent may run a built job only when
 * the project shows it writes to no customer system; any other job (writes to a database or an API,
 * or cannot be classified because the project lacks it) needs a person, so the agent raises an
 * Action Review proposal asking one to run it.
 */
async function assertAgentMayRun(deps: AppDeps, principal: Principal, jobName: string): Promise<void> {
  if (principal.kind !== 'agent') return;
  const projectPath = await deps.settings.get('etl.project_path');
  let description: JobDescription | null = null;
  if (projectPath) description = await describeProjectJob(projectPath, jobName).catch(() => null);
  if (description && !description.writes_to_customer_systems) return;
  throw new ForbiddenError(
    description
      ? `The ${jobName} job writes to customer systems (${description.writes.join(', ')}); an agent may not run it directly. Raise an Action Review proposal (action_review tool) asking a person to run it.`
      : `The ${jobName} job cannot be checked against the project (etl.project_path unset or the job is not in it), so it may write to customer systems; raise an Action Review proposal asking a person to run it.`,
    { reason: 'action_review_required', job_name: jobName, writes: description?.writes ?? null },
  );
}

export interface RunRequest {
  job_name: string;
  context?: string | undefined;
  context_params: Record<string, string>;
}

/** A retried agent tool call (same idempotency key) finds the run it started. */
const runIdFor = (key: string | undefined) =>
  key ? `etl_${createHash('sha256').update(key).digest('hex').slice(0, 24)}` : `etl_${randomBytes(12).toString('hex')}`;

/** `run_etl_job`: records the run and starts workflow `etl-run/<run_id>`; answers the run as it stands. */
export async function startRun(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  request: RunRequest,
  idempotencyKey?: string,
): Promise<EtlRunView> {
  const runId = runIdFor(idempotencyKey);
  const existing = await em.findOne(EtlRunEntity, { runId, tenant: principal.tenant });
  if (existing) return runView(existing);
  const source = await builtJobSource(deps);
  if (!source)
    throw new EtlNotConfiguredError('run_etl_job runs built jobs: set etl.jobs_dir or etl.runner_url.', [
      'etl.jobs_dir',
      'etl.runner_url',
    ]);
  // Built jobs only: the name must be one the source lists (checked before anything is written).
  if (source.kind === 'local') await findBuiltJob(source.jobsDir, request.job_name);
  else if (!(await source.client.jobs()).some((j) => j.name === request.job_name))
    throw new NotFoundError(`No built job named ${request.job_name} on the ETL runner.`, {
      reason: 'etl_built_job_not_found',
      job_name: request.job_name,
    });
  await assertAgentMayRun(deps, principal, request.job_name);
  const timeoutSeconds = await deps.settings.get('etl.run_timeout_seconds');
  await refreshKeyring(em);
  const keys = Object.keys(request.context_params);
  const now = new Date();
  const row = em.create(EtlRunEntity, {
    runId,
    tenant: principal.tenant,
    jobName: request.job_name,
    runner: source.kind,
    status: 'queued',
    contextName: request.context ?? null,
    contextKeys: keys,
    contextSealed: keys.length ? secretBox(deps.config).seal(JSON.stringify(request.context_params)) : null,
    timeoutSeconds,
    exitCode: null,
    error: null,
    output: '',
    outputBytes: 0,
    outputTruncated: false,
    remoteRunId: null,
    workerHost: null,
    processId: null,
    requestedBy: `${principal.kind}:${principal.id}`,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    updatedAt: now,
  });
  await em.persistAndFlush(row);
  await deps.temporal.workflow.start(workflowRef('etlRunWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: etlRunWorkflowId(runId),
    args: [{ runId, tenant: principal.tenant, timeoutSeconds }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: lifecycleSearchAttributes('etlRunWorkflow', {
      tenant: principal.tenant,
      resourceId: runId,
      status: 'running',
    }),
  });
  return runView(row);
}

/** `get_etl_run`: the run from PostgreSQL (it outlives its workflow), output paged. */
export async function getRun(
  em: EntityManager,
  principal: Principal,
  runId: string,
  offset?: number,
  limit?: number,
): Promise<EtlRunView> {
  const row = await em.findOne(EtlRunEntity, { runId, tenant: principal.tenant }, { refresh: true });
  if (!row) throw new NotFoundError(`No ETL run ${runId}.`, { reason: 'etl_run_not_found' });
  return runView(row, offset, limit);
}

export function runView(row: EtlRunRow, offset?: number, limit?: number): EtlRunView {
  return {
    run_id: row.runId,
    job_name: row.jobName,
    status: row.status,
    context: row.contextName,
    context_params: row.contextKeys,
    timeout_seconds: row.timeoutSeconds,
    exit_code: row.exitCode,
    error: row.error,
    created_at: row.createdAt.toISOString(),
    started_at: row.startedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
    output: pageOutput(row.output, { bytes_seen: row.outputBytes, truncated: row.outputTruncated }, offset, limit),
  };
}
