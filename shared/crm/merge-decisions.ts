import type { EntityManager } from '@mikro-orm/postgresql';
import { principalRef, type Principal } from '../auth/principal.js';
import { ProposalRowEntity } from '../db/entities/index.js';
import { approveUpdate, rejectUpdate } from '../../workflows/action-review-definitions.js';
import { approveMergeUpdate, crmMergeWorkflowId, mergeSettledSignal } from '../../workflows/crm-merge-definitions.js';
import { refusalError, sendUpdate } from '../action-review/updates.js';
import type { AppDeps } from '../app-deps.js';
import { approvalWithProposal, findApproval } from './merge-approvals.js';
import { mergeRefusalError, sendMergeUpdate } from './merge-updates.js';
import { ActionReviewCodes } from '../action-review/refusals.js';
import { CrmCodes } from './error-codes.js';

const alreadyDecided = { code: ActionReviewCodes.already_decided, message: 'The merge approval was already decided.' };

/** Refuses a second decision before the approval's workflow records an approver that would never count. */
async function requireUndecided(em: EntityManager, approvalId: string): Promise<void> {
  const proposal = await em.findOne(ProposalRowEntity, { proposalId: approvalId }, { refresh: true });
  if (proposal && proposal.status !== 'requested') throw refusalError(alreadyDecided);
}

/** Person-only (the workflow checks again), within the lifetime; then the proposal's own approve. */
export async function approveApproval(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  approvalId: string,
  reason: string | null,
) {
  const row = await findApproval(em, principal, approvalId);
  await requireUndecided(em, approvalId);
  const caller = principalRef(principal);
  const answer = await sendMergeUpdate(deps, approvalId, approveMergeUpdate, { caller });
  if (!answer.ok)
    throw mergeRefusalError(
      'refusal' in answer
        ? answer.refusal
        : { code: CrmCodes.approval_expired, message: 'The approval is no longer open.' },
    );
  const decided = await sendUpdate(deps, approvalId, approveUpdate, {
    caller,
    reason,
    expectedVersion: null,
    expectedPayloadDigest: null,
  });
  if (!decided.ok) throw refusalError('refusal' in decided ? decided.refusal : alreadyDecided);
  return approvalWithProposal(em, row);
}

/**
 * Person-only: the proposal's own reject (so Action Review records the decision and hands it back),
 * allowed whatever is left of the lifetime. Afterwards the approval's workflow has nothing left to
 * guard, so it is told to end now rather than hold a timer until the TTL.
 */
export async function rejectApproval(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  approvalId: string,
  reason: string | null,
) {
  const row = await findApproval(em, principal, approvalId);
  const decided = await sendUpdate(deps, approvalId, rejectUpdate, {
    caller: principalRef(principal),
    reason,
    expectedVersion: null,
    expectedPayloadDigest: null,
  });
  if (!decided.ok) throw refusalError('refusal' in decided ? decided.refusal : alreadyDecided);
  await deps.temporal.workflow
    .getHandle(crmMergeWorkflowId(approvalId))
    .signal(mergeSettledSignal, { finalStatus: 'rejected' })
    .catch(() => undefined);
  return approvalWithProposal(em, row);
}
