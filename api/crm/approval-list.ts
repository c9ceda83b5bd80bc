import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../../shared/auth/principal.js';
import { CrmMergeApprovalSchema, ProposalRowSchema } from '../../shared/db/entities/index.js';
import type { AppDeps } from '../deps.js';
import { approvalView } from './approval-views.js';
import { recoverStaleClaim } from './stale-claims.js';

/** The tenant's approvals, newest first; each row gets on-demand stale-claim recovery before it is shown. */
export async function listApprovals(deps: AppDeps, em: EntityManager, principal: Principal, page: { offset: number; limit: number }) {
  const [rows, total] = await em.findAndCount(CrmMergeApprovalSchema, { tenant: principal.tenant }, { orderBy: { createdAt: 'desc' }, offset: page.offset, limit: page.limit, refresh: true });
  const proposals = await em.find(ProposalRowSchema, { proposalId: { $in: rows.map((r) => r.approvalId) } }, { refresh: true });
  const byId = new Map(proposals.map((p) => [p.proposalId, p]));
  let recovered = 0;
  const views = [];
  for (const row of rows) {
    const outcome = await recoverStaleClaim(deps, em, row, byId.get(row.approvalId) ?? null);
    if (outcome === 'recovered') recovered++;
    if (outcome !== 'none') {
      const fresh = await em.findOneOrFail(CrmMergeApprovalSchema, { approvalId: row.approvalId }, { refresh: true });
      views.push(approvalView(fresh, await em.findOne(ProposalRowSchema, { proposalId: row.approvalId }, { refresh: true })));
    } else views.push(approvalView(row, byId.get(row.approvalId) ?? null));
  }
  return { approvals: views, total_count: total, offset: page.offset, limit: page.limit, recovered_stale_claims: recovered };
}
