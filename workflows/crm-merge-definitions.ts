import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PrincipalRef } from '../shared/auth/principal.js';

/**
 * The CRM merge approval workflow's messages. The API imports this module to call them, so it
 * holds only definitions and plain types.
 */

export const crmMergeWorkflowId = (approvalId: string) => `crm-merge/${approvalId}`;

/** Settings fixed at start, so replay never depends on the environment. */
export interface CrmMergeWorkflowInput {
  approvalId: string;
  tenant: string;
  connectionName: string;
  ttlSeconds: number;
  /** `crm.max_approval_ttl_seconds` when the approval was requested (absent in histories from before the setting). */
  maxTtlSeconds?: number;
  /** How long to wait, after an execution started, for its outcome before ending (the proposal keeps it anyway). */
  settleWaitSeconds: number;
}

/** `open` (awaiting approval or execution) → `executing` → `settled`; `open` → `expired` when the TTL ends first. */
export type CrmMergePhase = 'open' | 'executing' | 'settled' | 'expired';

export interface CrmMergeState {
  phase: CrmMergePhase;
  approvedBy: PrincipalRef | null;
  finalStatus: string | null;
}

/** Why the workflow refuses an update; the API maps these to HTTP in one place. */
export const CRM_MERGE_REFUSALS = {
  /** Approve is for genuinely authenticated people only. */
  person_only: 403,
  /** The approval's lifetime ended: expiry is a recorded state. */
  approval_expired: 410,
  /** Execute named another connection than the one the approval is bound to. */
  connection_mismatch: 409,
} as const;
export type CrmMergeRefusalCode = keyof typeof CRM_MERGE_REFUSALS;
export const CRM_MERGE_REFUSAL_TYPE = 'CrmMergeRefusal';

export interface ApproveMergeArgs {
  caller: PrincipalRef;
}
export interface ClaimMergeArgs {
  caller: PrincipalRef;
  connectionName: string;
}

export const approveMergeUpdate = defineUpdate<CrmMergeState, [ApproveMergeArgs]>('approveMerge');
/** Marks the start of an execution (within the lifetime, bound connection); the effect itself runs on the Action Review proposal. */
export const claimMergeUpdate = defineUpdate<CrmMergeState, [ClaimMergeArgs]>('claimMerge');
export const mergeSettledSignal = defineSignal<[{ finalStatus: string }]>('mergeSettled');
export const crmMergeStateQuery = defineQuery<CrmMergeState>('crmMergeState');
