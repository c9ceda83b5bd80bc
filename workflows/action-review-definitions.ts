import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { PrincipalRef } from '../shared/auth/principal.js';
import type { FinalStatus, ProposalProgress, ProposalRecord, ReconciledStatus } from '../shared/action-review/types.js';

/**
 * The proposal workflow's messages. The API imports this module to call them, so it holds only
 * definitions and plain types.
 */

export const proposalWorkflowId = (proposalId: string) => `action-review/${proposalId}`;
export const handbackWorkflowId = (proposalId: string) => `handback/${proposalId}`;

/** Pins the decision to what the person saw; a mismatch is refused (409). */
export interface DecisionContext {
  expectedVersion: number | null;
  expectedPayloadDigest: string | null;
}

export interface DecideArgs extends DecisionContext {
  caller: PrincipalRef;
  reason: string | null;
}

/** Where an execute comes from: the REST routes, or a tool call bound to a thread. */
export interface ExecutionOriginRef {
  surface: 'api' | 'tool_call';
  threadId: string | null;
}

export interface ExecuteArgs {
  caller: PrincipalRef;
  origin: ExecutionOriginRef;
}

export interface ExecutionOutcome {
  /** True once the grant is claimed (by this call, or by the earlier one whose outcome this repeats). */
  claimed: boolean;
  finalStatus: FinalStatus;
  /** True when this call answered an earlier execution's recorded outcome without running the effect. */
  replayed: boolean;
  refusalReason: string | null;
  refusalDetail: string | null;
  errorDetail: string | null;
  result: Record<string, unknown> | null;
}

export interface DecisionOutcome {
  decided: true;
  progress: ProposalProgress;
  /** Present when approving is the action, or for approve-and-execute. */
  execution: ExecutionOutcome | null;
}

export interface ReconcileArgs {
  caller: PrincipalRef;
  finalStatus: ReconciledStatus;
  note: string | null;
}

export interface ProposalSnapshot {
  record: ProposalRecord;
  progress: ProposalProgress;
}

/** Answers once the creation is projected to PostgreSQL (used with update-with-start). */
export const createdUpdate = defineUpdate<ProposalProgress>('created');
export const approveUpdate = defineUpdate<DecisionOutcome, [DecideArgs]>('approve');
export const rejectUpdate = defineUpdate<DecisionOutcome, [DecideArgs]>('reject');
export const approveAndExecuteUpdate = defineUpdate<DecisionOutcome, [DecideArgs & { origin: ExecutionOriginRef }]>(
  'approveAndExecute',
);
export const executeUpdate = defineUpdate<ExecutionOutcome, [ExecuteArgs]>('execute');
export const reconcileUpdate = defineUpdate<ProposalProgress, [ReconcileArgs]>('reconcile');
export const proposalStateQuery = defineQuery<ProposalSnapshot>('state');
