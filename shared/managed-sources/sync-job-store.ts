import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ManagedSourceSyncJobEntity, type ManagedSourceSyncJobRow } from '../db/entities/index.js';
import { sql } from '../db/sql.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { ManagedSourceCodes } from './error-codes.js';

/**
 * The sync job rows (`managed_source_sync_jobs`): one `running` row per source at most (a partial
 * unique index), its phase and files scanned written as the sync goes, its result when it ends. A
 * source keeps its newest `SYNC_JOBS_KEPT` terminal jobs (spec, Limits: 200 terminal job records);
 * older terminal ones are pruned when a job starts or ends, a running one never.
 */
export type SyncJobRow = ManagedSourceSyncJobRow;

/** Terminal (`complete` or `error`) jobs kept per source (spec, Limits). */
export const SYNC_JOBS_KEPT = 200;

/** Deletes the source's terminal jobs beyond the newest `SYNC_JOBS_KEPT` (by end time); running jobs stay. */
export async function pruneSyncJobs(em: EntityManager, sourceId: string): Promise<void> {
  await sql(
    em,
    `delete from managed_source_sync_jobs where job_id in (
       select job_id from managed_source_sync_jobs where source_id = ? and status <> 'running'
        order by coalesce(finished_at, updated_at) desc, started_at desc, job_id desc
       offset ?)`,
    [sourceId, SYNC_JOBS_KEPT],
  );
}

/** How many syncs of the source are running (0 or 1). */
export const runningJobs = (em: EntityManager, sourceId: string) =>
  em.count(ManagedSourceSyncJobEntity, { sourceId, status: 'running' });

/** Writes the running job row of an API sync; a second running job of the source is refused (409). */
export async function insertSyncJob(
  em: EntityManager,
  job: { jobId: string; sourceId: string; tenant: string; expected: string | null; requestedBy: string },
): Promise<void> {
  try {
    await sql(
      em,
      `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, expected_release_commit, requested_by, started_at, updated_at)
         values (?, ?, ?, 'running', 'queued', ?, ?, now(), now())`,
      [job.jobId, job.sourceId, job.tenant, job.expected, job.requestedBy],
    );
    await pruneSyncJobs(em, job.sourceId);
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException || (err as { code?: string }).code === '23505')
      throw new ConflictError(`A sync of managed source ${job.sourceId} is already running; wait for it to finish.`, {
        code: ManagedSourceCodes.MANAGED_SOURCE_SYNC_IN_PROGRESS,
      });
    throw err;
  }
}

/**
 * Writes the running job row of a scheduled sync under a given id; null when another sync of the
 * source runs or the source is pending deletion. A retry finding its own row answers `inserted: false`.
 */
export async function insertAutoSyncJob(
  em: EntityManager,
  jobId: string,
  sourceId: string,
): Promise<{ inserted: boolean } | null> {
  const rows = await sql<{ job_id: string }>(
    em,
    `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, expected_release_commit, requested_by, started_at, updated_at)
       select ?, id, tenant, 'running', 'queued', null, 'auto-sync', now(), now()
         from managed_sources where id = ? and deletion_state is null
       on conflict do nothing returning job_id`,
    [jobId, sourceId],
  );
  if (rows.length) {
    await pruneSyncJobs(em, sourceId);
    return { inserted: true };
  }
  const mine = await sql<{ job_id: string }>(em, 'select job_id from managed_source_sync_jobs where job_id = ?', [
    jobId,
  ]);
  return mine.length ? { inserted: false } : null;
}

/** Ends a job whose workflow could not be started (`SYNC_NOT_STARTED`). */
export async function markSyncNotStarted(em: EntityManager, jobId: string): Promise<void> {
  const ended = await sql<{ source_id: string }>(
    em,
    `update managed_source_sync_jobs set status = 'error', phase = 'done', error = ?, finished_at = now(), updated_at = now()
      where job_id = ? returning source_id`,
    [
      JSON.stringify({ code: ManagedSourceCodes.SYNC_NOT_STARTED, message: 'The sync workflow could not be started.' }),
      jobId,
    ],
  );
  for (const r of ended) await pruneSyncJobs(em, r.source_id);
}

/** Records the running job's phase (and files scanned so far), readable through sync-status. */
export async function setSyncPhase(em: EntityManager, jobId: string, phase: string, filesScanned?: number) {
  await sql(
    em,
    `update managed_source_sync_jobs set phase = ?, files_scanned = coalesce(?, files_scanned), updated_at = now()
       where job_id = ? and status = 'running'`,
    [phase, filesScanned ?? null, jobId],
  );
}

/** One job of one of the tenant's sources (404 otherwise). */
export async function loadSyncJob(em: EntityManager, tenant: string, sourceId: string, jobId: string) {
  const job = await em.findOne(ManagedSourceSyncJobEntity, { jobId, sourceId, tenant });
  if (!job) throw new NotFoundError(`No sync job ${jobId} of managed source ${sourceId}.`);
  return job;
}
