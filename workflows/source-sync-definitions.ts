// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * The managed-source sync workflow's id, input and result. The API imports this module to start it,
 * so it holds only definitions and plain types.
 */

/** One workflow per sync job; at most one runs per source (the job table's partial unique index). */
export const sourceSyncWorkflowId = (sourceId: string, jobId: string) => `source-sync/${sourceId}/${jobId}`;

export interface SourceSyncInput {
  sourceId: string;
  jobId: string;
  tenant: string;
}

export type SyncOutcome = 'up_to_date' | 'updated' | 'failed' | 'not_eligible';

/** The sync result (the spec's fields as far as part 1 produces them: no artifact hydration yet). */
export interface SourceSyncResult {
  outcome: SyncOutcome;
  source_id: string;
  job_id: string;
  release_ref: string | null;
  /** `tag` or `branch`; null when the ref was never resolved. */
  ref_kind: 'tag' | 'branch' | null;
  commit_sha: string | null;
  previous_commit_sha: string | null;
  files_checked_out: number;
  paths_excluded: number;
  files_scanned: number;
  /** Artifact candidates found per enabled scan type (found, not imported). */
  candidates: Record<string, number>;
  error_code: string | null;
  error: string | null;
  /** Set with `RELEASE_TAG_CHANGED_ON_REMOTE`. */
  moved_tag: { tag: string; anchored_commit_sha: string; remote_commit_sha: string | null } | null;
}
