import { proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { EchoActivities } from '../activities/echo.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import type { EchoInput, EchoResult } from './echo-definitions.js';
import { trackFailure } from './visibility.js';

const { recordEcho } = proxyActivities<EchoActivities>(ActivityProfiles.database);

/**
 * The smallest real lifecycle: API → Temporal → worker activity → PostgreSQL row → result.
 * It proves the backbone end to end and gives the replay suite a recorded history.
 */
export async function echoWorkflow(input: EchoInput): Promise<EchoResult> {
  return trackFailure('echoWorkflow', async () => {
    const { workflowId } = workflowInfo();
    const row = await recordEcho({ ...input, workflowId });
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'completed' }]);
    return { jobId: input.jobId, message: input.message, workflowId, recordedAt: row.recordedAt };
  });
}
