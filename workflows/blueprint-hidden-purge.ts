import { proxyActivities } from '@temporalio/workflow';
import type { BlueprintPurgeActivities } from '../activities/blueprint-purge.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { BlueprintHiddenPurgeResult } from './blueprint-hidden-purge-definitions.js';
import { trackOutcome } from './visibility.js';

const db = proxyActivities<BlueprintPurgeActivities>(ActivityProfiles.database);

/**
 * Purges hidden blueprints (deleted while missions referenced them) once none of their missions is
 * running or paused. Started by the Schedule `blueprint-hidden-purge` (ensured at worker start); the
 * activity is idempotent (each purge re-checks under the blueprint's lock).
 */
export async function blueprintHiddenPurgeWorkflow(): Promise<BlueprintHiddenPurgeResult> {
  return trackOutcome(
    'blueprintHiddenPurgeWorkflow',
    () => db.purgeHiddenBlueprints(),
    () => 'completed',
  );
}
