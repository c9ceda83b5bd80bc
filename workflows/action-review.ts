import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  uuid4,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ActionReviewActivities } from '../activities/action-review.js';
import type { PrincipalRef } from '../shared/auth/principal.js';
import { approvingIsTheAction } from '../shared/action-review/action-types.js';
import { checkDecision, checkExecute, checkReconcile, initialProgress, isTerminal } from '../shared/action-review/checks.js';
import { classifyEffectFailure, errorDetail } from '../shared/action-review/effect-failure.js';
import { REFUSAL_FAILURE_TYPE, type Refusal } from '../shared/action-review/refusals.js';
import type { ProposalEventType, ProposalProgress, ProposalWorkflowInput } from '../shared/action-review/types.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import {
  approveAndExecuteUpdate,
  approveUpdate,
  createdUpdate,
  executeUpdate,
  handbackWorkflowId,
  proposalStateQuery,
  reconcileUpdate,
  rejectUpdate,
  type DecideArgs,
  type DecisionOutcome,
  type ExecuteArgs,
  type ExecutionOriginRef,
  type ExecutionOutcome,
  type ProposalSnapshot,
} from './action-review-definitions.js';
import { actionReviewHandbackWorkflow } from './handback.js';

const db = proxyActivities<ActionReviewActivities>(ActivityProfiles.database);

/** Validators throw this: the update is rejected synchronously and nothing enters history. */
function refuse(refusal: Refusal | null): void {
  if (refusal) throw ApplicationFailure.create({ type: REFUSAL_FAILURE_TYPE, message: refusal.message, details: [refusal.code], nonRetryable: true });
}

/**
 * One Action Review proposal: requested → approved | rejected; approved → execute (exactly one
 * claim, one effect attempt) → executed | not_applied | reconciliation_required; the last →
 * reconcile → resolved. Every transition is an Update whose validator refuses without a trace,
 * and is projected to PostgreSQL (row + event) before the Update answers.
 */
export async function actionReviewProposalWorkflow(input: ProposalWorkflowInput): Promise<ProposalSnapshot> {
  const { record, runtime } = input;
  const progress: ProposalProgress = initialProgress(record);
  const effects = proxyActivities<ActionReviewActivities>({
    ...ActivityProfiles.irreversible,
    startToCloseTimeout: `${runtime.effectTimeoutSeconds} seconds`,
    heartbeatTimeout: `${runtime.effectHeartbeatSeconds} seconds`,
  });
  let seq = 1;
  let created = false;
  let execution: ExecutionOutcome | null = null;

  /** Applies the change synchronously (so the next validator sees it), then projects it. */
  function transition(type: ProposalEventType, actor: PrincipalRef, reason: string | null, detail: Record<string, unknown> | null, changes: Partial<ProposalProgress>) {
    const occurredAt = new Date().toISOString();
    Object.assign(progress, changes, { version: progress.version + 1, updatedAt: occurredAt });
    seq += 1;
    upsertSearchAttributes([{ key: SearchAttributes.proposalStatus, value: progress.status }]);
    const handback =
      (type === 'approved' || type === 'rejected') && record.threadId
        ? { threadId: record.threadId, decision: type, reason, decidedByLabel: actor.label }
        : null;
    return db.recordProposalTransition({
      proposalId: record.proposalId,
      tenant: record.tenant,
      progress: { ...progress },
      event: { seq, type, actor, reason, detail, occurredAt },
      handback,
    });
  }

  async function startHandback(): Promise<void> {
    if (!record.threadId) return; // raised outside a conversation: the requester polls instead
    try {
      await startChild(actionReviewHandbackWorkflow, {
        workflowId: handbackWorkflowId(record.proposalId),
        args: [{ proposalId: record.proposalId, maxAttempts: runtime.handbackMaxAttempts }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: SearchAttributes.tenant, value: record.tenant },
          { key: SearchAttributes.resourceId, value: record.proposalId },
        ],
      });
    } catch (err) {
      // Already started (one decision per proposal): the running hand-back, or the sweep, delivers it.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  async function runEffect(caller: PrincipalRef, origin: ExecutionOriginRef): Promise<ExecutionOutcome> {
    if (progress.claimed) {
      await condition(() => execution !== null);
      return { ...execution!, replayed: true };
    }
    await transition('execution_claimed', caller, null, { origin }, { status: 'executing', claimed: true });
    let outcome: ExecutionOutcome;
    try {
      const r = await effects.runProposalEffect({
        proposalId: record.proposalId,
        tenant: record.tenant,
        actionType: record.actionType,
        payload: record.payload,
        executedBy: caller,
      });
      outcome =
        r.outcome === 'executed'
          ? { claimed: true, finalStatus: 'executed', replayed: false, refusalReason: null, refusalDetail: null, errorDetail: null, result: r.result }
          : { claimed: true, finalStatus: 'not_applied', replayed: false, refusalReason: r.reason, refusalDetail: r.detail, errorDetail: null, result: null };
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // Executors answer not_applied when nothing was written; a failed or timed-out attempt (a dead
      // worker, a lost answer) may have applied the effect, so a person reconciles: never a retry.
      // What people see is classified from the failure's type; its own text goes to the log only.
      const failure = classifyEffectFailure(err.cause);
      const errorId = failure.errorId ?? uuid4();
      if (!failure.errorId) {
        log.warn('action review effect attempt failed', { proposal_id: record.proposalId, error_id: errorId, failure_name: err.cause?.name, failure_message: err.cause?.message });
      }
      outcome = {
        claimed: true,
        finalStatus: 'reconciliation_required',
        replayed: false,
        refusalReason: null,
        refusalDetail: null,
        errorDetail: errorDetail(failure.summary, errorId),
        result: null,
      };
    }
    await transition(outcome.finalStatus, caller, null, outcome.result ?? (outcome.refusalReason ? { refusal_reason: outcome.refusalReason } : null), {
      status: outcome.finalStatus,
      finalStatus: outcome.finalStatus,
      executionReceipt: outcome.result,
      executionRefusalReason: outcome.refusalReason,
      executionRefusalDetail: outcome.refusalDetail,
      executionErrorDetail: outcome.errorDetail,
    });
    execution = outcome;
    return outcome;
  }

  async function decide(approve: boolean, args: DecideArgs, thenExecute: ExecutionOriginRef | null): Promise<DecisionOutcome> {
    const status = approve ? 'approved' : 'rejected';
    await transition(status, args.caller, args.reason, null, {
      status,
      decidedBy: args.caller,
      decisionReason: args.reason,
      decidedAt: new Date().toISOString(),
    });
    await startHandback();
    let outcome: ExecutionOutcome | null = null;
    if (approve && thenExecute) {
      const claimedElsewhere = progress.claimed;
      outcome = await runEffect(args.caller, thenExecute);
      // An execute raced this approval and claimed the grant first: report it, never run twice.
      if (claimedElsewhere) outcome = { ...outcome, refusalReason: 'claim_lost' };
      else if (outcome.finalStatus === 'reconciliation_required') outcome = { ...outcome, refusalReason: 'outcome_not_recorded' };
    }
    return { decided: true, progress: { ...progress }, execution: outcome };
  }

  const selfApplying = approvingIsTheAction(record.actionType);
  const inbox: ExecutionOriginRef = { surface: 'api', threadId: null };
  setHandler(proposalStateQuery, () => ({ record, progress: { ...progress } }));
  setHandler(createdUpdate, async () => {
    await condition(() => created);
    return { ...progress };
  });
  setHandler(approveUpdate, (args) => decide(true, args, selfApplying ? inbox : null), {
    validator: (args) => refuse(checkDecision(record, progress, args)),
  });
  setHandler(approveAndExecuteUpdate, (args) => decide(true, args, args.origin), {
    validator: (args) => refuse(checkDecision(record, progress, args) ?? checkExecute(record, { ...progress, status: 'approved' }, args)),
  });
  setHandler(rejectUpdate, (args) => decide(false, args, null), {
    validator: (args) => refuse(checkDecision(record, progress, args)),
  });
  setHandler(executeUpdate, (args: ExecuteArgs) => runEffect(args.caller, args.origin), {
    validator: (args) => refuse(checkExecute(record, progress, args)),
  });
  setHandler(
    reconcileUpdate,
    async (args) => {
      await transition('reconciled', args.caller, args.note, { final_status: args.finalStatus }, {
        status: 'resolved',
        finalStatus: args.finalStatus,
        resolvedBy: args.caller,
        resolutionNote: args.note,
      });
      return { ...progress };
    },
    { validator: (args) => refuse(checkReconcile(progress, args.caller)) },
  );

  await db.recordProposalCreated({
    record,
    progress: { ...progress },
    event: { seq: 1, type: 'proposed', actor: record.requester, reason: null, detail: null, occurredAt: record.createdAt },
  });
  created = true;
  await condition(() => isTerminal(progress.status));
  await condition(allHandlersFinished);
  return { record, progress: { ...progress } };
}
