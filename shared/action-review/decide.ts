/**
 * A person's decisions on a proposal as the Action Review routes answer them: approve or reject (an
 * Update to the proposal's workflow), approve-and-execute in one request (refusals answered with
 * `success` false), and reconciliation after `reconciliation_required`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { statementOf } from './statements.js';
import type { AppDeps } from '../app-deps.js';
import { principalRef, type Principal } from '../auth/principal.js';
import {
  approveAndExecuteUpdate,
  approveUpdate,
  rejectUpdate,
  type ExecutionOutcome,
} from '../../workflows/action-review-definitions.js';
import { FULL_DETAIL, proposalDetail } from './detail.js';
import { reconcileProposal } from './reconcile.js';
import { findVisibleProposal } from './subject-probes.js';
import type { RECONCILED_STATUSES } from './types.js';
import { refusalError, sendUpdate } from './updates.js';
import { ActionReviewCodes } from './refusals.js';

interface DecideBody {
  reason?: string;
  expected_version?: number;
  expected_payload_digest?: string;
}

const alreadyDecided = { code: ActionReviewCodes.already_decided, message: 'The proposal was already decided.' };

const executionFields = (e: ExecutionOutcome | null) =>
  e
    ? {
        claimed: e.claimed,
        final_status: e.finalStatus,
        execution_refusal_reason: e.refusalReason,
        execution_refusal_detail: e.refusalDetail,
        execution_error_detail: e.errorDetail,
        execution_result: e.result,
      }
    : {};

/** Approves or rejects (person-only); approving applies the change too when approving is the action. */
export async function decideProposal(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  kind: 'approve' | 'reject',
  body: DecideBody,
) {
  const row = await findVisibleProposal(em, principal, proposalId);
  // Approving needs the statement a person approves; rejecting does not (proposal_text_unavailable).
  if (kind === 'approve') await statementOf(em, row);
  const args = {
    caller: principalRef(principal),
    reason: body.reason || null,
    expectedVersion: body.expected_version ?? null,
    expectedPayloadDigest: body.expected_payload_digest ?? null,
  };
  const answer = await sendUpdate(deps, row.proposalId, kind === 'approve' ? approveUpdate : rejectUpdate, args);
  if (!answer.ok) throw refusalError('refusal' in answer ? answer.refusal : alreadyDecided);
  const proposal = await proposalDetail(em, principal, row, FULL_DETAIL, deps.config);
  const execution = answer.value.execution;
  return { success: true, decided: true, refusal_reason: null, proposal, ...executionFields(execution) };
}

/** Approves and executes in one request; a refusal answers `success` false with its reason. */
export async function approveAndExecuteProposal(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  body: DecideBody,
) {
  const row = await findVisibleProposal(em, principal, proposalId);
  await statementOf(em, row);
  const answer = await sendUpdate(deps, row.proposalId, approveAndExecuteUpdate, {
    caller: principalRef(principal),
    reason: body.reason || null,
    expectedVersion: body.expected_version ?? null,
    expectedPayloadDigest: body.expected_payload_digest ?? null,
    origin: { surface: 'api', threadId: null },
  });
  const proposal = await proposalDetail(em, principal, row, FULL_DETAIL, deps.config);
  if (!answer.ok) {
    const refusal = 'refusal' in answer ? answer.refusal : alreadyDecided;
    return {
      success: false,
      decided: false,
      refusal_reason: refusal.code,
      claimed: false,
      final_status: null,
      // The spec names this route's refusal fields execution_refusal_reason / _detail.
      execution_refusal_reason: refusal.code,
      execution_refusal_detail: refusal.message,
      execution_error_detail: null,
      execution_result: null,
      proposal,
    };
  }
  const e = answer.value.execution!;
  return {
    success: e.finalStatus === 'executed',
    decided: true,
    refusal_reason: null,
    ...executionFields(e),
    proposal,
  };
}

/** Records what a person found after reconciliation_required; `person_only` is an error, other refusals answer `resolved` false. */
export async function reconcileVisibleProposal(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  body: { final_status: (typeof RECONCILED_STATUSES)[number]; note?: string },
) {
  const row = await findVisibleProposal(em, principal, proposalId);
  const answer = await reconcileProposal(deps, em, principal, row.proposalId, body.final_status, body.note || null);
  if (!answer.resolved && answer.refusal.code === ActionReviewCodes.person_only) throw refusalError(answer.refusal);
  const proposal = await proposalDetail(em, principal, row, FULL_DETAIL, deps.config);
  if (!answer.resolved)
    return { resolved: false, final_status: proposal.final_status, refusal_reason: answer.refusal.code, proposal };
  return { resolved: true, final_status: answer.finalStatus, refusal_reason: null, proposal };
}
