import { EntitySchema } from '@mikro-orm/core';
import type { PrincipalRef } from '../../auth/principal.js';

/** The proposal projection the inbox and detail read; written only by the proposal workflow's activities. */
export interface ProposalRow {
  proposalId: string;
  tenant: string;
  actionType: string;
  status: string;
  version: number;
  payload: unknown;
  payloadDigest: string;
  expectedEffect: string;
  requestedStatement: string | null;
  requester: PrincipalRef;
  requesterKind: string;
  botId: string | null;
  threadId: string | null;
  subjectKind: string | null;
  subjectId: string | null;
  executionOrigin: string;
  decidedBy: PrincipalRef | null;
  decisionReason: string | null;
  decidedAt: Date | null;
  claimed: boolean;
  finalStatus: string | null;
  executionReceipt: Record<string, unknown> | null;
  executionRefusalReason: string | null;
  executionRefusalDetail: string | null;
  executionErrorDetail: string | null;
  resolvedBy: PrincipalRef | null;
  resolutionNote: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const ProposalRowEntity = new EntitySchema<ProposalRow>({
  name: 'ActionReviewProposal',
  tableName: 'action_review_proposals',
  properties: {
    proposalId: { type: 'uuid', primary: true },
    tenant: { type: 'string' },
    actionType: { type: 'string' },
    status: { type: 'string' },
    version: { type: 'integer' },
    payload: { type: 'json' },
    payloadDigest: { type: 'string' },
    expectedEffect: { type: 'text' },
    requestedStatement: { type: 'text', nullable: true },
    requester: { type: 'json' },
    requesterKind: { type: 'string' },
    botId: { type: 'string', nullable: true },
    threadId: { type: 'string', nullable: true },
    subjectKind: { type: 'string', nullable: true },
    subjectId: { type: 'string', nullable: true },
    executionOrigin: { type: 'string' },
    decidedBy: { type: 'json', nullable: true },
    decisionReason: { type: 'text', nullable: true },
    decidedAt: { type: 'Date', nullable: true },
    claimed: { type: 'boolean' },
    finalStatus: { type: 'string', nullable: true },
    executionReceipt: { type: 'json', nullable: true },
    executionRefusalReason: { type: 'string', nullable: true },
    executionRefusalDetail: { type: 'text', nullable: true },
    executionErrorDetail: { type: 'text', nullable: true },
    resolvedBy: { type: 'json', nullable: true },
    resolutionNote: { type: 'text', nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});

/** One entry of a proposal's durable event trail, keyed by (proposal, seq) so a retried write is a no-op. */
export interface ProposalEventRow {
  proposalId: string;
  seq: number;
  type: string;
  actor: PrincipalRef;
  reason: string | null;
  detail: Record<string, unknown> | null;
  occurredAt: Date;
}

export const ProposalEventRowEntity = new EntitySchema<ProposalEventRow>({
  name: 'ActionReviewEvent',
  tableName: 'action_review_events',
  properties: {
    proposalId: { type: 'uuid', primary: true },
    seq: { type: 'integer', primary: true },
    type: { type: 'string' },
    actor: { type: 'json' },
    reason: { type: 'text', nullable: true },
    detail: { type: 'json', nullable: true },
    occurredAt: { type: 'Date' },
  },
});

/** A decision waiting to be (or already) delivered into the conversation that raised the proposal. */
export interface HandbackRow {
  proposalId: string;
  tenant: string;
  threadId: string;
  decision: 'approved' | 'rejected';
  reason: string | null;
  decidedByLabel: string;
  status: 'pending' | 'delivered';
  attempts: number;
  lastError: string | null;
  messageId: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

export const HandbackRowEntity = new EntitySchema<HandbackRow>({
  name: 'ActionReviewHandback',
  tableName: 'action_review_handbacks',
  properties: {
    proposalId: { type: 'uuid', primary: true },
    tenant: { type: 'string' },
    threadId: { type: 'string' },
    decision: { type: 'string' },
    reason: { type: 'text', nullable: true },
    decidedByLabel: { type: 'string' },
    status: { type: 'string' },
    attempts: { type: 'integer' },
    lastError: { type: 'text', nullable: true },
    messageId: { type: 'uuid', nullable: true },
    createdAt: { type: 'Date' },
    deliveredAt: { type: 'Date', nullable: true },
  },
});
