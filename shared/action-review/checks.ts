// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { PrincipalRef } from '../auth/principal.js';
import type { Refusal } from './refusals.js';
import type { ExecutionOrigin, ProposalProgress, ProposalRecord } from './types.js';
import { ActionReviewCodes } from './refusals.js';

/**
 * The guards of each transition, as pure functions: the workflow's update validators call them
 * (a refusal there records nothing) and unit tests exercise them directly. Workflow-safe.
 */

export interface DecisionContextInput {
  caller: PrincipalRef;
  expectedVersion: number | null;
  expectedPayloadDigest: string | null;
}

function personOnly(caller: PrincipalRef, what: string): Refusal | null {
  if (caller.kind === 'person') return null;
  return {
    code: ActionReviewCodes.person_only,
    message: `Only a person may ${what} a proposal; ${caller.kind} callers are refused.`,
  };
}

/** Approve and reject: person-only, still requested, and the client's pinned context still matches. */
export function checkDecision(
  record: ProposalRecord,
  progress: ProposalProgress,
  input: DecisionContextInput,
): Refusal | null {
  const who = personOnly(input.caller, 'decide');
  if (who) return who;
  if (progress.status !== 'requested') {
    return {
      code: ActionReviewCodes.already_decided,
      message: `The proposal was already decided (status ${progress.status}).`,
    };
  }
  if (input.expectedVersion !== null && input.expectedVersion !== progress.version) {
    return {
      code: ActionReviewCodes.decision_context_mismatch,
      message: `The proposal changed since you read it (expected version ${input.expectedVersion}, now ${progress.version}); reload and decide again.`,
    };
  }
  if (input.expectedPayloadDigest !== null && input.expectedPayloadDigest !== record.payloadDigest) {
    return {
      code: ActionReviewCodes.decision_context_mismatch,
      message: 'The proposal content no longer matches the digest you reviewed; reload and decide again.',
    };
  }
  return null;
}

export interface OriginInput {
  caller: PrincipalRef;
  origin: { surface: 'api' | 'tool_call'; threadId: string | null };
}

/**
 * A proposal restricted to its own thread accepts tool-call executions from that thread, and
 * executions by a person through the routes (the inbox); anything else is refused unclaimed.
 */
export function originAllowed(
  requirement: ExecutionOrigin,
  proposalThreadId: string | null,
  input: OriginInput,
): boolean {
  if (requirement === 'any') return true;
  if (input.origin.surface === 'tool_call')
    return input.origin.threadId !== null && input.origin.threadId === proposalThreadId;
  return input.caller.kind === 'person';
}

/** Execute: the origin is allowed (checked first, so a refusal never claims) and the grant exists. */
export function checkExecute(
  record: Pick<ProposalRecord, 'executionOrigin' | 'threadId'>,
  progress: Pick<ProposalProgress, 'status'>,
  input: OriginInput,
): Refusal | null {
  if (!originAllowed(record.executionOrigin, record.threadId, input)) {
    return {
      code: ActionReviewCodes.execution_origin_required,
      message: `This proposal may only be executed from its own conversation thread (${record.threadId ?? 'none'}) or by a person in the inbox.`,
    };
  }
  if (progress.status === 'requested' || progress.status === 'rejected') {
    return {
      code: ActionReviewCodes.not_approved,
      message: `The proposal is ${progress.status}; only an approved proposal can be executed.`,
    };
  }
  return null;
}

export function checkReconcile(progress: Pick<ProposalProgress, 'status'>, caller: PrincipalRef): Refusal | null {
  const who = personOnly(caller, 'reconcile');
  if (who) return who;
  if (progress.status !== 'reconciliation_required') {
    return {
      code: ActionReviewCodes.not_reconciliation_required,
      message: `The proposal is ${progress.status}; only a reconciliation_required proposal can be reconciled.`,
    };
  }
  return null;
}

/** States after which the workflow has nothing left to wait for. */
export function isTerminal(status: ProposalProgress['status']): boolean {
  return status === 'rejected' || status === 'executed' || status === 'not_applied' || status === 'resolved';
}

export function initialProgress(record: ProposalRecord): ProposalProgress {
  return {
    status: 'requested',
    version: 1,
    decidedBy: null,
    decisionReason: null,
    decidedAt: null,
    claimed: false,
    finalStatus: null,
    executionReceipt: null,
    executionRefusalReason: null,
    executionRefusalDetail: null,
    executionErrorDetail: null,
    resolvedBy: null,
    resolutionNote: null,
    updatedAt: record.createdAt,
  };
}
