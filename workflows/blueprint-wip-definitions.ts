import { defineSignal } from '@temporalio/workflow';

/**
 * The blueprint WIP session workflow's messages. The API imports this module to signal it, so it
 * holds only definitions and plain types.
 */

export const blueprintWipWorkflowId = (sessionId: string) => `blueprint-wip/${sessionId}`;

/** Settings fixed at start, so replay never depends on the environment. */
export interface BlueprintWipWorkflowInput {
  sessionId: string;
  tenant: string;
  blueprintId: string;
  ttlSeconds: number;
}

export interface BlueprintWipResult {
  /** `closed`: committed or discarded through the API before the TTL; `expired`: the TTL closed it. */
  outcome: 'closed' | 'expired' | 'already_closed';
}

/** Sent by the API after a commit or discard (the row is already final): the timer is no longer needed. */
export const wipSessionClosedSignal = defineSignal<[{ status: 'committed' | 'discarded' }]>('wipSessionClosed');
