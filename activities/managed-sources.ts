import * as lifecycle from './managed-sources/lifecycle.js';
import * as sync from './managed-sources/sync.js';
import type { ManagedSourceDeps } from './managed-sources/deps.js';
import { withHeartbeat } from './heartbeat.js';

/**
 * The managed-source activities, by the names workflows call them (`source-sync`, `source-delete`,
 * `managed-source-auto-sync`; recorded histories replay these names: never rename one). Each is a
 * thin effect in `activities/managed-sources/` over the area's services in shared/managed-sources/.
 */
// The sync outcome rules, where tests/unit/managed-source-hydration.test.ts reads them.
export { emptyHydration, syncOutcome } from '../shared/managed-sources/sync-result.js';

/**
 * How often the Git activities heartbeat, whatever they wait on (a fetch held by a slow remote, a long
 * checkout): well inside `ActivityProfiles.gitNetwork`'s 10 s heartbeat timeout, so only a dead
 * worker misses it.
 */
const GIT_HEARTBEAT_MS = 2_000;

/** Every managed-source activity, bound to its dependencies (the keys are the activity names). */
export function createManagedSourceActivities(deps: ManagedSourceDeps) {
  const bind =
    <I, O>(activity: (deps: ManagedSourceDeps, input: I) => O) =>
    (input: I) =>
      activity(deps, input);
  /** The activities `source-sync` runs with a heartbeat timeout (`gitNetwork`, the record's `databaseBatch`): they heartbeat throughout. */
  const beating =
    <I, O>(activity: (deps: ManagedSourceDeps, input: I) => Promise<O>) =>
    (input: I) =>
      withHeartbeat(GIT_HEARTBEAT_MS, () => activity(deps, input));
  return {
    managedSyncResolve: beating(sync.managedSyncResolve),
    managedSyncFetch: beating(sync.managedSyncFetch),
    managedSyncScan: beating(sync.managedSyncScan),
    managedDocumentFeedPlan: beating(sync.managedDocumentFeedPlan),
    managedDocumentFeedSummary: bind(sync.managedDocumentFeedSummary),
    managedSyncPrepare: beating(sync.managedSyncPrepare),
    // A local activity (source-sync's first workflow task): no heartbeat.
    managedSyncQuick: bind(sync.managedSyncQuick),
    managedSyncRecord: beating(sync.managedSyncRecord),
    managedSyncFinish: bind(sync.managedSyncFinish),
    managedDeleteCleanup: bind(lifecycle.managedDeleteCleanup),
    managedDeleteRemove: bind(lifecycle.managedDeleteRemove),
    autoSyncList: bind(lifecycle.autoSyncList),
    autoSyncStartJob: bind(lifecycle.autoSyncStartJob),
    autoSyncRecord: bind(lifecycle.autoSyncRecord),
    managedReleasePoll: bind(lifecycle.managedReleasePoll),
    managedSyncFail: bind(sync.managedSyncFail),
  };
}

export type ManagedSourceActivities = ReturnType<typeof createManagedSourceActivities>;
