import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../../shared/auth/principal.js';
import { CrmMergeApprovalSchema, ProposalRowSchema, type CrmMergeApprovalRow, type ProposalRow } from '../../shared/db/entities/index.js';
import { proposalWorkflowId } from '../../workflows/action-review-definitions.js';
import { crmMergeWorkflowId } from '../../workflows/crm-merge-definitions.js';
import type { AppDeps } from '../deps.js';
import { approvalView } from './approval-views.js';

/** Slack past a deadline before a read treats the workflow that owns it as gone. */
const GRACE_MS = 60_000;

async function running(deps: AppDeps, workflowId: string): Promise<boolean> {
  try {
    return (await deps.temporal.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (err) {
    if ((err as { name?: string }).name === 'WorkflowNotFoundError') return false;
    throw err;
  }
}

/**
 * On-demand stale-claim recovery (spec: approval-list reads perform it). An open approval past its
 * lifetime whose workflow is gone is released as expired; a claim whose execution is dead (the
 * proposal still `executing` past the effect timeout, its workflow gone) is marked for
 * reconciliation, because the merge may have happened. Running workflows are left to finish.
 */
async function recover(deps: AppDeps, em: EntityManager, row: CrmMergeApprovalRow, proposal: ProposalRow | null): Promise<boolean> {
  const now = Date.now();
  if (row.status === 'open' && !row.executionStartedAt && row.expiresAt.getTime() + GRACE_MS < now && !(await running(deps, crmMergeWorkflowId(row.approvalId)))) {
    await em.getConnection().execute(
      `update crm_merge_approvals set status = 'expired', expired_at = coalesce(expired_at, now()) where approval_id = ? and execution_started_at is null`,
      [row.approvalId],
    );
    return true;
  }
  const effectMs = deps.config.actionReview.effectTimeoutSeconds * 1000;
  if (proposal?.status === 'executing' && proposal.updatedAt.getTime() + effectMs + GRACE_MS < now && !(await running(deps, proposalWorkflowId(row.approvalId)))) {
    await em.getConnection().execute(
      `update action_review_proposals set status = 'reconciliation_required', final_status = 'reconciliation_required',
         execution_error_detail = 'The execution ended without a recorded outcome (stale claim found on an approval-list read); the merge may have happened.',
         updated_at = now()
       where proposal_id = ? and status = 'executing'`,
      [row.approvalId],
    );
    return true;
  }
  return false;
}

export async function listApprovals(deps: AppDeps, em: EntityManager, principal: Principal, page: { offset: number; limit: number }) {
  const [rows, total] = await em.findAndCount(CrmMergeApprovalSchema, { tenant: principal.tenant }, { orderBy: { createdAt: 'desc' }, offset: page.offset, limit: page.limit, refresh: true });
  const proposals = await em.find(ProposalRowSchema, { proposalId: { $in: rows.map((r) => r.approvalId) } }, { refresh: true });
  const byId = new Map(proposals.map((p) => [p.proposalId, p]));
  let recovered = 0;
  const views = [];
  for (const row of rows) {
    if (await recover(deps, em, row, byId.get(row.approvalId) ?? null)) {
      recovered++;
      const fresh = await em.findOneOrFail(CrmMergeApprovalSchema, { approvalId: row.approvalId }, { refresh: true });
      views.push(approvalView(fresh, await em.findOne(ProposalRowSchema, { proposalId: row.approvalId }, { refresh: true })));
    } else views.push(approvalView(row, byId.get(row.approvalId) ?? null));
  }
  return { approvals: views, total_count: total, offset: page.offset, limit: page.limit, recovered_stale_claims: recovered };
}
