import { z } from 'zod';
import type { CrmMergeApprovalRow, ProposalRow } from '../db/entities/index.js';
import { crmMergeWorkflowId } from '../../workflows/crm-merge-definitions.js';
import { toIso } from '../dates.js';

/** The approval's state, derived from its record (lifetime) and its Action Review proposal (decision, execution). */
export const APPROVAL_STATUSES = [
  'awaiting_approval',
  'approved',
  'rejected',
  'executing',
  'merged',
  'not_applied',
  'reconciliation_required',
  'resolved',
  'expired',
] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

const FROM_PROPOSAL: Record<string, ApprovalStatus> = {
  requested: 'awaiting_approval',
  approved: 'approved',
  rejected: 'rejected',
  executing: 'executing',
  executed: 'merged',
  not_applied: 'not_applied',
  reconciliation_required: 'reconciliation_required',
  resolved: 'resolved',
};

export function approvalStatus(
  row: CrmMergeApprovalRow,
  proposal: ProposalRow | null,
  now = Date.now(),
): ApprovalStatus {
  // A rejection is a person's decision: the lifetime running out afterwards changes nothing about it.
  if (proposal?.status === 'rejected') return 'rejected';
  if (row.status === 'expired') return 'expired';
  const fromProposal = FROM_PROPOSAL[proposal?.status ?? 'requested'] ?? 'awaiting_approval';
  // Past its lifetime and never claimed: expired, even before the workflow has recorded it.
  if (!row.executionStartedAt && !proposal?.claimed && row.expiresAt.getTime() <= now) return 'expired';
  return fromProposal;
}

export const ApprovalViewSchema = z
  .object({
    approval_id: z.string().describe('Also the id of its Action Review proposal (action type crm.merge.v1)'),
    status: z.enum(APPROVAL_STATUSES),
    connection_name: z.string().describe('Execute must name this connection'),
    record_kind: z.string(),
    survivor_id: z.string(),
    loser_ids: z.array(z.string()),
    digest: z.string(),
    policy_version: z.string(),
    projection: z.record(z.string(), z.unknown()).describe('The preview the approval was requested with'),
    ttl_seconds: z.number().int(),
    expires_at: z.string(),
    expired_at: z.string().nullable(),
    requested_by: z.record(z.string(), z.unknown()),
    approved_by: z.record(z.string(), z.unknown()).nullable(),
    rejected_by: z.record(z.string(), z.unknown()).nullable(),
    decision_reason: z.string().nullable().describe('The reason given with the approval or rejection'),
    final_status: z.string().nullable(),
    execution_result: z.record(z.string(), z.unknown()).nullable(),
    execution_refusal_reason: z.string().nullable(),
    execution_error_detail: z.string().nullable(),
    workflow_id: z.string(),
    action_review_path: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'CrmMergeApproval' });

export function approvalView(
  row: CrmMergeApprovalRow,
  proposal: ProposalRow | null,
): z.output<typeof ApprovalViewSchema> {
  const approved = proposal !== null && proposal.status !== 'requested' && proposal.status !== 'rejected';
  return {
    approval_id: row.approvalId,
    status: approvalStatus(row, proposal),
    connection_name: row.connectionName,
    record_kind: row.recordKind,
    survivor_id: row.survivorId,
    loser_ids: row.loserIds,
    digest: row.digest,
    policy_version: row.policyVersion,
    projection: row.projection,
    ttl_seconds: row.ttlSeconds,
    expires_at: toIso(row.expiresAt),
    expired_at: toIso(row.expiredAt),
    requested_by: row.requestedBy,
    // The proposal's decision is authoritative; the row's approver only stands in if the decision lacks one.
    approved_by: approved
      ? ((proposal.decidedBy as unknown as Record<string, unknown> | null) ?? row.approvedBy)
      : null,
    rejected_by:
      proposal?.status === 'rejected' && proposal.decidedBy
        ? (proposal.decidedBy as unknown as Record<string, unknown>)
        : null,
    decision_reason: proposal?.decisionReason ?? null,
    final_status: proposal?.finalStatus ?? null,
    execution_result: proposal?.executionReceipt ?? null,
    execution_refusal_reason: proposal?.executionRefusalReason ?? null,
    execution_error_detail: proposal?.executionErrorDetail ?? null,
    workflow_id: crmMergeWorkflowId(row.approvalId),
    action_review_path: `/api/action-review/proposals/${row.approvalId}`,
    created_at: toIso(row.createdAt),
  };
}

export const PreviewSchema = z
  .record(z.string(), z.unknown())
  .describe('projected_survivor (preview_fields first), field_sources, field_writes, records, digest')
  .meta({ id: 'CrmMergePreview' });
export const ExecuteResponse = z.object({
  success: z.boolean().describe('True when the merge is recorded as executed'),
  claimed: z.boolean(),
  final_status: z
    .string()
    .nullable()
    .describe('executed, not_applied (nothing written, e.g. stale_digest) or reconciliation_required (never retried)'),
  replayed: z.boolean().describe('True when this repeats the recorded outcome: the merge ran at most once'),
  refusal_reason: z.string().nullable(),
  refusal_detail: z.string().nullable(),
  error_detail: z.string().nullable(),
  execution_result: z.record(z.string(), z.unknown()).nullable(),
  approval: ApprovalViewSchema,
});
