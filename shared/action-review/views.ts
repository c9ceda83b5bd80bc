import { z } from 'zod';
import { approvingIsTheAction, ACTION_TYPES, ACTION_TYPE_DESCRIPTION, isActionType } from './action-types.js';
import { PROPOSAL_STATUSES } from './types.js';
import type { HandbackRow, ProposalEventRow, ProposalRow } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import type { BundleFields } from './bundles.js';
import { FINAL_STATUSES } from './types.js';

export const ProposalIdParams = z.object({
  proposal_id: z.string().min(1).max(100).describe('Unknown, hidden and other-tenant ids all answer 404'),
});

export const RequesterSchema = z
  .object({ kind: z.string(), id: z.string(), label: z.string() })
  .meta({ id: 'ActionReviewRequester' });

export const DecisionContextSchema = z
  .object({
    expected_version: z
      .number()
      .int()
      .describe('Send back as `expected_version` when deciding; a mismatch answers 409 decision_context_mismatch'),
    payload_digest: z.string().describe('Send back as `expected_payload_digest` when deciding'),
  })
  .meta({ id: 'ActionReviewDecisionContext' });

export const EventSchema = z
  .object({
    seq: z.number().int(),
    type: z
      .string()
      .describe(
        'proposed, approved, rejected, execution_claimed, executed, not_applied, reconciliation_required, reconciled',
      ),
    actor: RequesterSchema,
    reason: z.string().nullable(),
    detail: z.record(z.string(), z.unknown()).nullable(),
    occurred_at: z.string(),
  })
  .meta({ id: 'ActionReviewEvent' });

/** List rows and the status view. `dossier_scope=headline` omits the fields marked full-only. */
export const ProposalRowViewSchema = z
  .object({
    proposal_id: z.string(),
    action_type: z.enum(ACTION_TYPES).describe(ACTION_TYPE_DESCRIPTION),
    approving_is_the_action: z.boolean(),
    effective_status: z
      .enum(PROPOSAL_STATUSES)
      .describe('The status to act on; `resolved` proposals report it with final_status'),
    status: z.enum(PROPOSAL_STATUSES),
    tenant: z.string(),
    requester: RequesterSchema,
    requester_kind: z.string(),
    bot_id: z.string().nullable(),
    thread_id: z.string().nullable(),
    expected_effect: z.string().describe('Cut to 280 characters in headline rows'),
    requested_statement: z.string().nullable().describe('Only with include_statement=true; otherwise null'),
    decided_by: z.string().nullable(),
    decided_by_label: z.string().nullable(),
    decision_reason: z.string().nullable(),
    final_status: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    payload: z.unknown().optional().describe('Full scope only'),
    execution_receipt: z.record(z.string(), z.unknown()).nullable().optional().describe('Full scope only'),
    decision_context: DecisionContextSchema.optional().describe('Full scope only'),
  })
  .meta({ id: 'ActionReviewProposalRow' });

export const ProposalDetailSchema = z
  .object({
    proposal_id: z.string(),
    action_type: z.enum(ACTION_TYPES).describe(ACTION_TYPE_DESCRIPTION),
    approving_is_the_action: z.boolean(),
    status: z.enum(PROPOSAL_STATUSES),
    version: z.number().int(),
    decision_context: DecisionContextSchema,
    tenant: z.string(),
    requester: RequesterSchema,
    requester_kind: z.string(),
    bot_id: z.string().nullable(),
    thread_id: z.string().nullable(),
    subject: z.object({ kind: z.string(), id: z.string() }).nullable(),
    execution_origin: z.enum(['any', 'proposal_thread']),
    expected_effect: z.string(),
    requested_statement: z.string().nullable().describe('Only with include_statement=true; otherwise null'),
    payload: z.unknown().optional().describe('Omitted with view=summary'),
    decided_by: z.string().nullable(),
    decided_by_label: z.string().nullable(),
    decision_reason: z.string().nullable(),
    decided_at: z.string().nullable(),
    claimed: z.boolean(),
    final_status: z.string().nullable(),
    execution_receipt: z.record(z.string(), z.unknown()).nullable(),
    execution_refusal_reason: z.string().nullable(),
    execution_refusal_detail: z.string().nullable(),
    execution_error_detail: z.string().nullable(),
    resolved_by: z.string().nullable(),
    resolution_note: z.string().nullable(),
    handback: z
      .object({
        status: z.enum(['pending', 'delivered']),
        attempts: z.number().int(),
        delivered_at: z.string().nullable(),
      })
      .nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    workflow_url: z
      .string()
      .nullable()
      .describe('The Temporal UI page of the proposal workflow; null when TEMPORAL_UI_URL is not configured'),
    events: z.array(EventSchema).optional().describe('In order; omitted with include_events=false'),
    bundle_supersession: z
      .object({
        bundle_id: z.string(),
        outcome: z.enum(['superseded', 'bundle_request_not_created']),
        superseded_by_proposal_id: z.string().nullable(),
        superseded_by_url: z.string().nullable(),
      })
      .nullable()
      .describe(
        'A prover.approve_composite_bundle.v1 request covering this proposal (its member_ids name the proposal or its subject) was executed (superseded: decided by the bundle) or its request was not created; null otherwise',
      ),
    can_renew: z
      .boolean()
      .describe(
        'True when a bundle released this still-undecided proposal (declined, or not created): decide it alone or bundle it anew',
      ),
    ownership_reason: z
      .enum(['bundle_request_live', 'bundle_declined', 'bundle_policy_denied'])
      .nullable()
      .describe(
        'Why a bundle request owns (live) or released (declined, policy denied) this proposal; null when none covers it',
      ),
    holding_bundle_request: z
      .object({ proposal_id: z.string(), bundle_id: z.string(), status: z.string(), url: z.string() })
      .nullable()
      .describe('The live bundle request holding this proposal; null when none holds it'),
    viewer_can_sign: z.boolean().optional(),
    viewer_can_apply: z.boolean().optional(),
    viewer_cannot_sign_reason: z.string().nullable().optional(),
  })
  .meta({ id: 'ActionReviewProposal' });

export type ProposalDetail = z.output<typeof ProposalDetailSchema>;

const actionTypeOf = (row: ProposalRow) => (isActionType(row.actionType) ? row.actionType : ACTION_TYPES[0]);

export function rowView(row: ProposalRow, options: { scope: 'headline' | 'full'; includeStatement: boolean }) {
  const full = options.scope === 'full';
  return {
    proposal_id: row.proposalId,
    action_type: actionTypeOf(row),
    approving_is_the_action: approvingIsTheAction(actionTypeOf(row)),
    effective_status: (row.status === 'resolved' && row.finalStatus
      ? row.finalStatus
      : row.status) as (typeof PROPOSAL_STATUSES)[number],
    status: row.status as (typeof PROPOSAL_STATUSES)[number],
    tenant: row.tenant,
    requester: { kind: row.requester.kind, id: row.requester.id, label: row.requester.label },
    requester_kind: row.requesterKind,
    bot_id: row.botId,
    thread_id: row.threadId,
    expected_effect: full ? row.expectedEffect : row.expectedEffect.slice(0, 280),
    requested_statement: options.includeStatement ? row.requestedStatement : null,
    decided_by: row.decidedBy?.id ?? null,
    decided_by_label: row.decidedBy?.label ?? null,
    decision_reason: row.decisionReason,
    final_status: row.finalStatus,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    ...(full
      ? {
          payload: row.payload,
          execution_receipt: row.executionReceipt,
          decision_context: { expected_version: row.version, payload_digest: row.payloadDigest },
        }
      : {}),
  };
}

export function eventView(e: ProposalEventRow) {
  return {
    seq: e.seq,
    type: e.type,
    actor: { kind: e.actor.kind, id: e.actor.id, label: e.actor.label },
    reason: e.reason,
    detail: e.detail,
    occurred_at: toIso(e.occurredAt),
  };
}

export function detailView(
  row: ProposalRow,
  options: {
    summary: boolean;
    includeStatement: boolean;
    events: ProposalEventRow[] | null;
    handback: HandbackRow | null;
  },
): Omit<ProposalDetail, 'workflow_url' | keyof BundleFields> {
  return {
    proposal_id: row.proposalId,
    action_type: actionTypeOf(row),
    approving_is_the_action: approvingIsTheAction(actionTypeOf(row)),
    status: row.status as ProposalDetail['status'],
    version: row.version,
    decision_context: { expected_version: row.version, payload_digest: row.payloadDigest },
    tenant: row.tenant,
    requester: { kind: row.requester.kind, id: row.requester.id, label: row.requester.label },
    requester_kind: row.requesterKind,
    bot_id: row.botId,
    thread_id: row.threadId,
    subject: row.subjectKind && row.subjectId ? { kind: row.subjectKind, id: row.subjectId } : null,
    execution_origin: row.executionOrigin as ProposalDetail['execution_origin'],
    expected_effect: row.expectedEffect,
    requested_statement: options.includeStatement ? row.requestedStatement : null,
    ...(options.summary ? {} : { payload: row.payload }),
    decided_by: row.decidedBy?.id ?? null,
    decided_by_label: row.decidedBy?.label ?? null,
    decision_reason: row.decisionReason,
    decided_at: toIso(row.decidedAt),
    claimed: row.claimed,
    final_status: row.finalStatus,
    execution_receipt: row.executionReceipt,
    execution_refusal_reason: row.executionRefusalReason,
    execution_refusal_detail: row.executionRefusalDetail,
    execution_error_detail: row.executionErrorDetail,
    resolved_by: row.resolvedBy?.id ?? null,
    resolution_note: row.resolutionNote,
    handback: options.handback
      ? {
          status: options.handback.status,
          attempts: options.handback.attempts,
          delivered_at: toIso(options.handback.deliveredAt),
        }
      : null,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    ...(options.events ? { events: options.events.map(eventView) } : {}),
  };
}

export const ExecuteResponse = z.object({
  success: z.boolean().describe('True when the effect is recorded as executed'),
  claimed: z.boolean().describe('False when refused before claiming the grant'),
  final_status: z.enum(FINAL_STATUSES).nullable(),
  replayed: z.boolean().describe('True when this answer repeats the recorded outcome of an earlier execution'),
  refusal_reason: z.string().nullable(),
  refusal_detail: z.string().nullable(),
  error_detail: z.string().nullable(),
  execution_result: z.record(z.string(), z.unknown()).nullable(),
});

/** A Prover subject's state: the decisions Action Review executed on it (spec: Prover action types). */
export const ProverSubjectViewSchema = z
  .object({
    kind: z.enum(['finding', 'view', 'disposition_package', 'composite_bundle', 'docket_entry']),
    subject_id: z.string(),
    owner_id: z
      .string()
      .nullable()
      .describe('The person who owns it: its first requester, or the agent’s thread owner'),
    bot_id: z.string().nullable().describe('The requesting agent (bot) that may read it'),
    created_at: z.string(),
    status: z
      .string()
      .describe(
        'open (nothing executed yet); evidence_requested, test_cases_approved, disposition_approved, bundle_approved, or the docket decision (accepted, declined, deferred)',
      ),
    state: z
      .record(z.string(), z.unknown())
      .describe(
        'By kind: evidence_requests; approved_test_case_ids (union); disposition; member_ids; decision and note (the latest decision wins)',
      ),
    decisions: z.array(
      z.object({
        proposal_id: z.string(),
        action_type: z.enum(ACTION_TYPES),
        decision: z.record(z.string(), z.unknown()).describe('The executed payload'),
        decided_by: z.string().describe('Who executed it (the approver, where approving is the action)'),
        decided_at: z.string(),
      }),
    ),
  })
  .meta({ id: 'ProverSubject' });
