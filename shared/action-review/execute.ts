import type { EntityManager } from '@mikro-orm/postgresql';
import { principalRef, type Principal } from '../auth/principal.js';
import { ProposalRowEntity, type ProposalRow } from '../db/entities/index.js';
import {
  executeUpdate,
  type ExecutionOriginRef,
  type ExecutionOutcome,
} from '../../workflows/action-review-definitions.js';
import type { AppDeps } from '../app-deps.js';
import type { ErrorCode } from '../errors.js';
import { sendUpdate } from './updates.js';
import { findVisibleProposal } from './subject-probes.js';
import { ActionReviewCodes } from './refusals.js';

/** The recorded outcome of a proposal whose workflow has ended, read from the projection. */
export const recordedOutcome = (row: ProposalRow): ExecutionOutcome | null =>
  row.finalStatus
    ? {
        claimed: true,
        finalStatus: row.finalStatus as ExecutionOutcome['finalStatus'],
        replayed: true,
        refusalReason: row.executionRefusalReason,
        refusalDetail: row.executionRefusalDetail,
        errorDetail: row.executionErrorDetail,
        result: row.executionReceipt,
      }
    : null;

export interface ExecuteAnswer {
  success: boolean;
  claimed: boolean;
  final_status: ExecutionOutcome['finalStatus'] | null;
  replayed: boolean;
  refusal_reason: string | null;
  refusal_detail: string | null;
  error_detail: string | null;
  execution_result: Record<string, unknown> | null;
}

const answerOf = (outcome: ExecutionOutcome): ExecuteAnswer => ({
  success: outcome.finalStatus === 'executed',
  claimed: outcome.claimed,
  final_status: outcome.finalStatus,
  replayed: outcome.replayed,
  refusal_reason: outcome.refusalReason,
  refusal_detail: outcome.refusalDetail,
  error_detail: outcome.errorDetail,
  execution_result: outcome.result,
});

/** A refusal before the grant was claimed: nothing ran. */
export const refusedAnswer = (refusal: { code: ErrorCode; message: string }): ExecuteAnswer => ({
  success: false,
  claimed: false,
  final_status: null,
  replayed: false,
  refusal_reason: refusal.code,
  refusal_detail: refusal.message,
  error_detail: null,
  execution_result: null,
});

/**
 * The answer once the proposal's workflow has ended, possibly while this very update ran: what the
 * projection recorded, read fresh. A claim without a recorded outcome (the workflow was terminated
 * mid-effect) says so rather than pretending nothing was claimed.
 */
async function answerAfterClose(em: EntityManager, proposalId: string): Promise<ExecuteAnswer> {
  const current = await em.fork().findOneOrFail(ProposalRowEntity, { proposalId });
  const recorded = recordedOutcome(current);
  if (recorded) return answerOf(recorded);
  if (!current.claimed)
    return refusedAnswer({ code: ActionReviewCodes.not_approved, message: `The proposal is ${current.status}.` });
  return {
    ...refusedAnswer({
      code: ActionReviewCodes.outcome_not_recorded,
      message:
        'The proposal workflow ended before it recorded the outcome; the effect may have happened. Check the target system before anything else.',
    }),
    claimed: true,
  };
}

/**
 * Executes a visible proposal once from the given origin. A refusal answers `success: false` with
 * `claimed: false`; a repeat answers the recorded outcome (`replayed`) without running the effect.
 */
export async function executeProposal(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  origin: ExecutionOriginRef,
): Promise<ExecuteAnswer> {
  const row = await findVisibleProposal(em, principal, proposalId, 'execute');
  const answer = await sendUpdate(deps, row.proposalId, executeUpdate, { caller: principalRef(principal), origin });
  if (answer.ok) return answerOf(answer.value);
  if ('refusal' in answer) return refusedAnswer(answer.refusal);
  return answerAfterClose(em, row.proposalId);
}
