import { column, table, type Row } from './table.js';
import type { PrincipalRef } from '../../auth/principal.js';

/** The proposal projection the inbox and detail read; written only by the proposal workflow's activities. */
export const ProposalRowEntity = table('ActionReviewProposal', 'action_review_proposals', {
  proposalId: column.uuid().primary(),
  tenant: column.string(),
  actionType: column.string(),
  status: column.string(),
  version: column.integer(),
  payload: column.json<unknown>(),
  payloadDigest: column.string(),
  expectedEffect: column.text(),
  requestedStatement: column.text().nullable(),
  /** `sha256:<hex>` of a statement stored by reference in `action_review_statements` (then requestedStatement is null). */
  statementRef: column.string().nullable(),
  requester: column.json<PrincipalRef>(),
  requesterKind: column.string(),
  botId: column.string().nullable(),
  threadId: column.string().nullable(),
  subjectKind: column.string().nullable(),
  subjectId: column.string().nullable(),
  executionOrigin: column.string(),
  decidedBy: column.json<PrincipalRef>().nullable(),
  decisionReason: column.text().nullable(),
  decidedAt: column.date().nullable(),
  claimed: column.boolean(),
  finalStatus: column.string().nullable(),
  executionReceipt: column.json<Record<string, unknown>>().nullable(),
  executionRefusalReason: column.string().nullable(),
  executionRefusalDetail: column.text().nullable(),
  executionErrorDetail: column.text().nullable(),
  resolvedBy: column.json<PrincipalRef>().nullable(),
  resolutionNote: column.text().nullable(),
  createdAt: column.date(),
  updatedAt: column.date(),
});
export type ProposalRow = Row<typeof ProposalRowEntity>;

/** One entry of a proposal's durable event trail, keyed by (proposal, seq) so a retried write is a no-op. */
export const ProposalEventRowEntity = table('ActionReviewEvent', 'action_review_events', {
  proposalId: column.uuid().primary(),
  seq: column.integer().primary(),
  type: column.string(),
  actor: column.json<PrincipalRef>(),
  reason: column.text().nullable(),
  detail: column.json<Record<string, unknown>>().nullable(),
  occurredAt: column.date(),
});
export type ProposalEventRow = Row<typeof ProposalEventRowEntity>;

/** A decision waiting to be (or already) delivered into the conversation that raised the proposal. */
export const HandbackRowEntity = table('ActionReviewHandback', 'action_review_handbacks', {
  proposalId: column.uuid().primary(),
  tenant: column.string(),
  threadId: column.string(),
  decision: column.string<'approved' | 'rejected'>(),
  reason: column.text().nullable(),
  decidedByLabel: column.string(),
  status: column.string<'pending' | 'delivered'>(),
  attempts: column.integer(),
  lastError: column.text().nullable(),
  messageId: column.uuid().nullable(),
  createdAt: column.date(),
  deliveredAt: column.date().nullable(),
});
export type HandbackRow = Row<typeof HandbackRowEntity>;
