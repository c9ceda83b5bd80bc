import type { EntityManager } from '@mikro-orm/postgresql';
import {
  ManagedSourceEntity,
  ManagedSourceSyncJobEntity,
  type ManagedSourceRow,
  type ManagedSourceSyncJobRow,
} from '../db/entities/index.js';
import type {
  HydrationResult,
  SourceSyncInput,
  SourceSyncResult,
  SyncOutcome,
} from '../../workflows/source-sync-definitions.js';
import { parseVersion } from './release-poll.js';
import { ManagedSourceCodes } from './error-codes.js';
import { pruneSyncJobs } from './sync-job-store.js';

/**
 * The end of a sync: its result (outcome, Git fields, hydration), recorded on the job and on the
 * source (last sync, release tracking) once, whatever activity ends it (recorded, refused, failed).
 */
type JobEnd = { code: string; message: string };

/** Hydration fields before (or without) hydration. */
export function emptyHydration(): HydrationResult {
  return {
    partial_success: false,
    degraded_artifact_count: 0,
    hydrate_errors: [],
    hydrate: {},
    agent_preview: null,
    role_preview: null,
    requires_agent_apply_confirmation: false,
    requires_role_apply_confirmation: false,
    agent_auto_apply: { applied: 0, waiting: 0 },
    role_auto_apply: { applied: 0, waiting: 0 },
    flow_auto_apply: { applied: 0, waiting: 0 },
  };
}

/** A `failed` result naming nothing yet: the base every result of the job starts from. */
export function emptySyncResult(input: SourceSyncInput, row: ManagedSourceRow | null): SourceSyncResult {
  return {
    outcome: 'failed',
    source_id: input.sourceId,
    job_id: input.jobId,
    release_ref: row?.releaseRef ?? null,
    ref_kind: null,
    commit_sha: null,
    previous_commit_sha: row?.syncedCommitSha ?? null,
    files_checked_out: 0,
    paths_excluded: 0,
    files_scanned: 0,
    candidates: {},
    error_code: null,
    error: null,
    moved_tag: null,
    ...emptyHydration(),
  };
}

/**
 * A background release job (one started with an expected release commit) ends met only when the
 * sync result and the source both name that commit: a sync that brought another commit (the release
 * ref moved after the job started) ends `SKILL_RELEASE_CHANGED_DURING_SYNC`; one that could not bring
 * it onto the source (refused, failed) ends `SKILL_RELEASE_STILL_PENDING`.
 */
export function releaseCheck(
  expected: string | null,
  result: SourceSyncResult,
  sourceCommit: string | null,
): JobEnd | null {
  if (!expected) return null;
  if (result.outcome !== 'failed' && result.commit_sha && result.commit_sha !== expected)
    return {
      code: ManagedSourceCodes.SKILL_RELEASE_CHANGED_DURING_SYNC,
      message: `The release changed while the job ran: it expected commit ${expected}, the sync brought ${result.commit_sha}. Review the new release and sync again.`,
    };
  if (result.commit_sha !== expected || sourceCommit !== expected)
    return {
      code: ManagedSourceCodes.SKILL_RELEASE_STILL_PENDING,
      message: `The release commit ${expected} is still pending: the sync ended ${result.outcome}${result.error_code ? ` (${result.error_code}: ${result.error})` : ''} and the source names ${sourceCommit ?? 'no commit'}.`,
    };
  return null;
}

/** The outcome from what the sync did: errors and waiting changes are named, a plain change is `updated`. */
export function syncOutcome(gitChanged: boolean, h: HydrationResult): SyncOutcome {
  const flows = h.flow_auto_apply ?? { applied: 0, waiting: 0 };
  const applied = h.agent_auto_apply.applied + h.role_auto_apply.applied + flows.applied;
  const waiting = h.agent_auto_apply.waiting + h.role_auto_apply.waiting + flows.waiting;
  const changed = gitChanged || applied > 0;
  if (changed && (h.degraded_artifact_count > 0 || h.hydrate_errors.length > 0)) return 'updated_with_errors';
  if (waiting > 0) return 'updated_awaiting_promotion';
  return changed ? 'updated' : 'up_to_date';
}

/**
 * Ends the job (`complete`, or `error` for a failed outcome or a missed release) and records the
 * result on the source with `sourcePatch`; idempotent: a job already ended answers its recorded result.
 */
export async function finishSync(
  em: EntityManager,
  input: SourceSyncInput,
  result: SourceSyncResult,
  sourcePatch: Partial<ManagedSourceRow> = {},
): Promise<SourceSyncResult> {
  return em.transactional(async (tx) => {
    const job = await tx.findOne(ManagedSourceSyncJobEntity, { jobId: input.jobId });
    if (job && job.status !== 'running') return (job.result as unknown as SourceSyncResult) ?? result;
    const now = new Date();
    const source = await tx.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
    const anchoredBefore = source?.tagAnchor ?? null;
    if (source) {
      Object.assign(source, sourcePatch, { lastSync: { ...result, finished_at: now.toISOString() }, updatedAt: now });
      recordReleasePoll(source, result, now);
    }
    const release = job ? releaseCheck(job.expectedReleaseCommit, result, source?.syncedCommitSha ?? null) : null;
    if (source?.releaseRef && !result.moved_tag) recordUpgrade(source, result, release, anchoredBefore?.tag, now);
    if (job) {
      closeJob(job, result, release, now);
      await tx.flush();
      await pruneSyncJobs(tx, input.sourceId);
    }
    return result;
  });
}

/** Release tracking after a sync: a moved tag recorded, off for a branch, checked for a tag. */
function recordReleasePoll(source: ManagedSourceRow, result: SourceSyncResult, now: Date): void {
  if (result.moved_tag) {
    source.releasePoll = {
      ...(source.releasePoll ?? {}),
      checked_at: now.toISOString(),
      moved_tag: { ...result.moved_tag, detected_at: now.toISOString() },
    };
  } else if (result.outcome !== 'failed' && result.ref_kind === 'branch') {
    // A branch release: skill revision tracking is off.
    source.releasePoll = null;
  } else if (result.outcome !== 'failed') {
    source.releasePoll = { ...(source.releasePoll ?? {}), checked_at: now.toISOString(), moved_tag: null };
  }
}

/**
 * An upgrade to a release tag not yet synced that did not land is recorded (`upgrade_refusal`) until
 * a sync of it succeeds; a good tag sync clears it (and `new_release` when that release landed).
 */
function recordUpgrade(
  source: ManagedSourceRow,
  result: SourceSyncResult,
  release: JobEnd | null,
  anchoredTag: string | undefined,
  now: Date,
): void {
  const releaseRef = source.releaseRef!;
  const poll = (source.releasePoll ?? {}) as Record<string, unknown>;
  const upgrading = parseVersion(releaseRef) !== null && anchoredTag !== releaseRef;
  if (upgrading && (result.outcome === 'failed' || release)) {
    source.releasePoll = {
      ...poll,
      upgrade_refusal: {
        tag: releaseRef,
        error_code: release?.code ?? result.error_code ?? 'SYNC_FAILED',
        message: release?.message ?? result.error ?? 'The sync failed.',
        at: now.toISOString(),
      },
    };
  } else if (result.outcome !== 'failed' && !release && result.ref_kind === 'tag') {
    const landed = (poll.new_release as { tag?: string } | null | undefined)?.tag === releaseRef;
    source.releasePoll = { ...poll, upgrade_refusal: null, ...(landed ? { new_release: null } : {}) };
  }
}

function closeJob(job: ManagedSourceSyncJobRow, result: SourceSyncResult, release: JobEnd | null, now: Date): void {
  job.status = result.outcome === 'failed' || release ? 'error' : 'complete';
  job.phase = 'done';
  job.filesScanned = result.files_scanned;
  job.result = result as unknown as Record<string, unknown>;
  job.error = release ?? (result.error_code ? { code: result.error_code, message: result.error } : null);
  job.updatedAt = now;
  job.finishedAt = now;
}
