import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { ManagedSourceActivities } from '../activities/managed-sources.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { SourceSyncInput, SourceSyncResult } from './source-sync-definitions.js';

const db = proxyActivities<ManagedSourceActivities>(ActivityProfiles.database);
/** Git over the network: transient failures retried a few times; classified ones (credentials, refs) are not. */
const gitOps = proxyActivities<ManagedSourceActivities>({
  ...ActivityProfiles.externalIdempotent,
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '1 minute',
});

/**
 * One sync of a managed source: resolve the release ref on the remote (moved tags refused), fetch
 * the commit shallowly and check it out with `checkout_exclude` applied, scan the working tree,
 * record the result. Every phase writes the job row, so progress is readable while it runs; any
 * failure ends the job `error` with a classified code (never a stuck `running` job).
 */
export async function sourceSyncWorkflow(input: SourceSyncInput): Promise<SourceSyncResult> {
  try {
    const resolved = await gitOps.managedSyncResolve(input);
    if (resolved.refusal) return await db.managedSyncFinish({ ...input, result: resolved.refusal });
    const checkout = await gitOps.managedSyncFetch({ ...input, resolved: resolved.ref });
    const scan = await gitOps.managedSyncScan(input);
    return await db.managedSyncRecord({ ...input, resolved: resolved.ref, checkout, scan });
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const code =
      cause instanceof ApplicationFailure && cause.type && /^[A-Z_]+$/.test(cause.type) ? cause.type : 'SYNC_FAILED';
    const message = cause instanceof Error ? cause.message : 'The sync failed.';
    return await db.managedSyncFail({ ...input, errorCode: code, message });
  }
}
