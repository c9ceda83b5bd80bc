import { isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import type { TicketRcaActivities } from '../activities/ticket-rca.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { TicketRcaInput, TicketRcaState } from './ticket-rca-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';
import { DemoCodes } from '../shared/demo/error-codes.js';

/**
 * A reset cancels this workflow; an activity in flight is waited for (WAIT_CANCELLATION_COMPLETED), so
 * once the workflow has closed no step of the attempt still runs and the reset sees every ticket and
 * run it made.
 */
const db = proxyActivities<TicketRcaActivities>(ActivityProfiles.databaseAwaitingCancellation);
/** Filing a ticket is not idempotent on the tracker: a few attempts for a lost connection, not more. */
const tracker = proxyActivities<TicketRcaActivities>(ActivityProfiles.externalFewAttemptsAwaitingCancellation);

/**
 * The ticket-RCA vignette of one presenter session (`ticket-rca/<tenant>/<presenter_session_id>`):
 * `preparing` (file the ticket, start the code-agent run) → `running` (the run's status followed on
 * timers: 1 s, doubling to 15 s) → `completed` when the run finished, else `failed`. A reset cancels it
 * and clears the session itself.
 */
export async function ticketRcaWorkflow(input: TicketRcaInput): Promise<TicketRcaState | 'cancelled'> {
  return trackFailure('ticketRcaWorkflow', async () => {
    const state = await runVignette(input);
    setLifecycleStatus('ticketRcaWorkflow', state);
    return state;
  });
}

async function runVignette(input: TicketRcaInput): Promise<TicketRcaState | 'cancelled'> {
  try {
    const filed = await tracker.ticketRcaFileTicket(input);
    if (!filed.ok) {
      await db.ticketRcaFinish({ ...input, state: 'failed', code: filed.code, message: filed.message });
      return 'failed';
    }
    const started = await db.ticketRcaStartRun({ ...input, ticketKey: filed.ticketKey });
    if (!started.ok) {
      await db.ticketRcaFinish({ ...input, state: 'failed', code: started.code, message: started.message });
      return 'failed';
    }
    setLifecycleStatus('ticketRcaWorkflow', 'running');
    let delay = 1;
    for (;;) {
      const run = await db.ticketRcaFollowRun({ ...input, runId: started.runId });
      if (run.terminal) {
        const state = run.status === 'finished' ? 'completed' : 'failed';
        await tracker.ticketRcaFinish({
          ...input,
          state,
          ...(state === 'failed'
            ? { code: DemoCodes.CODE_AGENT_RUN_FAILED, message: `The code-agent run ended ${run.status}.` }
            : {}),
        });
        return state;
      }
      await sleep(delay * 1000);
      delay = Math.min(delay * 2, 15);
    }
  } catch (err) {
    if (isCancellation(err)) return 'cancelled';
    throw err;
  }
}
