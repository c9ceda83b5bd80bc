import type { EntityManager } from '@mikro-orm/postgresql';
import { pickIncompleteReason, type IncompleteReason } from './visibility.js';
import type { Principal } from '../auth/principal.js';
import { ProposalRowEntity, type ProposalRow } from '../db/entities/index.js';
import { visibleRows } from './subject-probes.js';

/** Rows one list reads at most before it answers `scan_ceiling`. */
export const SCAN_CEILING = 2_000;

export interface ListFilters {
  status?: string[];
  actionType?: string[];
  offset: number;
  limit: number;
}

export interface ListResult {
  rows: ProposalRow[];
  totalCount: number;
  truncated: boolean;
  incompleteReason: IncompleteReason | null;
}

/** The inbox: the tenant's proposals, newest first, filtered to what the caller may see, then paged. */
export async function listVisibleProposals(
  em: EntityManager,
  principal: Principal,
  filters: ListFilters,
): Promise<ListResult> {
  const where: Record<string, unknown> = { tenant: principal.tenant };
  if (filters.status?.length) where.status = { $in: filters.status };
  if (filters.actionType?.length) where.actionType = { $in: filters.actionType };
  const scanned = await em.find(ProposalRowEntity, where, {
    orderBy: { createdAt: 'desc', proposalId: 'asc' },
    limit: SCAN_CEILING + 1,
  });
  const overCeiling = scanned.length > SCAN_CEILING;
  // The same rule as single reads: agents see their own thread's proposals, others by subject.
  const result = await visibleRows(em, principal, overCeiling ? scanned.slice(0, SCAN_CEILING) : scanned);
  if (overCeiling && !result.truncated) result.reasons.add('scan_ceiling');
  return {
    rows: result.visible.slice(filters.offset, filters.offset + filters.limit),
    totalCount: result.visible.length,
    truncated: result.truncated || overCeiling,
    incompleteReason: pickIncompleteReason(result.reasons),
  };
}
