import type { EffectOutcome, ProposalProgress } from '../shared/action-review/types.js';
import type { DecisionOutcome, ExecutionOutcome } from './action-review-definitions.js';
import { ActionReviewCodes } from '../shared/action-review/refusals.js';

/**
 * Every answer the proposal workflow gives to an execute, in one place. Pure constructors
 * (workflow-safe, no commands), so the handlers in `action-review.ts` only say which one applies.
 */

/** The effect ran: applied, or refused by its executor before anything was written. */
export function effectOutcome(effect: EffectOutcome): ExecutionOutcome {
  return effect.outcome === 'executed'
    ? {
        claimed: true,
        finalStatus: 'executed',
        replayed: false,
        refusalReason: null,
        refusalDetail: null,
        errorDetail: null,
        result: effect.result,
      }
    : {
        claimed: true,
        finalStatus: 'not_applied',
        replayed: false,
        refusalReason: effect.reason,
        refusalDetail: effect.detail,
        errorDetail: null,
        result: null,
      };
}

/** The attempt failed or timed out: it may have applied the effect, so a person reconciles (never a retry). */
export function reconciliationRequired(errorDetail: string): ExecutionOutcome {
  return {
    claimed: true,
    finalStatus: 'reconciliation_required',
    replayed: false,
    refusalReason: null,
    refusalDetail: null,
    errorDetail,
    result: null,
  };
}

/** A later execute: the earlier execution's recorded outcome, without running the effect again. */
export function replayedOutcome(recorded: ExecutionOutcome): ExecutionOutcome {
  return { ...recorded, replayed: true };
}

/**
 * Approve-and-execute's execution part: an execute that raced the approval and claimed the grant
 * first is reported as `claim_lost`; an attempt whose outcome is unknown as `outcome_not_recorded`.
 */
export function approveAndExecuteOutcome(outcome: ExecutionOutcome, claimedElsewhere: boolean): ExecutionOutcome {
  if (claimedElsewhere) return { ...outcome, refusalReason: ActionReviewCodes.claim_lost };
  if (outcome.finalStatus === 'reconciliation_required')
    return { ...outcome, refusalReason: ActionReviewCodes.outcome_not_recorded };
  return outcome;
}

export function decisionOutcome(progress: ProposalProgress, execution: ExecutionOutcome | null): DecisionOutcome {
  return { decided: true, progress: { ...progress }, execution };
}

/** The detail of the projected final transition: the receipt, the refusal reason, or nothing. */
export function finalEventDetail(outcome: ExecutionOutcome): Record<string, unknown> | null {
  return outcome.result ?? (outcome.refusalReason ? { refusal_reason: outcome.refusalReason } : null);
}
