import type { EntityManager } from '@mikro-orm/postgresql';
import type { PrincipalRef } from '../auth/principal.js';
import type { CrmMergeApprovalRow, ProposalRow } from '../db/entities/index.js';
import { proposalWorkflowId } from '../../workflows/action-review-definitions.js';
import { crmMergeWorkflowId, mergeSettledSignal } from '../../workflows/crm-merge-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { toIso } from '../dates.js';
import { sql } from '../db/sql.js';

/** Slack past a deadline before a read treats the workflow that owns it as gone. */
export const STALE_GRACE_MS = 60_000;

const RECOVERY_REASON =
  'Stale claim found on an approval-list read: the execution ended without a recorded outcome (its workflow is gone); the merge may have happened. Check the records, then reconcile.';

/** Who the trail names for a recovery: no person or agent did it, the platform did on a read. */
const recoveryActor = (tenant: string): PrincipalRef => ({
  kind: 'system',
  id: 'system',
  tenant,
  label: 'Platform (stale-claim recovery)',
  credential: 'service_token',
});

async function running(deps: AppDeps, workflowId: string): Promise<boolean> {
  try {
    return (await deps.temporal.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (err) {
    if ((err as { name?: string }).name === 'WorkflowNotFoundError') return false;
    throw err;
  }
}
/**
 * Records expiry for an open, unclaimed approval past its lifetime. Conditional on the row still
 * being open, so of several concurrent reads exactly one records it (and counts it).
 */
async function releaseExpired(em: EntityManager, row: CrmMergeApprovalRow): Promise<boolean> {
  const rows = await sql(
    em,
    `update crm_merge_approvals set status = 'expired', expired_at = coalesce(expired_at, now())
     where approval_id = ? and status = 'open' and execution_started_at is null and expires_at < ?
     returning approval_id`,
    [row.approvalId, new Date(Date.now() - STALE_GRACE_MS)],
  );
  return rows.length > 0;
}

/**
 * Moves a dead execution's proposal to `reconciliation_required` and appends the matching event to
 * its Action Review trail (next sequence number, the system as actor, the reason), in one
 * transaction. The update is conditional on the version that was read, so concurrent reads record
 * it once; the workflow that would have written this transition is gone, so nothing overwrites it.
 */
async function markForReconciliation(deps: AppDeps, em: EntityManager, proposal: ProposalRow): Promise<boolean> {
  const detail = {
    recovered_by: 'crm_merge_approval_list',
    workflow_id: proposalWorkflowId(proposal.proposalId),
    claimed_at: toIso(proposal.updatedAt),
    effect_timeout_seconds: deps.config.actionReview.effectTimeoutSeconds,
  };
  return em.fork().transactional(async (tx) => {
    const updated = await sql<{ version: number }>(
      tx,
      `update action_review_proposals set status = 'reconciliation_required', final_status = 'reconciliation_required',
         execution_error_detail = ?, version = version + 1, updated_at = now()
       where proposal_id = ? and status = 'executing' and version = ?
       returning version`,
      [RECOVERY_REASON, proposal.proposalId, proposal.version],
    );
    if (updated.length === 0) return false;
    await sql(
      tx,
      `insert into action_review_events (proposal_id, seq, type, actor, reason, detail, occurred_at)
       select ?, coalesce(max(seq), 0) + 1, 'reconciliation_required', ?::jsonb, ?, ?::jsonb, now()
       from action_review_events where proposal_id = ?`,
      [
        proposal.proposalId,
        JSON.stringify(recoveryActor(proposal.tenant)),
        RECOVERY_REASON,
        JSON.stringify(detail),
        proposal.proposalId,
      ],
    );
    return true;
  });
}

/**
 * On-demand stale-claim recovery (spec: approval-list reads perform it). An open approval past its
 * lifetime whose workflow is gone is released as expired; a claim whose execution is dead (the
 * proposal still `executing` past the effect timeout, its workflow gone) is marked for
 * reconciliation, because the merge may have happened. Running workflows are left to finish, and a
 * rejected approval has nothing to release. Answers `recovered` when this read changed the state,
 * `raced` when a concurrent read did (the caller re-reads), `none` otherwise.
 */
export async function recoverStaleClaim(
  deps: AppDeps,
  em: EntityManager,
  row: CrmMergeApprovalRow,
  proposal: ProposalRow | null,
): Promise<'recovered' | 'raced' | 'none'> {
  const now = Date.now();
  const pastLifetime = row.expiresAt.getTime() + STALE_GRACE_MS < now;
  if (row.status === 'open' && !row.executionStartedAt && proposal?.status !== 'rejected' && pastLifetime) {
    if (await running(deps, crmMergeWorkflowId(row.approvalId))) return 'none';
    return (await releaseExpired(em, row)) ? 'recovered' : 'raced';
  }
  const effectMs = deps.config.actionReview.effectTimeoutSeconds * 1000;
  if (proposal?.status === 'executing' && proposal.updatedAt.getTime() + effectMs + STALE_GRACE_MS < now) {
    if (await running(deps, proposalWorkflowId(row.approvalId))) return 'none';
    if (!(await markForReconciliation(deps, em, proposal))) return 'raced';
    // Lets the approval's workflow, if it still waits for the outcome, end now instead of at its settle timeout.
    await deps.temporal.workflow
      .getHandle(crmMergeWorkflowId(row.approvalId))
      .signal(mergeSettledSignal, { finalStatus: 'reconciliation_required' })
      .catch(() => undefined);
    return 'recovered';
  }
  return 'none';
}
