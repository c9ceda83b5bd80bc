// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { PrincipalKind, PrincipalRef } from '../auth/principal.js';
import type { ActionType } from './action-types.js';

/**
 * Shapes the proposal workflow, its activities and the API share. Workflow-safe (types and
 * constants only).
 */

/** `requested` → `approved` | `rejected`; `approved` → `executing` → a final status; `reconciliation_required` → `resolved`. */
export const PROPOSAL_STATUSES = [
  'requested',
  'approved',
  'rejected',
  'executing',
  'executed',
  'not_applied',
  'reconciliation_required',
  'resolved',
] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

export const FINAL_STATUSES = ['executed', 'not_applied', 'reconciliation_required'] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];

/** What a person may record when reconciling: the effect was found applied, or not. */
export const RECONCILED_STATUSES = ['executed', 'not_applied'] as const;
export type ReconciledStatus = (typeof RECONCILED_STATUSES)[number];

/** Where executions may come from: anywhere an authorised caller is, or only the proposal's own thread (for tool calls). */
export type ExecutionOrigin = 'any' | 'proposal_thread';

export interface ProposalSubject {
  kind: string;
  id: string;
}

/** Everything fixed at creation; written once to the projection. */
export interface ProposalRecord {
  proposalId: string;
  tenant: string;
  actionType: ActionType;
  payload: unknown;
  /** SHA-256 of the canonical payload, action type and subject: the decision context a client pins. */
  payloadDigest: string;
  expectedEffect: string;
  requestedStatement: string | null;
  /** Set when the statement is stored by reference (`statements.ts`); absent in records made before. */
  statementRef?: string | null;
  requester: PrincipalRef;
  requesterKind: PrincipalKind;
  botId: string | null;
  threadId: string | null;
  subject: ProposalSubject | null;
  executionOrigin: ExecutionOrigin;
  createdAt: string;
}

/** Settings the API reads from config and hands to the workflow, so replay never depends on the environment. */
export interface ProposalRuntime {
  effectTimeoutSeconds: number;
  effectHeartbeatSeconds: number;
  handbackMaxAttempts: number;
}

export interface ProposalWorkflowInput {
  record: ProposalRecord;
  runtime: ProposalRuntime;
}

/** The result of running an effect: applied, or refused before anything was written. */
export type EffectOutcome =
  { outcome: 'executed'; result: Record<string, unknown> } | { outcome: 'not_applied'; reason: string; detail: string };

/** What changes over the proposal's life; every transition bumps `version`. */
export interface ProposalProgress {
  status: ProposalStatus;
  version: number;
  decidedBy: PrincipalRef | null;
  decisionReason: string | null;
  decidedAt: string | null;
  claimed: boolean;
  finalStatus: FinalStatus | null;
  executionReceipt: Record<string, unknown> | null;
  executionRefusalReason: string | null;
  executionRefusalDetail: string | null;
  executionErrorDetail: string | null;
  resolvedBy: PrincipalRef | null;
  resolutionNote: string | null;
  updatedAt: string;
}

export const EVENT_TYPES = [
  'proposed',
  'approved',
  'rejected',
  'execution_claimed',
  'executed',
  'not_applied',
  'reconciliation_required',
  'reconciled',
] as const;
export type ProposalEventType = (typeof EVENT_TYPES)[number];

/** One entry of the durable trail: who, when, what, why. `seq` starts at 1 and has no gaps. */
export interface ProposalEvent {
  seq: number;
  type: ProposalEventType;
  actor: PrincipalRef;
  reason: string | null;
  detail: Record<string, unknown> | null;
  occurredAt: string;
}
