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
  claimMergeUpdate,
  CRM_MERGE_REFUSAL_TYPE,
  crmMergeStateQuery,
  mergeSettledSignal,
  type CrmMergeRefusalCode,
  type CrmMergeState,
  type CrmMergeWorkflowInput,
} from './crm-merge-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

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

/**
 * One CRM merge approval, held for its lifetime: approve and execute are Updates refused once the
 * TTL has ended (`condition(fn, ttl)`), and expiry is recorded as a state. The decision and the
 * one-time merge itself run on the Action Review proposal with the same id (one inbox); this
 * workflow guards the lifetime and the bound connection.
 */
export async function crmMergeApprovalWorkflow(input: CrmMergeWorkflowInput): Promise<CrmMergeState> {
  const state: CrmMergeState = { phase: 'open', approvedBy: null, finalStatus: null };
  // True from the moment the TTL fires: no update may slip in while expiry is being recorded.
  let ttlEnded = false;
  const setPhase = (phase: CrmMergeState['phase']) => {
    state.phase = phase;
    upsertSearchAttributes([{ key: SearchAttributes.status, value: phase }]);
  };
  const expiredRefusal = () => (ttlEnded || state.phase === 'expired' ? 'approval_expired' : null);

  setHandler(crmMergeStateQuery, () => ({ ...state }));
  setHandler(
    approveMergeUpdate,
    async (args) => {
      await db.recordMergeApproved({ approvalId: input.approvalId, approvedBy: args.caller });
      state.approvedBy = args.caller;
      return { ...state };
    },
    {
      validator: (args) => {
        refuse(
          args.caller.kind !== 'person' ? 'person_only' : null,
          'Only a genuinely authenticated person can approve a merge.',
        );
        refuse(expiredRefusal(), `The approval's lifetime (${input.ttlSeconds} s) has ended.`);
      },
    },
  );
  setHandler(
    claimMergeUpdate,
    (_args) => {
      if (state.phase === 'open') setPhase('executing');
      return { ...state };
    },
    {
      validator: (args) => {
        refuse(expiredRefusal(), `The approval's lifetime (${input.ttlSeconds} s) has ended.`);
        refuse(
          args.connectionName !== input.connectionName ? 'connection_mismatch' : null,
          `The approval is bound to connection "${input.connectionName}".`,
        );
      },
    },
  );
  setHandler(mergeSettledSignal, ({ finalStatus }) => {
    state.finalStatus = finalStatus;
    setPhase('settled');
    // The outcome itself, so a merge that was not applied is findable.
    if (isSettledStatus(finalStatus)) setLifecycleStatus('crmMergeApprovalWorkflow', finalStatus);
  });

  return trackFailure('crmMergeApprovalWorkflow', async () => {
    const claimedInTime = await condition(() => state.phase !== 'open', `${input.ttlSeconds} seconds`);
    if (!claimedInTime) {
      ttlEnded = true;
      const { expired } = await db.expireMergeApproval({ approvalId: input.approvalId });
      if (expired) {
        setPhase('expired');
        await condition(allHandlersFinished);
        return { ...state };
      }
      // The execution started from the Action Review inbox just before the TTL: its outcome stands.
      setPhase('executing');
    }
    await condition(() => state.phase === 'settled', `${input.settleWaitSeconds} seconds`);
    await condition(allHandlersFinished);
    return { ...state };
  });
}
