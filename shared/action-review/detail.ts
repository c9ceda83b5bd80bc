import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import {
  HandbackRowEntity,
  ProposalEventRowEntity,
  ProposalRowEntity,
  type ProposalRow,
} from '../db/entities/index.js';
import { workflowUrl } from '../temporal/workflow-url.js';
import { proposalWorkflowId } from '../../workflows/action-review-definitions.js';
import { detailView, type ProposalDetail } from './views.js';
import { bundleFields } from './bundles.js';
import { statementOf } from './statements.js';

export interface DetailOptions {
  includeEvents: boolean;
  summary: boolean;
  includeStatement: boolean;
  includePackageSignability: boolean;
}

/** Whether this caller could sign (decide) or apply (execute) the proposal now, and if not, why. */
function signability(row: ProposalRow, principal: Principal) {
  const permitted = principal.permissions.has('APPROVE_AGENT_ACTION');
  let reason: string | null = null;
  if (principal.kind !== 'person') reason = 'person_only';
  else if (!permitted) reason = 'missing_permission';
  else if (row.status !== 'requested') reason = 'already_decided';
  return {
    viewer_can_sign: reason === null,
    viewer_can_apply: permitted && row.status === 'approved' && !row.claimed,
    viewer_cannot_sign_reason: reason,
  };
}

/** The detail view of a row the caller may see, read fresh from PostgreSQL (events in order). */
export async function proposalDetail(
  em: EntityManager,
  principal: Principal,
  row: ProposalRow,
  options: DetailOptions,
  config: AppConfig,
): Promise<ProposalDetail> {
  // Three independent reads, each on its own fork so they run concurrently on separate pool connections.
  const { proposalId } = row;
  const [current, events, handback] = await Promise.all([
    em.fork().findOneOrFail(ProposalRowEntity, { proposalId }),
    options.includeEvents ? em.fork().find(ProposalEventRowEntity, { proposalId }, { orderBy: { seq: 'asc' } }) : null,
    em.fork().findOne(HandbackRowEntity, { proposalId }),
  ]);
  // A statement stored by reference is rejoined for this read (409 proposal_text_unavailable when it cannot be).
  const statement = options.includeStatement ? await statementOf(em.fork(), current) : null;
  const view = detailView(
    { ...current, requestedStatement: statement },
    { summary: options.summary, includeStatement: options.includeStatement, events, handback },
  );
  return {
    ...view,
    ...(await bundleFields(em.fork(), current, config)),
    workflow_url: workflowUrl(config, proposalWorkflowId(proposalId)),
    ...(options.includePackageSignability ? signability(current, principal) : {}),
  };
}

/** What decision and creation responses carry: the full view, statement withheld as on reads without include_statement. */
export const FULL_DETAIL: DetailOptions = {
  includeEvents: true,
  summary: false,
  includeStatement: false,
  includePackageSignability: false,
};
