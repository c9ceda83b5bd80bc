import { proxyActivities } from '@temporalio/workflow';
import type { TrackerActivities } from '../activities/tracker.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { TrackerPollInput, TrackerPollResult } from './tracker-poll-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

// Reads are repeatable and every write is idempotent (ledger events by provider stamp, runs by issue key).
const tracker = proxyActivities<TrackerActivities>(ActivityProfiles.externalIdempotent);

/**
 * One poll of the issue tracker or the service desk, started by its Schedule
 * (`tracker-poll-issue-tracker`, `tracker-poll-service-desk`) or by `poll-now`. The activity
 * records the poll state, reads the window and feeds the ledger; a tracker failure is an outcome
 * (`ok: false`, kept in the poll state), not a workflow failure: the next tick polls again.
 */
export async function trackerPollWorkflow(input: TrackerPollInput): Promise<TrackerPollResult> {
  return trackFailure('trackerPollWorkflow', async () => {
    const result = await tracker.trackerPoll(input);
    // A tracker failure completes the workflow (the next tick polls again): the status shows it.
    setLifecycleStatus('trackerPollWorkflow', result.ok ? 'completed' : 'failed');
    return result;
  });
}
