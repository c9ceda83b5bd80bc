import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { CrmMergeActivities } from '../activities/crm-merge.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import {
  approveMergeUpdate,
  type ApproveMergeArgs,
  type ClaimMergeArgs,
  claimMergeUpdate,
  CRM_MERGE_REFUSAL_TYPE,
  crmMergeStateQuery,
  mergeSettledSignal,
  type CrmMergeRefusalCode,
  type CrmMergeState,
  type CrmMergeWorkflowInput,
} from './crm-merge-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';
import { CrmCodes } from '../shared/crm/error-codes.js';
import { ActionReviewCodes } from '../shared/action-review/refusals.js';

/** The settled outcomes shown as the status (an unknown one leaves `settled`). */
const SETTLED_STATUSES = ['executed', 'not_applied', 'reconciliation_required', 'rejected'] as const;
const isSettledStatus = (s: string): s is (typeof SETTLED_STATUSES)[number] =>
  (SETTLED_STATUSES as readonly string[]).includes(s);

const db = proxyActivities<CrmMergeActivities>(ActivityProfiles.database);

/** Validators throw this: the update is rejected synchronously and nothing enters history. */
function refuse(code: CrmMergeRefusalCode | null, message = ''): void {
  if (code)
    throw ApplicationFailure.create({ type: CRM_MERGE_REFUSAL_TYPE, message, details: [code], nonRetryable: true });
}

/** Everything the handlers share. */
interface MergeApprovalState {
  readonly input: CrmMergeWorkflowInput;
  /** What the query answers and the workflow returns. */
  readonly merge: CrmMergeState;
  /** True from the moment the TTL fires: no update may slip in while expiry is being recorded. */
  ttlEnded: boolean;
}

function setPhase(state: MergeApprovalState, phase: CrmMergeState['phase']): void {
  state.merge.phase = phase;
  upsertSearchAttributes([{ key: SearchAttributes.status, value: phase }]);
}

const snapshot = (state: MergeApprovalState): CrmMergeState => ({ ...state.merge });

function refuseExpired(state: MergeApprovalState): void {
  const expired = state.ttlEnded || state.merge.phase === 'expired';
  refuse(
    expired ? CrmCodes.approval_expired : null,
    `The approval's lifetime (${state.input.ttlSeconds} s) has ended.`,
  );
}

function validateApprove(state: MergeApprovalState, args: ApproveMergeArgs): void {
  refuse(
    args.caller.kind !== 'person' ? ActionReviewCodes.person_only : null,
    'Only a genuinely authenticated person can approve a merge.',
  );
  refuseExpired(state);
}

async function approve(state: MergeApprovalState, args: ApproveMergeArgs): Promise<CrmMergeState> {
  await db.recordMergeApproved({ approvalId: state.input.approvalId, approvedBy: args.caller });
  state.merge.approvedBy = args.caller;
  return snapshot(state);
}

function validateClaim(state: MergeApprovalState, args: ClaimMergeArgs): void {
  refuseExpired(state);
  refuse(
    args.connectionName !== state.input.connectionName ? CrmCodes.connection_mismatch : null,
    `The approval is bound to connection "${state.input.connectionName}".`,
  );
}

function claim(state: MergeApprovalState): CrmMergeState {
  if (state.merge.phase === 'open') setPhase(state, 'executing');
  return snapshot(state);
}

function settle(state: MergeApprovalState, finalStatus: string): void {
  state.merge.finalStatus = finalStatus;
  setPhase(state, 'settled');
  // The outcome itself, so a merge that was not applied is findable.
  if (isSettledStatus(finalStatus)) setLifecycleStatus('crmMergeApprovalWorkflow', finalStatus);
}

function registerHandlers(state: MergeApprovalState): void {
  setHandler(crmMergeStateQuery, () => snapshot(state));
  setHandler(approveMergeUpdate, (args) => approve(state, args), { validator: (args) => validateApprove(state, args) });
  setHandler(claimMergeUpdate, (_args) => claim(state), { validator: (args) => validateClaim(state, args) });
  setHandler(mergeSettledSignal, ({ finalStatus }) => settle(state, finalStatus));
}

/** The TTL ended unclaimed: expire it, unless an execution started from the inbox just before. */
async function expireOrKeep(state: MergeApprovalState): Promise<boolean> {
  state.ttlEnded = true;
  const { expired } = await db.expireMergeApproval({ approvalId: state.input.approvalId });
  // The execution started from the Action Review inbox just before the TTL: its outcome stands.
  setPhase(state, expired ? 'expired' : 'executing');
  return expired;
}

/**
 * One CRM merge approval, held for its lifetime: approve and execute are Updates refused once the
 * TTL has ended (`condition(fn, ttl)`), and expiry is recorded as a state. The decision and the
 * one-time merge itself run on the Action Review proposal with the same id (one inbox); this
 * workflow guards the lifetime and the bound connection.
 */
export async function crmMergeApprovalWorkflow(input: CrmMergeWorkflowInput): Promise<CrmMergeState> {
  const state: MergeApprovalState = {
    input,
    merge: { phase: 'open', approvedBy: null, finalStatus: null },
    ttlEnded: false,
  };
  registerHandlers(state);
  return trackFailure('crmMergeApprovalWorkflow', async () => {
    const claimedInTime = await condition(() => state.merge.phase !== 'open', `${input.ttlSeconds} seconds`);
    const expired = !claimedInTime && (await expireOrKeep(state));
    if (!expired) await condition(() => state.merge.phase === 'settled', `${input.settleWaitSeconds} seconds`);
    await condition(allHandlersFinished);
    return snapshot(state);
  });
}
