import { fileTicket, finishSession, followRun, startRun } from '../shared/demo/ticket-rca.js';
import type { TicketRcaInput } from '../workflows/ticket-rca-definitions.js';
import type { ActivityDeps } from './deps.js';

/** The ticket-RCA vignette's steps (shared/demo/ticket-rca.ts); each writes only its attempt's row. */
export function createTicketRcaActivities(deps: ActivityDeps) {
  return {
    ticketRcaFileTicket: (input: TicketRcaInput) => fileTicket(deps, input),
    ticketRcaStartRun: (input: TicketRcaInput & { ticketKey: string }) => startRun(deps, input),
    ticketRcaFollowRun: (input: TicketRcaInput & { runId: string }) => followRun(deps, input),
    ticketRcaFinish: (
      input: TicketRcaInput & {
        state: 'completed' | 'failed';
        code?: string | undefined;
        message?: string | undefined;
      },
    ) => finishSession(deps, input),
  };
}

export type TicketRcaActivities = ReturnType<typeof createTicketRcaActivities>;
