import { ParentClosePolicy, executeChild, patched, proxyActivities } from '@temporalio/workflow';
import type { ManagedSourceActivities } from '../activities/managed-sources.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { AutoSyncInput, AutoSyncSummary } from './managed-source-lifecycle-definitions.js';
import { sourceSyncWorkflowId, type SourceSyncInput, type SourceSyncResult } from './source-sync-definitions.js';
import { childSearchAttributes, setLifecycleStatus, trackFailure } from './visibility.js';

const db = proxyActivities<ManagedSourceActivities>(ActivityProfiles.database);
const remote = proxyActivities<ManagedSourceActivities>(ActivityProfiles.externalIdempotent);

/**
 * The auto-sync check (started by the `managed-source-auto-sync` Schedule every 300 s): every source
 * with `auto_sync` is checked; an eligible one is synced as a child `source-sync/<source_id>/<job_id>`
 * (one job row first, so a sync already running is skipped, never doubled), and the outcome is
 * recorded as the source's `auto_sync_state`. Sources are synced one after another. Then every source
 * tracking a release tag is polled for a newer release (`release_poll`; patch `release-poll`).
 */
export async function managedSourceAutoSyncWorkflow(input: AutoSyncInput = {}): Promise<AutoSyncSummary> {
  return trackFailure('managedSourceAutoSyncWorkflow', async () => {
    const summary: AutoSyncSummary = { checked: 0, synced: 0, skipped: 0, not_eligible: 0 };
    let failedSyncs = 0;
    const candidates = await db.autoSyncList(input);
    for (const c of candidates) {
      summary.checked++;
      if (!c.eligible) {
        summary.not_eligible++;
        await db.autoSyncRecord({ candidate: c, jobId: null, result: null });
        continue;
      }
      const jobId = await db.autoSyncStartJob(c);
      if (!jobId) {
        summary.skipped++;
        await db.autoSyncRecord({ candidate: c, jobId: null, result: null });
        continue;
      }
      const args: SourceSyncInput = { sourceId: c.sourceId, jobId, tenant: c.tenant, trigger: 'auto_sync' };
      const result = await executeChild<(i: SourceSyncInput) => Promise<SourceSyncResult>>('sourceSyncWorkflow', {
        workflowId: sourceSyncWorkflowId(c.sourceId, jobId),
        args: [args],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        ...childSearchAttributes('sourceSyncWorkflow', { tenant: c.tenant, resourceId: c.sourceId, status: 'running' }),
      });
      summary.synced++;
      if (result.outcome === 'failed') failedSyncs++;
      await db.autoSyncRecord({ candidate: c, jobId, result });
    }
    if (patched('release-poll')) await remote.managedReleasePoll(input);
    setLifecycleStatus('managedSourceAutoSyncWorkflow', failedSyncs > 0 ? 'completed_with_failures' : 'completed');
    return summary;
  });
}
