import { proxyActivities } from '@temporalio/workflow';
import type { ManagedSourceActivities } from '../activities/managed-sources.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { SourceDeleteInput, SourceDeleteResult } from './managed-source-lifecycle-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

const db = proxyActivities<ManagedSourceActivities>(ActivityProfiles.database);
/** Cleanup is retried until it succeeds (backing off to a minute); each failure is recorded on the source. */
const cleanup = proxyActivities<ManagedSourceActivities>(ActivityProfiles.cleanupUntilDone);

/**
 * Deletion of a managed source: the API has marked it pending deletion (syncs refused with
 * SOURCE_DELETE_CLEANUP_PENDING); this removes what it imported (agents, roles) with retries, then
 * the row, its jobs and its files.
 */
export async function sourceDeleteWorkflow(input: SourceDeleteInput): Promise<SourceDeleteResult> {
  return trackFailure('sourceDeleteWorkflow', async () => {
    const removed = await cleanup.managedDeleteCleanup(input);
    await db.managedDeleteRemove(input);
    setLifecycleStatus('sourceDeleteWorkflow', 'deleted');
    return { source_id: input.sourceId, deleted: true, removed_agents: removed.agents, removed_roles: removed.roles };
  });
}
