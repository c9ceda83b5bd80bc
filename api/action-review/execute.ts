import type { EntityManager } from '@mikro-orm/postgresql';
import { principalRef, type Principal } from '../../shared/auth/principal.js';
import type { ProposalRow } from '../../shared/db/entities/index.js';
import { executeUpdate, type ExecutionOriginRef, type ExecutionOutcome } from '../../workflows/action-review-definitions.js';
import type { AppDeps } from '../deps.js';
import { sendUpdate } from './updates.js';
import { findVisibleProposal } from './visibility.js';

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

/**
 * Executes a visible proposal once from the given origin. A refusal answers `success: false` with
 * `claimed: false`; a repeat answers the recorded outcome (`replayed`) without running the effect.
 */
export async function executeProposal(deps: AppDeps, em: EntityManager, principal: Principal, proposalId: string, origin: ExecutionOriginRef): Promise<ExecuteAnswer> {
  const row = await findVisibleProposal(em, principal, proposalId, 'execute');
  const answer = await sendUpdate(deps, row.proposalId, executeUpdate, { caller: principalRef(principal), origin });
  const outcome = answer.ok ? answer.value : 'closed' in answer ? recordedOutcome(row) : null;
  if (!outcome) {
    const refusal = !answer.ok && 'refusal' in answer ? answer.refusal : { code: 'not_approved', message: `The proposal is ${row.status}.` };
    return { success: false, claimed: false, final_status: null, replayed: false, refusal_reason: refusal.code, refusal_detail: refusal.message, error_detail: null, execution_result: null };
  }
  return {
    success: outcome.finalStatus === 'executed',
    claimed: outcome.claimed,
    final_status: outcome.finalStatus,
    replayed: outcome.replayed,
    refusal_reason: outcome.refusalReason,
    refusal_detail: outcome.refusalDetail,
    error_detail: outcome.errorDetail,
    execution_result: outcome.result,
  };
}
