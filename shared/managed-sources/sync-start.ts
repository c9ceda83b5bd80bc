import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import { ManagedSourceEntity, type ManagedSourceRow } from '../db/entities/index.js';
import { ConflictError, PlatformError } from '../errors.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  sourceSyncWorkflowId,
  type SourceSyncResult,
  type SyncApplyRequest,
} from '../../workflows/source-sync-definitions.js';
import { classifyGitError, gitHostOf, resolveRemoteRef, type GitCredentials } from './git.js';
import { openRemote } from './source-access.js';
import { insertSyncJob, markSyncNotStarted, runningJobs } from './sync-job-store.js';
import { sourceView } from './views.js';
import { ManagedSourceCodes, type ManagedSourceCode } from './error-codes.js';

/**
 * Starting a sync from the API: the running job row first (a second one is refused, 409), then
 * workflow `source-sync/<source_id>/<job_id>`; `runSync` waits up to 60 s for its result.
 */
const SYNC_WAIT_MS = 60_000;

/** `promise`'s value, or `'pending'` when it takes longer than `ms` (a later failure is not unhandled). */
export async function waitAtMost<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms))),
  ]).finally(() => clearTimeout(timer));
}

export interface StartSyncOptions {
  apply?: SyncApplyRequest;
  /** The release commit a background job expects (its end is checked against it). */
  expectedRelease?: string | null;
  overwriteIndexes?: boolean;
}

/** Starts sync job `source-sync/<source_id>/<job_id>`; a source pending deletion cannot sync (500). */
export async function startSync(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
  options: StartSyncOptions = {},
) {
  if (row.deletionState)
    throw new PlatformError(
      'internal',
      `Managed source ${row.id} is being deleted and the cleanup of its artifacts is still pending; it cannot sync.`,
      { code: ManagedSourceCodes.SOURCE_DELETE_CLEANUP_PENDING, source_id: row.id },
    );
  const jobId = randomUUID();
  const expected = options.expectedRelease ?? null;
  await insertSyncJob(em, { jobId, sourceId: row.id, tenant: principal.tenant, expected, requestedBy: principal.id });
  const workflowId = sourceSyncWorkflowId(row.id, jobId);
  try {
    await startSyncWorkflow(deps, principal, row.id, jobId, options);
  } catch (err) {
    await markSyncNotStarted(em, jobId);
    throw err;
  }
  return { jobId, workflowId, expected };
}

function startSyncWorkflow(
  deps: AppDeps,
  principal: Principal,
  sourceId: string,
  jobId: string,
  options: StartSyncOptions,
) {
  const { apply, overwriteIndexes } = options;
  return deps.temporal.workflow.start(workflowRef('sourceSyncWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: sourceSyncWorkflowId(sourceId, jobId),
    args: [
      {
        sourceId,
        jobId,
        tenant: principal.tenant,
        trigger: 'api',
        ...(apply ? { apply } : {}),
        ...(overwriteIndexes ? { overwriteIndexes: true } : {}),
      },
    ],
    typedSearchAttributes: lifecycleSearchAttributes('sourceSyncWorkflow', {
      tenant: principal.tenant,
      resourceId: sourceId,
      status: 'running',
    }),
    memo: { requested_by: principal.id, kind: 'source-sync' },
  });
}

/** Starts a sync and waits up to 60 s: its result, or `'pending'` (poll sync-status with the job id). */
export async function runSync(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
  options: Omit<StartSyncOptions, 'expectedRelease'> = {},
) {
  const { jobId, workflowId, expected } = await startSync(em, deps, principal, row, options);
  const result = deps.temporal.workflow.getHandle(workflowId).result() as Promise<SourceSyncResult>;
  return { jobId, expected, result: await waitAtMost(result, SYNC_WAIT_MS) };
}

/** A sync with `apply_*_changes` needs the commit and plan hash of the preview it confirms (409 otherwise). */
export function checkApplyPins(apply: SyncApplyRequest): void {
  if (apply.apply_agent_changes && (!apply.expected_agent_commit || !apply.expected_agent_plan_hash))
    throw new ConflictError(
      'Applying agent changes needs expected_agent_commit and expected_agent_plan_hash from a sync preview (agent_preview).',
      { code: ManagedSourceCodes.AGENT_PREVIEW_REQUIRED },
    );
  if (apply.apply_role_changes && (!apply.expected_role_commit || !apply.expected_role_plan_hash))
    throw new ConflictError(
      'Applying role changes needs expected_role_commit and expected_role_plan_hash from a sync preview (role_preview).',
      { code: ManagedSourceCodes.ROLE_PREVIEW_REQUIRED },
    );
}

/** A sync whose pins no longer matched the synced plan is answered 409 with the fresh result. */
export function checkNoStalePreview(result: SourceSyncResult): void {
  const stale = result.hydrate_errors?.find((e) => e.code.endsWith('_PREVIEW_STALE'));
  // `stale.code` is AGENT_PREVIEW_STALE or ROLE_PREVIEW_STALE (`decide` in shared/managed-sources/sync-hydration.ts)
  if (stale) throw new ConflictError(stale.message, { code: stale.code as ManagedSourceCode, sync: result });
}

/**
 * The commit the release ref names on the remote now: a background job expects it (its end is checked
 * against it). Answers the classified failure when the remote cannot say.
 */
async function remoteReleaseCommit(
  em: EntityManager,
  deps: AppDeps,
  row: ManagedSourceRow,
): Promise<{ commit: string } | { code: string; message: string }> {
  let creds: GitCredentials | null = null;
  try {
    const opened = await openRemote(em, deps.config, row, { timeoutMs: 10_000, maxResponseBytes: 16 * 1024 * 1024 });
    creds = opened.creds;
    if (opened.lapsed) return { code: opened.lapsed.code, message: opened.lapsed.message };
    const ref = await resolveRemoteRef({ ...opened.remote, releaseRef: row.releaseRef });
    return { commit: ref.commitSha };
  } catch (err) {
    const g = classifyGitError(err, gitHostOf(row.repoUrl), creds?.kind);
    return { code: g.code, message: g.message };
  }
}

export interface SyncFlags {
  sync_now?: boolean;
  sync_in_background?: boolean;
}

const freshView = async (em: EntityManager, id: string) =>
  sourceView(em, await em.fork().findOneOrFail(ManagedSourceEntity, { id }));

/**
 * The answer to a create or change (`success`, `source`, `sync`, `sync_job`, `warning…`): with
 * `sync_now` the source syncs (waited for, or in the background with `sync_in_background`).
 */
export async function syncAfterSave(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
  flags: SyncFlags,
) {
  if (flags.sync_now && flags.sync_in_background) return syncInBackground(em, deps, principal, row);
  if (flags.sync_now) return syncAndWait(em, deps, principal, row);
  return { success: true as const, source: await sourceView(em, row), sync: null };
}

async function syncAndWait(em: EntityManager, deps: AppDeps, principal: Principal, row: ManagedSourceRow) {
  const run = await runSync(em, deps, principal, row);
  const source = await freshView(em, row.id);
  if (run.result !== 'pending') return { success: true as const, source, sync: run.result };
  return {
    success: true as const,
    source,
    sync: null,
    sync_job: { job_id: run.jobId, status: 'running' as const, expected_release_commit: run.expected },
    warning: 'The sync is still running; poll sync-status with sync_job.job_id.',
    warning_code: ManagedSourceCodes.SYNC_STILL_RUNNING,
    warning_action: 'poll_sync_status',
  };
}

/** A background release job: started expecting the commit the release ref names now, else a warning. */
async function syncInBackground(em: EntityManager, deps: AppDeps, principal: Principal, row: ManagedSourceRow) {
  const notStarted = async (why: string) => ({
    success: true as const,
    source: await sourceView(em, row),
    sync: null,
    warning: `Saved, but no background sync job started: ${why}`,
    warning_code: ManagedSourceCodes.SKILL_RELEASE_SYNC_NOT_STARTED,
    warning_action: 'sync_again',
  });
  if (await runningJobs(em, row.id))
    return notStarted('a sync of this source is already running; sync again when it ends.');
  const release = await remoteReleaseCommit(em, deps, row);
  if (!('commit' in release))
    return notStarted(`the release commit could not be resolved (${release.code}: ${release.message})`);
  const job = await startSync(em, deps, principal, row, { expectedRelease: release.commit });
  return {
    success: true as const,
    source: await freshView(em, row.id),
    sync: null,
    sync_job: { job_id: job.jobId, status: 'running' as const, expected_release_commit: job.expected },
  };
}
