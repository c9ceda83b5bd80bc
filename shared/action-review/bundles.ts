/**
 * What a composite bundle request means for the proposals it covers (spec, Action Review detail:
 * `bundle_supersession`, `can_renew`, `ownership_reason`, `holding_bundle_request`). A
 * `prover.approve_composite_bundle.v1` proposal covers the proposals its `member_ids` name (by proposal
 * id, or by their subject's id); a member reads its newest covering bundle request:
 * - still requested, approved or being executed (or its effect awaiting reconciliation): the bundle holds
 *   the member (`holding_bundle_request`, `ownership_reason` `bundle_request_live`);
 * - rejected: the member is back with its own decision (`bundle_declined`);
 * - executed: the member is superseded by it (`bundle_supersession.outcome` `superseded`);
 * - not applied (the bundle request was refused when it was to be created): `bundle_request_not_created`,
 *   `ownership_reason` `bundle_policy_denied`.
 * `can_renew`: the member is still undecided and no bundle holds or superseded it, after a bundle
 * released it (declined or not created), so it may be decided alone or bundled anew.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ProposalRow } from '../db/entities/index.js';
import { sqlOne } from '../db/sql.js';

export const BUNDLE_ACTION_TYPE = 'prover.approve_composite_bundle.v1';

export interface BundleFields {
  bundle_supersession: {
    bundle_id: string;
    outcome: 'superseded' | 'bundle_request_not_created';
    superseded_by_proposal_id: string | null;
    superseded_by_url: string | null;
  } | null;
  can_renew: boolean;
  ownership_reason: 'bundle_request_live' | 'bundle_declined' | 'bundle_policy_denied' | null;
  holding_bundle_request: { proposal_id: string; bundle_id: string; status: string; url: string } | null;
}

/** The console page of a proposal, absolute when the deployment's public address is known. */
const proposalUrl = (config: AppConfig, proposalId: string) =>
  `${config.publicBaseUrl?.replace(/\/+$/, '') ?? ''}/console/proposals/${encodeURIComponent(proposalId)}`;

const LIVE = new Set(['requested', 'approved', 'executing', 'reconciliation_required']);

/** The bundle fields of one proposal, from the newest bundle request of its tenant that covers it. */
export async function bundleFields(em: EntityManager, row: ProposalRow, config: AppConfig): Promise<BundleFields> {
  const none: BundleFields = {
    bundle_supersession: null,
    can_renew: false,
    ownership_reason: null,
    holding_bundle_request: null,
  };
  if (row.actionType === BUNDLE_ACTION_TYPE) return none;
  const bundle = await sqlOne<{ proposal_id: string; status: string; final_status: string | null; bundle_id: string }>(
    em,
    `select proposal_id, status, final_status, payload->>'bundle_id' as bundle_id from action_review_proposals
     where tenant = ? and action_type = ? and proposal_id <> ?
       and (payload->'member_ids' @> jsonb_build_array(?::text)
            or (?::text is not null and payload->'member_ids' @> jsonb_build_array(?::text)))
     order by created_at desc, proposal_id desc limit 1`,
    [row.tenant, BUNDLE_ACTION_TYPE, row.proposalId, row.proposalId, row.subjectId, row.subjectId],
  );
  if (!bundle) return none;
  const status = bundle.status === 'resolved' ? (bundle.final_status ?? bundle.status) : bundle.status;
  const undecided = row.status === 'requested';
  if (status === 'executed')
    return {
      ...none,
      bundle_supersession: {
        bundle_id: bundle.bundle_id,
        outcome: 'superseded',
        superseded_by_proposal_id: bundle.proposal_id,
        superseded_by_url: proposalUrl(config, bundle.proposal_id),
      },
    };
  if (status === 'not_applied')
    return {
      ...none,
      bundle_supersession: {
        bundle_id: bundle.bundle_id,
        outcome: 'bundle_request_not_created',
        superseded_by_proposal_id: null,
        superseded_by_url: null,
      },
      ownership_reason: 'bundle_policy_denied',
      can_renew: undecided,
    };
  if (status === 'rejected') return { ...none, ownership_reason: 'bundle_declined', can_renew: undecided };
  if (LIVE.has(status))
    return {
      ...none,
      ownership_reason: 'bundle_request_live',
      holding_bundle_request: {
        proposal_id: bundle.proposal_id,
        bundle_id: bundle.bundle_id,
        status,
        url: proposalUrl(config, bundle.proposal_id),
      },
    };
  return none;
}
