// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { IngestInput } from './ingest-definitions.js';
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
  /** The caller's apply requests with their preview pins (absent: preview only, unless auto_promote_on_sync). */
  apply?: SyncApplyRequest;
  /** Who asked: `api` (a caller) or `auto_sync` (the schedule). */
  trigger?: 'api' | 'auto_sync';
  /** `overwrite_indexes`: the feed adopts conflicting hand-made indexes (absent: conflicts wait). */
  overwriteIndexes?: boolean;
}

export interface SyncApplyRequest {
  apply_agent_changes?: boolean;
  expected_agent_commit?: string;
  expected_agent_plan_hash?: string;
  apply_role_changes?: boolean;
  expected_role_commit?: string;
  expected_role_plan_hash?: string;
}

export type SyncOutcome =
  'up_to_date' | 'updated' | 'updated_awaiting_promotion' | 'updated_with_errors' | 'failed' | 'not_eligible';

export interface DegradedArtifactView {
  artifact_id: string;
  reason: string;
}

export interface PreviewView {
  summary: string;
  changes: Array<{ action: 'create' | 'update' | 'delete'; artifact_id: string; fields?: string[] }>;
  commit_sha: string;
  plan_hash: string;
}

/** Per hydrated type: manifests found, imported by this sync, changes waiting for confirmation, degraded ones. */
export interface HydrateTypeView {
  found: number;
  applied: number;
  waiting: number;
  degraded_artifacts: DegradedArtifactView[];
}

/** Hydration fields of the sync result (the spec's names). */
export interface HydrationResult {
  partial_success: boolean;
  degraded_artifact_count: number;
  hydrate_errors: Array<{ type: string; code: string; message: string }>;
  hydrate: Record<string, HydrateTypeView>;
  agent_preview: PreviewView | null;
  role_preview: PreviewView | null;
  requires_agent_apply_confirmation: boolean;
  requires_role_apply_confirmation: boolean;
  agent_auto_apply: { applied: number; waiting: number };
  role_auto_apply: { applied: number; waiting: number };
  /** Flow changes promoted by this sync (auto_promote_on_sync) and left pending (absent in older results). */
  flow_auto_apply?: { applied: number; waiting: number };
}

/** The sync result: Git fields, then hydration (zeros and nulls when the sync failed before it). */
export interface SourceSyncResult extends HydrationResult {
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
  /** The document feed into indexes (`document_indexes` enabled; absent otherwise and in older results). */
  document_feed?: DocumentFeedSummary;
  /** Set with `RELEASE_TAG_CHANGED_ON_REMOTE`. */
  moved_tag: { tag: string; anchored_commit_sha: string; remote_commit_sha: string | null } | null;
}

/** The spec's "Document feed summary per index" (one index per first-level folder of `documents_root`). */
export interface DocumentFeedIndexView {
  index_name: string;
  folder: string;
  /** Git-backed documents of this source in the index. */
  count: number;
  /** Every document of the index: `count` plus `index_only_doc_count` (added to the index directly). */
  index_doc_count: number;
  index_only_doc_count: number;
  /** Knowledge-base edits staged for this folder, waiting for `open_kb_pull_request`. */
  pending_change_count: number;
  /** Who staged the pending edits (the first proposer by path), null when none. */
  proposer: string | null;
  /** The newest knowledge-base pull request (`kb.pull_request.v1` proposal) changing a file under the folder. */
  pr: DocumentFeedPr;
  /** True once a sync with `overwrite_indexes` adopted this (hand-made) index; never silently. */
  adopted: boolean;
  /** 1 when an index of this name exists and is not fed by this source (the folder is then not fed). */
  name_conflict_count: number;
  requires_overwrite_ack: boolean;
  /** This sync's changes: documents ingested (added or updated), removed, unchanged. */
  ingested: number;
  removed: number;
  unchanged: number;
}

/** The pull request of a feed index: proposal, its status, the receipt's `pr_url` (null until opened), branch. */
export type DocumentFeedPr = { proposal_id: string; status: string; url: string | null; branch: string } | null;

export interface DocumentFeedSummary {
  indexes: DocumentFeedIndexView[];
  /** Git-backed documents over the fed indexes (managed only). */
  total_count: number;
  total_index_doc_count: number;
  /** Indexes waiting for a decision (a name conflict): the `waiting.document_indexes` count. */
  waiting: number;
}

/** What the feed's plan activity answers: per fed index the ingestion to run as a child workflow. */
export interface DocumentFeedPlan {
  /** False when the source does not scan `document_indexes` (nothing planned, no summary). */
  enabled: boolean;
  ingests: Array<{ indexName: string; workflowId: string; input: IngestInput }>;
  /** Per folder the planning counts (removed, unchanged, conflict), carried to the summary. */
  folders: Array<{ folder: string; index_name: string; removed: number; unchanged: number; conflict: boolean }>;
}
