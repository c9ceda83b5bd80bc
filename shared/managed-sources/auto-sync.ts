import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ManagedSourceEntity } from '../db/entities/index.js';
import { sql } from '../db/sql.js';
import type { AutoSyncCandidate } from '../../workflows/managed-source-lifecycle-definitions.js';
import type { SourceSyncResult } from '../../workflows/source-sync-definitions.js';
import { scheduledSources } from './sources.js';
import { insertAutoSyncJob } from './sync-job-store.js';

/**
 * The auto-sync check (schedule `managed-source-auto-sync`, `auto-sync-schedule.ts`): which sources
 * with `auto_sync` may sync now, their job rows, and the check recorded on each as `auto_sync_state`.
 */

/** Sources with `auto_sync` on and whether each may sync now (not pending deletion, no unacknowledged moved tag). */
export async function autoSyncCandidates(em: EntityManager, tenant?: string): Promise<AutoSyncCandidate[]> {
  const rows = await scheduledSources(em, tenant);
  return rows
    .filter((r) => r.settings.auto_sync)
    .map((r) => {
      const moved = (r.releasePoll as { moved_tag?: unknown } | null)?.moved_tag;
      const reason = r.deletionState ? 'pending_deletion' : moved ? 'moved_tag_unacknowledged' : null;
      return { sourceId: r.id, tenant: r.tenant, eligible: reason === null, ineligibleReason: reason };
    });
}

/** A job id (UUID-shaped) derived from `seed`: the same seed always names the same job. */
export function autoSyncJobId(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * The job row of a scheduled sync (null when a sync of the source is already running: skipped),
 * marked running on the source's `auto_sync_state`; a retry finding its own row answers it again.
 */
export async function startAutoSyncJob(em: EntityManager, jobId: string, sourceId: string): Promise<string | null> {
  const job = await insertAutoSyncJob(em, jobId, sourceId);
  if (!job) return null;
  if (!job.inserted) return jobId;
  await sql(
    em,
    `update managed_sources set auto_sync_state = coalesce(auto_sync_state, '{}'::jsonb) || ?::jsonb where id = ?`,
    [JSON.stringify({ running: true, job_id: jobId }), sourceId],
  );
  return jobId;
}

export interface AutoSyncCheck {
  candidate: AutoSyncCandidate;
  jobId: string | null;
  result: SourceSyncResult | null;
}

/** Records the check on the source as `auto_sync_state` (the spec's fields). */
export async function recordAutoSyncCheck(em: EntityManager, check: AutoSyncCheck): Promise<void> {
  const row = await em.findOne(ManagedSourceEntity, { id: check.candidate.sourceId });
  if (!row) return;
  const now = new Date().toISOString();
  const state: Record<string, unknown> = {
    ...((row.autoSyncState ?? {}) as Record<string, unknown>),
    running: false,
    eligible: check.candidate.eligible,
    ineligible_reason: check.candidate.ineligibleReason,
    checked_at: now,
    interval_seconds: 300,
  };
  if (!check.candidate.eligible) state.last_outcome = 'not_eligible';
  else if (!check.jobId) state.skipped_at = now;
  else if (check.result) Object.assign(state, syncFields(check.jobId, check.result));
  await sql(em, 'update managed_sources set auto_sync_state = ?::jsonb where id = ?', [JSON.stringify(state), row.id]);
}

/** What a scheduled sync did: outcome, what waits, failures by type. */
function syncFields(jobId: string, r: SourceSyncResult) {
  const byType: Record<string, number> = {};
  for (const [type, t] of Object.entries(r.hydrate))
    if (t.degraded_artifacts.length) byType[type] = t.degraded_artifacts.length;
  for (const e of r.hydrate_errors) byType[e.type] = (byType[e.type] ?? 0) + 1;
  return {
    job_id: jobId,
    last_outcome: r.outcome,
    commit_sha: r.commit_sha,
    waiting: {
      blueprint_versions: 0,
      agent_changes: r.agent_auto_apply.waiting,
      document_indexes: r.document_feed?.waiting ?? 0,
      flow_changes: r.flow_auto_apply?.waiting ?? 0,
      role_changes: r.role_auto_apply.waiting,
    },
    failures: { count: Object.values(byType).reduce((a, b) => a + b, 0), by_type: byType },
    degraded: r.degraded_artifact_count,
    exceptions: r.outcome === 'failed' && r.error ? [r.error] : [],
    error_code: r.error_code,
    role_notes: (r.hydrate.roles?.degraded_artifacts ?? []).map((d) => `${d.artifact_id}: ${d.reason}`),
  };
}
