import type { EntityManager } from '@mikro-orm/postgresql';
import { isActionType } from './action-types.js';
import { PROPOSAL_STATUSES, type ProposalSubject } from './types.js';
import { filterVisible, PROBE_BUDGET, type FilterResult, type SubjectProbe, type Viewer } from './visibility.js';
import type { Principal } from '../auth/principal.js';
import { ConversationThreadEntity, ProposalRowEntity, type ProposalRow } from '../db/entities/index.js';
import { NotFoundError } from '../errors.js';

export const THREAD_SUBJECT = 'conversation_thread';

/** A thread is visible in its tenant when shared, or to its owner when private; an unknown thread is hidden. */
function threadProbe(em: EntityManager): SubjectProbe {
  return async (subject, viewer) => {
    const thread = await em.findOne(ConversationThreadEntity, { id: subject.id });
    return (
      !!thread && thread.tenant === viewer.tenant && (thread.visibility === 'tenant' || thread.ownerId === viewer.id)
    );
  };
}

/** Subject kinds with a visibility handler; a proposal may only name these (others answer 400 at creation). */
export function subjectProbes(em: EntityManager): Record<string, SubjectProbe> {
  return { [THREAD_SUBJECT]: threadProbe(em) };
}

export const viewerOf = (p: Principal): Viewer => ({ kind: p.kind, id: p.id, tenant: p.tenant });

/** The subjects a row touches, or null when the row is not one this version can read. */
export function subjectsOfRow(row: ProposalRow): ProposalSubject[] | null {
  if (!isActionType(row.actionType) || !(PROPOSAL_STATUSES as readonly string[]).includes(row.status)) return null;
  const subjects: ProposalSubject[] = [];
  if (row.threadId) subjects.push({ kind: THREAD_SUBJECT, id: row.threadId });
  if (row.subjectKind && row.subjectId && !(row.subjectKind === THREAD_SUBJECT && row.subjectId === row.threadId)) {
    subjects.push({ kind: row.subjectKind, id: row.subjectId });
  }
  return subjects;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const notFound = (proposalId: string) => new NotFoundError(`No proposal ${proposalId}.`);

export type VisibilityPurpose = 'read' | 'execute';

/**
 * The rows the caller may see, in order. Agents see their bot's proposals of their own thread; people
 * and other callers see their tenant's proposals whose subjects are visible to them (at most
 * `PROBE_BUDGET` subjects probed; `reasons` says why a list is incomplete).
 */
export async function visibleRows(
  em: EntityManager,
  principal: Principal,
  rows: readonly ProposalRow[],
  purpose: VisibilityPurpose = 'read',
): Promise<FilterResult<ProposalRow>> {
  if (principal.kind === 'agent') {
    // Reads stay within the agent run's own thread (another person's thread of the same bot is not its
    // business). An execute from another thread reaches the proposal so that it is refused for what
    // it is: `execution_origin_required`, unclaimed.
    const visible = rows.filter(
      (row) =>
        row.tenant === principal.tenant &&
        row.botId !== null &&
        row.botId === principal.botId &&
        (purpose === 'execute' || row.threadId === (principal.threadId ?? null)),
    );
    return { visible, reasons: new Set(), truncated: false };
  }
  const own = rows.filter((row) => row.tenant === principal.tenant);
  return filterVisible(own, {
    viewer: viewerOf(principal),
    subjectsOf: subjectsOfRow,
    probes: subjectProbes(em),
    budget: PROBE_BUDGET,
  });
}

/**
 * The proposal if the caller may see it (`visibleRows`). Hidden, other-tenant and unknown proposals
 * all answer the same 404.
 */
export async function findVisibleProposal(
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  purpose: VisibilityPurpose = 'read',
): Promise<ProposalRow> {
  if (!UUID.test(proposalId)) throw notFound(proposalId);
  const row = await em.findOne(ProposalRowEntity, { proposalId, tenant: principal.tenant });
  if (!row || (await visibleRows(em, principal, [row], purpose)).visible.length === 0) throw notFound(proposalId);
  return row;
}
