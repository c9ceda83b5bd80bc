import type { EntityManager } from '@mikro-orm/postgresql';
import { checkReconcile } from './checks.js';
import type { Refusal } from './refusals.js';
import type { ProposalStatus, ReconciledStatus } from './types.js';
import { principalRef, type Principal, type PrincipalRef } from '../auth/principal.js';
import { ProposalRowEntity } from '../db/entities/index.js';
import { reconcileUpdate } from '../../workflows/action-review-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { sendUpdate } from './updates.js';
import { sql } from '../db/sql.js';
import { ActionReviewCodes } from './refusals.js';

export type ReconcileAnswer = { resolved: true; finalStatus: ReconciledStatus } | { resolved: false; refusal: Refusal };
/**
 * The reconcile transition written to the projection the way the workflow would have projected it
 * (row and next-sequence `reconciled` event, the person as actor, one transaction), conditional on
 * the status and version read, so concurrent calls resolve it once. Only for a proposal whose
 * workflow is gone: nothing else will write this row again (its ProposalStatus search attribute
 * stays at the last value the workflow set).
 */
async function reconcileProjection(
  em: EntityManager,
  proposalId: string,
  caller: PrincipalRef,
  finalStatus: ReconciledStatus,
  note: string | null,
): Promise<ReconcileAnswer> {
  const current = await em.fork().findOneOrFail(ProposalRowEntity, { proposalId });
  const refusal = checkReconcile({ status: current.status as ProposalStatus }, caller);
  if (refusal) return { resolved: false, refusal };
  return em.fork().transactional(async (tx) => {
    const updated = await sql(
      tx,
      `update action_review_proposals set status = 'resolved', final_status = ?, resolved_by = ?::jsonb, resolution_note = ?,
         version = version + 1, updated_at = now()
       where proposal_id = ? and status = 'reconciliation_required' and version = ?
       returning version`,
      [finalStatus, JSON.stringify(caller), note, proposalId, current.version],
    );
    if (updated.length === 0) {
      return {
        resolved: false,
        refusal: {
          code: ActionReviewCodes.not_reconciliation_required,
          message: 'The proposal was reconciled meanwhile; reload it.',
        },
      } as const;
    }
    await sql(
      tx,
      `insert into action_review_events (proposal_id, seq, type, actor, reason, detail, occurred_at)
       select ?, coalesce(max(seq), 0) + 1, 'reconciled', ?::jsonb, ?, ?::jsonb, now()
       from action_review_events where proposal_id = ?`,
      [proposalId, JSON.stringify(caller), note, JSON.stringify({ final_status: finalStatus }), proposalId],
    );
    return { resolved: true, finalStatus } as const;
  });
}

/**
 * Reconcile (person-only; the caller already passed the visibility check): the workflow's Update
 * while the workflow runs. A proposal marked `reconciliation_required` by stale-claim recovery has
 * no workflow left to accept it, so then the transition goes to the projection directly.
 */
export async function reconcileProposal(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  finalStatus: ReconciledStatus,
  note: string | null,
): Promise<ReconcileAnswer> {
  const caller = principalRef(principal);
  const answer = await sendUpdate(deps, proposalId, reconcileUpdate, { caller, finalStatus, note });
  if (answer.ok) return { resolved: true, finalStatus: answer.value.finalStatus as ReconciledStatus };
  if ('refusal' in answer) return { resolved: false, refusal: answer.refusal };
  return reconcileProjection(em, proposalId, caller, finalStatus, note);
}
