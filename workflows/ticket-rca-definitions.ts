// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { DemoCodes } from '../shared/demo/error-codes.js';

/** The ticket-RCA presenter vignette (issue 18): workflow id, states, inputs and failure codes. */

/** One lifecycle per presenter session of a tenant (a reset closes it; the next prepare starts it again). */
export const ticketRcaWorkflowId = (tenant: string, presenterSessionId: string) =>
  `ticket-rca/${encodeURIComponent(tenant)}/${encodeURIComponent(presenterSessionId)}`;

/** `idle` (nothing prepared, or reset), `preparing` (filing the ticket, starting the run), `running`, `completed`, `failed`. */
export const TICKET_RCA_STATES = ['idle', 'preparing', 'running', 'completed', 'failed'] as const;
export type TicketRcaState = (typeof TICKET_RCA_STATES)[number];
/** The states that hold the build provider (one vignette run per tenant at a time). */
export const TICKET_RCA_ACTIVE: readonly TicketRcaState[] = ['preparing', 'running'];

export const TICKETING_SETUP_REQUIRED = DemoCodes.TICKETING_SETUP_REQUIRED;
export const TICKETING_ISSUE_TYPE_UNAVAILABLE = DemoCodes.TICKETING_ISSUE_TYPE_UNAVAILABLE;
export const CODING_AGENT_UNSUPPORTED = DemoCodes.CODING_AGENT_UNSUPPORTED;
export const BUILD_PROVIDER_BUSY = DemoCodes.BUILD_PROVIDER_BUSY;
export const TICKET_RCA_FAILURE_CODES = [
  TICKETING_SETUP_REQUIRED,
  TICKETING_ISSUE_TYPE_UNAVAILABLE,
  CODING_AGENT_UNSUPPORTED,
  BUILD_PROVIDER_BUSY,
  DemoCodes.DEMO_VERSION_BINDING_INVALID,
  DemoCodes.DEMO_VERSION_PROFILE_UNAVAILABLE,
] as const;
export type TicketRcaFailureCode = (typeof TICKET_RCA_FAILURE_CODES)[number];

/** The label a reset puts on the vignette's ticket. */
export const TICKET_RCA_RESET_LABEL = 'demo-reset';

export interface TicketRcaInput {
  tenant: string;
  presenterSessionId: string;
  /** The session's attempt (bumped by each prepare): activities write only rows of their attempt. */
  attempt: number;
}

/** What an activity step answers: its result, or why the vignette failed (recorded on the session). */
export type TicketRcaStep<T> = ({ ok: true } & T) | { ok: false; code: string; message: string };
