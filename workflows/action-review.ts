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
import {
  checkDecision,
  checkExecute,
  checkReconcile,
  initialProgress,
  isTerminal,
} from '../shared/action-review/checks.js';
import { classifyEffectFailure, errorDetail } from '../shared/action-review/effect-failure.js';
import { REFUSAL_FAILURE_TYPE, type Refusal } from '../shared/action-review/refusals.js';
import type {
  ProposalEventType,
  ProposalProgress,
  ProposalRecord,
  ProposalRuntime,
  ProposalWorkflowInput,
} from '../shared/action-review/types.js';
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
  type ReconcileArgs,
} from './action-review-definitions.js';
import {
  approveAndExecuteOutcome,
  decisionOutcome,
  effectOutcome,
  finalEventDetail,
  reconciliationRequired,
  replayedOutcome,
} from './action-review-outcomes.js';
import { actionReviewHandbackWorkflow } from './handback.js';

/*
 * One Action Review proposal, laid out like the Temporal samples' message handlers: one state
 * object (`ProposalState`), one small named handler per Update or query over it, the answers built
 * by the constructors of `action-review-outcomes.ts`, and the workflow function only wiring them.
 * The commands each handler issues (search-attribute upsert, projection activity, hand-back child,
 * effect activity) and their order are what the recorded histories in tests/histories/ replay.
 */

const db = proxyActivities<ActionReviewActivities>(ActivityProfiles.database);

/** Everything the handlers share. `progress` changes synchronously, so the next validator sees it. */
interface ProposalState {
  readonly record: ProposalRecord;
  readonly runtime: ProposalRuntime;
  readonly progress: ProposalProgress;
  /** The effect activity, with the deployment's timeouts (fixed in the input, so replay never reads the environment). */
  readonly effects: ActionReviewActivities;
  /** Number of the last projected event (1 is `proposed`). */
  seq: number;
  /** True once the creation is projected; `created` answers after that. */
  created: boolean;
  /** The one execution's outcome, once it is recorded. */
  execution: ExecutionOutcome | null;
}

function newProposalState({ record, runtime }: ProposalWorkflowInput): ProposalState {
  return {
    record,
    runtime,
    progress: initialProgress(record),
    effects: proxyActivities<ActionReviewActivities>(
      ActivityProfiles.heartbeatingOnce(runtime.effectTimeoutSeconds, runtime.effectHeartbeatSeconds),
    ),
    seq: 1,
    created: false,
    execution: null,
  };
}

const snapshot = (state: ProposalState): ProposalSnapshot => ({
  record: state.record,
  progress: { ...state.progress },
});

// ─── Validators: synchronous; a refusal rejects the Update and nothing enters history ───

/** Validators throw this: the update is rejected synchronously and nothing enters history. */
function refuse(refusal: Refusal | null): void {
  if (refusal)
    throw ApplicationFailure.create({
      type: REFUSAL_FAILURE_TYPE,
      message: refusal.message,
      details: [refusal.code],
      nonRetryable: true,
    });
}

const validateDecision = (state: ProposalState, args: DecideArgs) =>
  refuse(checkDecision(state.record, state.progress, args));

const validateApproveAndExecute = (state: ProposalState, args: DecideArgs & ExecuteArgs) =>
  refuse(
    checkDecision(state.record, state.progress, args) ??
      checkExecute(state.record, { ...state.progress, status: 'approved' }, args),
  );

const validateExecute = (state: ProposalState, args: ExecuteArgs) =>
  refuse(checkExecute(state.record, state.progress, args));

const validateReconcile = (state: ProposalState, args: ReconcileArgs) =>
  refuse(checkReconcile(state.progress, args.caller));

// ─── Steps the handlers share ───

/** Applies the change synchronously (so the next validator sees it), then projects it (row + event + pending hand-back). */
function transition(
  state: ProposalState,
  type: ProposalEventType,
  actor: PrincipalRef,
  reason: string | null,
  detail: Record<string, unknown> | null,
  changes: Partial<ProposalProgress>,
): Promise<void> {
  const { record, progress } = state;
  const occurredAt = new Date().toISOString();
  Object.assign(progress, changes, { version: progress.version + 1, updatedAt: occurredAt });
  state.seq += 1;
  upsertSearchAttributes([{ key: SearchAttributes.proposalStatus, value: progress.status }]);
  const handback =
    (type === 'approved' || type === 'rejected') && record.threadId
      ? { threadId: record.threadId, decision: type, reason, decidedByLabel: actor.label }
      : null;
  return db.recordProposalTransition({
    proposalId: record.proposalId,
    tenant: record.tenant,
    progress: { ...progress },
    event: { seq: state.seq, type, actor, reason, detail, occurredAt },
    handback,
  });
}

/** Starts the child that delivers the decision into the raising thread (none when raised outside one). */
async function startHandback(state: ProposalState): Promise<void> {
  const { record, runtime } = state;
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

/** One attempt of the effect activity, turned into an outcome. */
async function attemptEffect(state: ProposalState, caller: PrincipalRef): Promise<ExecutionOutcome> {
  const { record } = state;
  try {
    return effectOutcome(
      await state.effects.runProposalEffect({
        proposalId: record.proposalId,
        tenant: record.tenant,
        actionType: record.actionType,
        payload: record.payload,
        executedBy: caller,
      }),
    );
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    // Executors answer not_applied when nothing was written; a failed or timed-out attempt (a dead
    // worker, a lost answer) may have applied the effect, so a person reconciles: never a retry.
    // What people see is classified from the failure's type; its own text goes to the log only.
    const failure = classifyEffectFailure(err.cause);
    const errorId = failure.errorId ?? uuid4();
    if (!failure.errorId) {
      log.warn('action review effect attempt failed', {
        proposal_id: record.proposalId,
        error_id: errorId,
        failure_name: err.cause?.name,
        failure_message: err.cause?.message,
      });
    }
    return reconciliationRequired(errorDetail(failure.summary, errorId));
  }
}

/** Exactly one claim and one effect attempt; a later caller waits for and answers the recorded outcome. */
async function runEffect(
  state: ProposalState,
  caller: PrincipalRef,
  origin: ExecutionOriginRef,
): Promise<ExecutionOutcome> {
  if (state.progress.claimed) {
    await condition(() => state.execution !== null);
    return replayedOutcome(state.execution!);
  }
  await transition(state, 'execution_claimed', caller, null, { origin }, { status: 'executing', claimed: true });
  const outcome = await attemptEffect(state, caller);
  await transition(state, outcome.finalStatus, caller, null, finalEventDetail(outcome), {
    status: outcome.finalStatus,
    finalStatus: outcome.finalStatus,
    executionReceipt: outcome.result,
    executionRefusalReason: outcome.refusalReason,
    executionRefusalDetail: outcome.refusalDetail,
    executionErrorDetail: outcome.errorDetail,
  });
  state.execution = outcome;
  return outcome;
}

/** Records the decision, starts the hand-back, then executes when approving is the action or was asked for. */
async function decide(
  state: ProposalState,
  approve: boolean,
  args: DecideArgs,
  thenExecute: ExecutionOriginRef | null,
): Promise<DecisionOutcome> {
  const status = approve ? 'approved' : 'rejected';
  await transition(state, status, args.caller, args.reason, null, {
    status,
    decidedBy: args.caller,
    decisionReason: args.reason,
    decidedAt: new Date().toISOString(),
  });
  await startHandback(state);
  if (!(approve && thenExecute)) return decisionOutcome(state.progress, null);
  const claimedElsewhere = state.progress.claimed;
  const outcome = await runEffect(state, args.caller, thenExecute);
  return decisionOutcome(state.progress, approveAndExecuteOutcome(outcome, claimedElsewhere));
}

// ─── Handlers: one per Update or query ───

/** Approving a self-applying action (one whose approval is the effect) executes it as if from the inbox. */
const INBOX_ORIGIN: ExecutionOriginRef = { surface: 'api', threadId: null };

const queryState = (state: ProposalState): ProposalSnapshot => snapshot(state);

async function awaitCreated(state: ProposalState): Promise<ProposalProgress> {
  await condition(() => state.created);
  return { ...state.progress };
}

const approve = (state: ProposalState, args: DecideArgs) =>
  decide(state, true, args, approvingIsTheAction(state.record.actionType) ? INBOX_ORIGIN : null);

const approveAndExecute = (state: ProposalState, args: DecideArgs & ExecuteArgs) =>
  decide(state, true, args, args.origin);

const reject = (state: ProposalState, args: DecideArgs) => decide(state, false, args, null);

const execute = (state: ProposalState, args: ExecuteArgs) => runEffect(state, args.caller, args.origin);

async function reconcile(state: ProposalState, args: ReconcileArgs): Promise<ProposalProgress> {
  await transition(
    state,
    'reconciled',
    args.caller,
    args.note,
    { final_status: args.finalStatus },
    {
      status: 'resolved',
      finalStatus: args.finalStatus,
      resolvedBy: args.caller,
      resolutionNote: args.note,
    },
  );
  return { ...state.progress };
}

function registerHandlers(state: ProposalState): void {
  setHandler(proposalStateQuery, () => queryState(state));
  setHandler(createdUpdate, () => awaitCreated(state));
  setHandler(approveUpdate, (args) => approve(state, args), { validator: (args) => validateDecision(state, args) });
  setHandler(approveAndExecuteUpdate, (args) => approveAndExecute(state, args), {
    validator: (args) => validateApproveAndExecute(state, args),
  });
  setHandler(rejectUpdate, (args) => reject(state, args), { validator: (args) => validateDecision(state, args) });
  setHandler(executeUpdate, (args) => execute(state, args), { validator: (args) => validateExecute(state, args) });
  setHandler(reconcileUpdate, (args) => reconcile(state, args), {
    validator: (args) => validateReconcile(state, args),
  });
}

/**
 * One Action Review proposal: requested → approved | rejected; approved → execute (exactly one
 * claim, one effect attempt) → executed | not_applied | reconciliation_required; the last →
 * reconcile → resolved. Every transition is an Update whose validator refuses without a trace,
 * and is projected to PostgreSQL (row + event) before the Update answers.
 */
export async function actionReviewProposalWorkflow(input: ProposalWorkflowInput): Promise<ProposalSnapshot> {
  const state = newProposalState(input);
  registerHandlers(state);
  await db.recordProposalCreated({
    record: state.record,
    progress: { ...state.progress },
    event: {
      seq: 1,
      type: 'proposed',
      actor: state.record.requester,
      reason: null,
      detail: null,
      occurredAt: state.record.createdAt,
    },
  });
  state.created = true;
  await condition(() => isTerminal(state.progress.status));
  await condition(allHandlersFinished);
  return snapshot(state);
}
