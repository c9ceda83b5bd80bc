import { condition, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { BlueprintWipActivities } from '../activities/blueprint-wip.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import {
  wipSessionClosedSignal,
  type BlueprintWipResult,
  type BlueprintWipWorkflowInput,
} from './blueprint-wip-definitions.js';
import { trackFailure } from './visibility.js';

const db = proxyActivities<BlueprintWipActivities>(ActivityProfiles.database);

/**
 * One blueprint WIP session's lifetime (`blueprint-wip/<session_id>`): a durable timer of the TTL.
 * A commit or discard through the API signals it and it ends; when the timer fires first, the
 * activity closes the session as `expired` (and drops its branch) unless it was closed meanwhile.
 */
export async function blueprintWipSessionWorkflow(input: BlueprintWipWorkflowInput): Promise<BlueprintWipResult> {
  return trackFailure('blueprintWipSessionWorkflow', async () => {
    let closed = false;
    setHandler(wipSessionClosedSignal, ({ status }) => {
      closed = true;
      upsertSearchAttributes([{ key: SearchAttributes.status, value: status }]);
    });
    if (await condition(() => closed, `${input.ttlSeconds} seconds`)) return { outcome: 'closed' };
    const { expired } = await db.expireBlueprintWipSession({ sessionId: input.sessionId });
    upsertSearchAttributes([{ key: SearchAttributes.status, value: expired ? 'expired' : 'closed' }]);
    return { outcome: expired ? 'expired' : 'already_closed' };
  });
}
