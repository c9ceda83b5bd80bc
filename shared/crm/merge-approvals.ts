import type { EntityManager } from '@mikro-orm/postgresql';
import { checkExecute } from '../action-review/checks.js';
import type { ExecutionOrigin, ProposalStatus } from '../action-review/types.js';
import { principalRef, type Principal } from '../auth/principal.js';
import { previewMerge, previewView } from './merge-preview.js';
import { checkSelection, type MergeSelectionInput } from './merge-selection.js';
import { CrmMergeApprovalEntity, ProposalRowEntity, type CrmMergeApprovalRow } from '../db/entities/index.js';
import { ConflictError, ForbiddenError, NotFoundError, type ErrorCode } from '../errors.js';
import { sendMergeUpdate } from './merge-updates.js';
import { SearchAttributes } from '../temporal/search-attributes.js';
import type { ExecutionOriginRef } from '../../workflows/action-review-definitions.js';
import {
  claimMergeUpdate,
  crmMergeWorkflowId,
  mergeSettledSignal,
  type CrmMergeWorkflowInput,
} from '../../workflows/crm-merge-definitions.js';
import { createProposal } from '../action-review/create.js';
import { executeProposal, refusedAnswer } from '../action-review/execute.js';
import { findVisibleProposal, type VisibilityPurpose } from '../action-review/subject-probes.js';
import type { AppDeps } from '../app-deps.js';
import { approvalView } from './approval-views.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { CrmCodes } from './error-codes.js';
import { ActionReviewCodes } from '../action-review/refusals.js';

export const DEFAULT_APPROVAL_TTL_SECONDS = 3600;

const notFound = (approvalId: string) => new NotFoundError(`No merge approval ${approvalId}.`);

/**
 * The approval if the caller may see its `crm.merge.v1` proposal (Action Review's visibility: an
 * agent's request from a private thread is its owner's business). Hidden, other-tenant and unknown
 * approvals answer the same 404.
 */
export async function findApproval(
  em: EntityManager,
  principal: Principal,
  approvalId: string,
  purpose: VisibilityPurpose = 'read',
): Promise<CrmMergeApprovalRow> {
  try {
    await findVisibleProposal(em, principal, approvalId, purpose);
  } catch (err) {
    if (err instanceof NotFoundError) throw notFound(approvalId);
    throw err;
  }
  const row = await em.findOne(CrmMergeApprovalEntity, { approvalId, tenant: principal.tenant }, { refresh: true });
  if (!row) throw notFound(approvalId);
  return row;
}

export async function approvalWithProposal(em: EntityManager, row: CrmMergeApprovalRow) {
  const proposal = await em.findOne(ProposalRowEntity, { proposalId: row.approvalId }, { refresh: true });
  return approvalView(row, proposal);
}

/**
 * Previews fresh, refuses a stale `expected_digest`, raises the `crm.merge.v1` proposal (one inbox;
 * its id is the approval id), records the approval and starts `crm-merge/<approval_id>` with the TTL.
 */
export async function requestApproval(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: MergeSelectionInput & { expected_digest?: string; ttl_seconds?: number },
) {
  const selection = checkSelection(input);
  const preview = await previewMerge(em, deps.config, principal.tenant, selection);
  if (input.expected_digest && input.expected_digest !== preview.digest) {
    throw new ConflictError('The records changed since the preview (expected_digest is stale); preview again.', {
      code: CrmCodes.stale_digest,
      digest: preview.digest,
    });
  }
  // The cap in effect now (saved setting, env, default); the workflow's input and memo record it.
  const maxTtlSeconds = await deps.settings.get('crm.max_approval_ttl_seconds');
  const ttlSeconds = Math.min(input.ttl_seconds ?? DEFAULT_APPROVAL_TTL_SECONDS, maxTtlSeconds);
  const agent = principal.kind === 'agent';
  if (agent && (!principal.botId || !principal.threadId))
    throw new ForbiddenError('This sandbox token is not bound to a bot and thread.');
  const view = previewView(preview);
  const proposal = await createProposal(deps, em, principal, {
    actionType: 'crm.merge.v1',
    payload: {
      object_kind: selection.kind,
      survivor_id: selection.survivorId,
      loser_ids: selection.loserIds,
      connection_name: selection.connectionName,
    },
    expectedEffect: `Merge ${selection.kind} ${selection.loserIds.join(', ')} into ${selection.survivorId} on connection ${selection.connectionName} (irreversible; losers are deleted). Survivor afterwards: ${JSON.stringify(view.projected_survivor)}`,
    requestedStatement: null,
    botId: agent ? principal.botId! : null,
    threadId: agent ? principal.threadId! : null,
    subject: null,
    executionOrigin: null,
  });
  const approvalId = proposal.proposalId;
  const now = new Date();
  const row = em.create(CrmMergeApprovalEntity, {
    approvalId,
    tenant: principal.tenant,
    connectionName: selection.connectionName,
    recordKind: selection.kind,
    survivorId: selection.survivorId,
    loserIds: selection.loserIds,
    digest: preview.digest,
    policyVersion: preview.policy.version,
    projection: view as unknown as Record<string, unknown>,
    ttlSeconds,
    expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
    status: 'open',
    expiredAt: null,
    executionStartedAt: null,
    requestedBy: principalRef(principal) as unknown as Record<string, unknown>,
    approvedBy: null,
    createdAt: now,
  });
  await em.persistAndFlush(row);
  const input_: CrmMergeWorkflowInput = {
    approvalId,
    tenant: principal.tenant,
    connectionName: selection.connectionName,
    ttlSeconds,
    maxTtlSeconds,
    settleWaitSeconds: deps.config.actionReview.effectTimeoutSeconds + 60,
  };
  await deps.temporal.workflow.start(workflowRef('crmMergeApprovalWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: crmMergeWorkflowId(approvalId),
    args: [input_],
    workflowIdConflictPolicy: 'FAIL',
    memo: { ttl_seconds: ttlSeconds, max_approval_ttl_seconds: maxTtlSeconds },
    typedSearchAttributes: [
      { key: SearchAttributes.tenant, value: principal.tenant },
      { key: SearchAttributes.resourceId, value: approvalId },
      { key: SearchAttributes.status, value: 'open' },
      { key: SearchAttributes.actionType, value: 'crm.merge.v1' },
    ],
  });
  return { approval: await approvalWithProposal(em, row), preview: view };
}

/**
 * Executes with the bound connection name, within the lifetime. The merge itself runs once on the
 * Action Review proposal (one claim, one attempt; unknown outcome → reconciliation_required); a
 * repeat answers the recorded outcome.
 */
export async function executeApproval(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  approvalId: string,
  connectionName: string,
  origin: ExecutionOriginRef,
) {
  const row = await findApproval(em, principal, approvalId, 'execute');
  const proposal = await em.findOne(ProposalRowEntity, { proposalId: approvalId }, { refresh: true });
  const notYet = !proposal || proposal.status === 'requested' || proposal.status === 'rejected';
  // Refusals answer as Action Review's execute does: 200, success false, nothing claimed.
  const refuse = async (code: ErrorCode, message: string) => ({
    ...refusedAnswer({ code, message }),
    approval: await approvalWithProposal(em, row),
  });
  if (connectionName !== row.connectionName)
    return refuse(CrmCodes.connection_mismatch, `The approval is bound to connection "${row.connectionName}".`);
  if (notYet) {
    const approval = await approvalWithProposal(em, row);
    if (approval.status === 'expired')
      return refuse(CrmCodes.approval_expired, `The approval expired at ${approval.expires_at}.`);
    return refuse(ActionReviewCodes.not_approved, `The merge is not approved (status ${approval.status}).`);
  }
  // The proposal's own guard first: a caller it refuses must not mark the approval's lifetime as claimed.
  const refused = checkExecute(
    { executionOrigin: proposal.executionOrigin as ExecutionOrigin, threadId: proposal.threadId },
    { status: proposal.status as ProposalStatus },
    { caller: principalRef(principal), origin },
  );
  if (refused) return refuse(refused.code, refused.message);
  const claim = await sendMergeUpdate(deps, approvalId, claimMergeUpdate, {
    caller: principalRef(principal),
    connectionName,
  });
  if (!claim.ok && 'refusal' in claim) return refuse(claim.refusal.code, claim.refusal.message);
  if (!claim.ok && row.status === 'expired' && !proposal.claimed)
    return refuse(CrmCodes.approval_expired, `The approval expired at ${row.expiresAt.toISOString()}.`);
  const execution = await executeProposal(deps, em, principal, approvalId, origin);
  if (execution.final_status) {
    // Only lets the workflow end early; a closed workflow (expired wait, earlier signal) needs nothing.
    await deps.temporal.workflow
      .getHandle(crmMergeWorkflowId(approvalId))
      .signal(mergeSettledSignal, { finalStatus: execution.final_status })
      .catch(() => undefined);
  }
  return {
    ...execution,
    approval: await approvalWithProposal(em, await findApproval(em, principal, approvalId, 'execute')),
  };
}
