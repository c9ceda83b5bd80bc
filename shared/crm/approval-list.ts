import type { EntityManager } from '@mikro-orm/postgresql';
import { pickIncompleteReason } from '../action-review/visibility.js';
import type { Principal } from '../auth/principal.js';
import { CrmMergeApprovalEntity, ProposalRowEntity, type ProposalRow } from '../db/entities/index.js';
import { SCAN_CEILING } from '../action-review/list.js';
import { visibleRows } from '../action-review/subject-probes.js';
import type { AppDeps } from '../app-deps.js';
import { approvalView } from './approval-views.js';
import { recoverStaleClaim } from './stale-claims.js';

/**
 * The approvals the caller may see, newest first: the visibility of their `crm.merge.v1` proposals
 * (the same rule as the approval's own routes and the inbox), then paged. Each row shown gets
 * on-demand stale-claim recovery first.
 */
export async function listApprovals(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  page: { offset: number; limit: number },
) {
  const scanned = await em.find(
    CrmMergeApprovalEntity,
    { tenant: principal.tenant },
    { orderBy: { createdAt: 'desc', approvalId: 'asc' }, limit: SCAN_CEILING + 1, refresh: true },
  );
  const overCeiling = scanned.length > SCAN_CEILING;
  const rows = overCeiling ? scanned.slice(0, SCAN_CEILING) : scanned;
  const proposals = await em.find(
    ProposalRowEntity,
    { proposalId: { $in: rows.map((r) => r.approvalId) } },
    { refresh: true },
  );
  const byId = new Map(proposals.map((p) => [p.proposalId, p]));
  // In the approvals' order, so a probe budget running out cuts the oldest; an approval without a proposal is hidden.
  const ordered = rows.map((r) => byId.get(r.approvalId)).filter((p): p is ProposalRow => p !== undefined);
  const result = await visibleRows(em, principal, ordered);
  if (overCeiling && !result.truncated) result.reasons.add('scan_ceiling');
  const visibleIds = new Set(result.visible.map((p) => p.proposalId));
  const visible = rows.filter((r) => visibleIds.has(r.approvalId));
  let recovered = 0;
  const views = [];
  for (const row of visible.slice(page.offset, page.offset + page.limit)) {
    const outcome = await recoverStaleClaim(deps, em, row, byId.get(row.approvalId) ?? null);
    if (outcome === 'recovered') recovered++;
    if (outcome !== 'none') {
      const fresh = await em.findOneOrFail(CrmMergeApprovalEntity, { approvalId: row.approvalId }, { refresh: true });
      views.push(
        approvalView(fresh, await em.findOne(ProposalRowEntity, { proposalId: row.approvalId }, { refresh: true })),
      );
    } else views.push(approvalView(row, byId.get(row.approvalId) ?? null));
  }
  return {
    approvals: views,
    total_count: visible.length,
    offset: page.offset,
    limit: page.limit,
    truncated: result.truncated || overCeiling,
    incomplete_reason: pickIncompleteReason(result.reasons),
    recovered_stale_claims: recovered,
  };
}
