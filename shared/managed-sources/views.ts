import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { ManagedSourceRow } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import { runningJobs, type SyncJobRow } from './sync-job-store.js';

/** Wire shapes of managed sources and their sync jobs and results (routes and tools answer these). */
const Degraded = z.object({ artifact_id: z.string(), reason: z.string() });
const PreviewView = z
  .object({
    summary: z.string(),
    changes: z.array(
      z.object({
        action: z.enum(['create', 'update', 'delete']),
        artifact_id: z.string(),
        fields: z.array(z.string()).optional(),
      }),
    ),
    commit_sha: z.string(),
    plan_hash: z.string(),
  })
  .nullable();
const AutoApply = z.object({ applied: z.number(), waiting: z.number() });

const DocumentFeedView = z.object({
  indexes: z.array(
    z.object({
      index_name: z.string(),
      folder: z.string(),
      count: z.number(),
      index_doc_count: z.number(),
      index_only_doc_count: z.number(),
      pending_change_count: z.number(),
      proposer: z.string().nullable(),
      pr: z
        .object({
          proposal_id: z.string(),
          status: z.string().describe('The Action Review proposal status'),
          url: z.string().nullable().describe('The pull request URL (the receipt `pr_url`), null until opened'),
          branch: z.string().describe('`kb-edit/<proposal_id>`'),
        })
        .nullable()
        .describe('The newest knowledge-base pull request proposal changing a file under the folder; null when none'),
      adopted: z.boolean().describe('A hand-made index adopted by a sync with `overwrite_indexes`'),
      name_conflict_count: z.number(),
      requires_overwrite_ack: z.boolean(),
      ingested: z.number(),
      removed: z.number(),
      unchanged: z.number(),
    }),
  ),
  total_count: z.number(),
  total_index_doc_count: z.number(),
  waiting: z.number(),
});

/** A sync's result (`last_sync`, sync-status `result`, the synchronous sync's answer). */
export const SyncResultView = z
  .object({
    outcome: z.enum([
      'up_to_date',
      'updated',
      'updated_awaiting_promotion',
      'updated_with_errors',
      'failed',
      'not_eligible',
    ]),
    source_id: z.string(),
    job_id: z.string(),
    release_ref: z.string().nullable(),
    ref_kind: z.enum(['tag', 'branch']).nullable(),
    commit_sha: z.string().nullable(),
    previous_commit_sha: z.string().nullable(),
    files_checked_out: z.number(),
    paths_excluded: z.number(),
    files_scanned: z.number(),
    candidates: z.record(z.string(), z.number()),
    error_code: z.string().nullable(),
    error: z.string().nullable(),
    moved_tag: z
      .object({ tag: z.string(), anchored_commit_sha: z.string(), remote_commit_sha: z.string().nullable() })
      .nullable(),
    // Hydration (absent in results recorded before it existed).
    partial_success: z.boolean().optional(),
    degraded_artifact_count: z.number().optional(),
    hydrate_errors: z.array(z.object({ type: z.string(), code: z.string(), message: z.string() })).optional(),
    hydrate: z
      .record(
        z.string(),
        z.object({
          found: z.number(),
          applied: z.number(),
          waiting: z.number(),
          degraded_artifacts: z.array(Degraded),
        }),
      )
      .optional(),
    agent_preview: PreviewView.optional(),
    role_preview: PreviewView.optional(),
    requires_agent_apply_confirmation: z.boolean().optional(),
    requires_role_apply_confirmation: z.boolean().optional(),
    agent_auto_apply: AutoApply.optional(),
    role_auto_apply: AutoApply.optional(),
    flow_auto_apply: AutoApply.optional(),
    document_feed: DocumentFeedView.optional().describe(
      'Documents fed into indexes (document_indexes enabled): one index per first-level folder of documents_root, named after the folder',
    ),
    finished_at: z.string().optional(),
  })
  .meta({ id: 'ManagedSourceSyncResult' });

/** A sync job started in the background (`sync_job` of an upsert, the sync-async answer). */
export const SyncJobRef = z.object({
  job_id: z.string(),
  status: z.literal('running'),
  expected_release_commit: z.string().nullable(),
});

/** A sync job as sync-status answers it. */
export const JobView = z
  .object({
    job_id: z.string(),
    source_id: z.string(),
    status: z.enum(['running', 'complete', 'error']),
    phase: z.string(),
    files_scanned: z.number(),
    expected_release_commit: z.string().nullable(),
    result: SyncResultView.nullable(),
    error: z.object({ code: z.string(), message: z.string().nullable() }).nullable(),
    started_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'ManagedSourceSyncJob' });

/** A managed source as answered (credentials masked). */
export const SourceView = z
  .object({
    source_id: z.string(),
    name: z.string(),
    repo_url: z.string(),
    release_ref: z.string().nullable(),
    scan_types_enabled: z.array(z.string()),
    include: z.array(z.string()),
    exclude: z.array(z.string()),
    checkout_exclude: z.array(z.string()),
    agents_root: z.string().nullable(),
    flows_root: z.string().nullable(),
    documents_root: z.string().nullable(),
    auto_sync: z.boolean(),
    auto_promote_on_sync: z.boolean(),
    credentials: z
      .object({
        kind: z.enum(['token', 'basic', 'oauth']),
        username: z.string().nullable(),
        configured: z.literal(true),
        expires_at: z
          .string()
          .nullable()
          .describe('OAuth grants: when the grant lapses (null: not known or not OAuth)'),
      })
      .nullable(),
    synced_commit_sha: z.string().nullable(),
    release_poll: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        'Release tracking; null when skill revision tracking is off (release_ref is a branch or unset; on when it names a tag). Fields: `checked_at` (last successful poll or tag sync), `skipped_at` (poll skipped: deletion pending or a sync running), `error` ({code, message, at} of the last failed poll; null after a good one), `new_release` ({tag, commit_sha}: the newest version tag `v1.2.3`/`1.2.3` newer than release_ref; null when none), `moved_tag` ({tag, anchored_commit_sha, remote_commit_sha, detected_at}), `upgrade_refusal` ({tag, error_code, message, at}: an upgrade to a not-yet-synced tag whose sync failed or whose release job ended SKILL_RELEASE_*; cleared by a good sync). Polled by the auto-sync check every 300 s.',
      ),
    auto_sync_state: z.record(z.string(), z.unknown()).nullable(),
    deletion_state: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('Set while deletion is pending (`state: pending_deletion`, cleanup `attempts`, `last_error`)'),
    last_sync: SyncResultView.nullable(),
    sync_running: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'ManagedSource' });

/** The answer to a create or change of a source, with the sync `sync_now` asked for. */
export const UpsertEnvelope = z.object({
  success: z.literal(true),
  source: SourceView,
  sync: SyncResultView.nullable(),
  sync_job: SyncJobRef.optional(),
  warning: z.string().optional(),
  warning_code: z.string().optional(),
  warning_action: z.string().optional(),
});

export type SyncResultWire = z.output<typeof SyncResultView>;

/** A source as answered: settings, credentials masked, release tracking, last sync, whether a sync runs. */
export async function sourceView(em: EntityManager, row: ManagedSourceRow) {
  const running = await runningJobs(em, row.id);
  return {
    source_id: row.id,
    name: row.name,
    repo_url: row.repoUrl,
    release_ref: row.releaseRef,
    ...row.settings,
    credentials: credentialsView(row),
    synced_commit_sha: row.syncedCommitSha,
    release_poll: row.releasePoll,
    auto_sync_state: row.autoSyncState,
    deletion_state: row.deletionState,
    last_sync: (row.lastSync as SyncResultWire | null) ?? null,
    sync_running: running > 0,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
  };
}

/** The credentials as answered: kind, user name and OAuth expiry; never the secret. */
function credentialsView(row: ManagedSourceRow) {
  if (!row.credentialKind) return null;
  return {
    kind: row.credentialKind,
    username: row.credentialUsername,
    configured: true as const,
    expires_at: row.credentialExpiresAt ? toIso(row.credentialExpiresAt) : null,
  };
}

/** A sync job as answered by sync-status. */
export function syncJobView(job: SyncJobRow) {
  return {
    job_id: job.jobId,
    source_id: job.sourceId,
    status: job.status,
    phase: job.phase,
    files_scanned: job.filesScanned,
    expected_release_commit: job.expectedReleaseCommit,
    result: (job.result as SyncResultWire | null) ?? null,
    error: (job.error as { code: string; message: string | null } | null) ?? null,
    started_at: toIso(job.startedAt),
    finished_at: job.finishedAt ? toIso(job.finishedAt) : null,
  };
}

/** Sources as answered, in order. */
export async function sourceViews(em: EntityManager, rows: ManagedSourceRow[]) {
  const views = [];
  for (const row of rows) views.push(await sourceView(em, row));
  return views;
}
