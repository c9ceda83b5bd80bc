import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { MissionActivities } from '../activities/missions.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import {
  answerQuestionsUpdate,
  isTerminal,
  MISSION_HISTORY_LIMIT,
  missionStateQuery,
  nextStatus,
  promptMessageId,
  questionSetId,
  setStatusUpdate,
  type AnswerQuestionsInput,
  type AnswerQuestionsResult,
  type MissionEventInput,
  type MissionInput,
  type MissionPhase,
  type MissionStatus,
  type PhaseFailure,
  type SetStatusInput,
  type SetStatusResult,
} from './mission-definitions.js';
import {
  allAnswered,
  missionView,
  newMissionState,
  promptTargets,
  turnFailure,
  validateAnswers,
  validateSetStatus,
  waitingStateOf,
  workFailure,
  type MissionState,
} from './mission-state.js';
import { MissionCodes } from '../shared/missions/error-codes.js';

/*
 * One mission, laid out like the proposal workflow (`action-review.ts`): one state object
 * (`MissionState`, with the rules over it in `mission-state.ts`), one named handler per Update or
 * query, one named step per stage of a phase, a named stuck detector, and the workflow function
 * only wiring them. The commands each step issues and their order are what the recorded histories
 * in tests/histories/ replay: keep both (and every `patched()` id) as they are.
 */

const { missionProject, missionOpenThread } = proxyActivities<MissionActivities>(ActivityProfiles.database);
// A phase prompt waits for the agent's reply (a model call, perhaps tool calls): heartbeats show it alive.
const { missionPostPrompt } = proxyActivities<MissionActivities>(ActivityProfiles.agentPrompt);

/** `missionOpenThread` refused because the agent is gone from the tenant. */
const isAgentGone = (err: unknown) =>
  err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'MissionAgentGone';

// ─── Steps the handlers and phases share ───

const project = (state: MissionState, event: MissionEventInput) =>
  missionProject({ projectId: state.input.projectId, event });

/** Sets the status and its search attribute (the caller projects the event that says why). */
function markStatus(state: MissionState, status: MissionStatus): void {
  state.carry.status = status;
  upsertSearchAttributes([{ key: SearchAttributes.missionStatus, value: status }]);
}

/** Publishes the waiting state (search attribute + projection) when it changed; serialised. */
function publishWaiting(state: MissionState): Promise<void> {
  const s = state.carry;
  state.publishing = state.publishing.then(async () => {
    const next = waitingStateOf(s);
    if (next === s.waiting) return;
    s.waiting = next;
    upsertSearchAttributes([{ key: SearchAttributes.missionWaitingState, value: next }]);
    await project(state, { kind: 'waiting_state', state: next });
  });
  return state.publishing;
}

/** Something moved: restart the stuck timer and clear `STUCK`. */
async function progressed(state: MissionState): Promise<void> {
  state.tick++;
  if (state.carry.stuck) {
    state.carry.stuck = false;
    await publishWaiting(state);
  }
}

/** Waits while paused; answers false once the mission is cancelled or closed. */
async function mayContinue(state: MissionState): Promise<boolean> {
  await condition(() => state.carry.status !== 'paused');
  return !isTerminal(state.carry.status);
}

const shouldContinueAsNew = () =>
  workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MISSION_HISTORY_LIMIT;

async function continueNow(state: MissionState): Promise<void> {
  await condition(allHandlersFinished);
  await state.publishing;
  state.finished = true;
  await continueAsNew<typeof missionWorkflow>({ ...state.input, carry: state.carry });
}

// ─── Handlers: one per Update or query ───

async function setStatus(state: MissionState, req: SetStatusInput): Promise<SetStatusResult> {
  const previous = state.carry.status;
  const status = nextStatus(previous, req.action)!;
  markStatus(state, status);
  const reason = req.reason ?? null;
  await project(state, { kind: 'status_changed', status, previous_status: previous, reason, by: req.by });
  if (isTerminal(status)) await publishWaiting(state);
  return { previous_status: previous, status, reason };
}

async function answerQuestions(state: MissionState, req: AnswerQuestionsInput): Promise<AnswerQuestionsResult> {
  const set = state.carry.openSet!;
  const ids = req.answers.map((a) => a.question_id);
  set.answered.push(...ids);
  const remaining = set.questionIds.length - set.answered.length;
  await project(state, { kind: 'questions_answered', question_set_id: set.id, answers: req.answers, by: req.by });
  await progressed(state);
  return { question_set_id: set.id, answered: ids, remaining, resumed: remaining === 0 };
}

function registerHandlers(state: MissionState): void {
  setHandler(missionStateQuery, () => missionView(state));
  setHandler(setStatusUpdate, (req) => setStatus(state, req), {
    validator: (req) => validateSetStatus(state.carry, req),
  });
  setHandler(answerQuestionsUpdate, (req) => answerQuestions(state, req), {
    validator: (req) => validateAnswers(state.carry, req),
  });
}

// ─── The stuck detector ───

/**
 * One durable timer per quiet stretch while the mission runs; `STUCK` when it fires. Ends with the
 * run: `finish` awaits it; a run that continues as new leaves it (the next run starts its own).
 */
async function watchForStuck(state: MissionState): Promise<void> {
  const s = state.carry;
  const stuckMs = state.input.stuckAfterSeconds * 1000;
  while (!state.finished) {
    if (s.status !== 'running') {
      await condition(() => state.finished || s.status === 'running');
      continue;
    }
    const seen = state.tick;
    const stretchOver = () => state.finished || state.tick !== seen || s.status !== 'running';
    const moved = await condition(stretchOver, stuckMs);
    if (!moved && !s.stuck && !state.finished) {
      s.stuck = true;
      await publishWaiting(state);
    }
    if (!moved && s.stuck) await condition(stretchOver);
  }
}

// ─── Phase steps ───

/** Opens the threads of the phase's agents that have none yet (the first is the root thread). */
async function openThreads(state: MissionState, phase: MissionPhase): Promise<PhaseFailure | null> {
  const { input, carry: s } = state;
  for (const agentId of phase.agents) {
    if (s.threads[agentId]) continue;
    const opened = await missionOpenThread({
      projectId: input.projectId,
      tenant: input.tenant,
      ownerId: input.requestedBy,
      agentId,
    }).catch((err: unknown) => {
      if (state.evidenceRule && isAgentGone(err)) return null;
      throw err;
    });
    if (!opened)
      return {
        reason_code: MissionCodes.agent_not_found,
        message: `Phase ${phase.id}: agent ${agentId} no longer exists.`,
      };
    const { threadId } = opened;
    s.threads[agentId] = threadId;
    const root = s.rootThreadId === null;
    if (root) s.rootThreadId = threadId;
    await project(state, { kind: 'thread_opened', agent_id: agentId, thread_id: threadId, root });
  }
  return null;
}

/** Posts the phase's prompts into one agent's thread, keeping each reply as evidence; stops at a failed turn or the mission's end. */
async function postPrompts(state: MissionState, phase: MissionPhase, agentId: string): Promise<PhaseFailure | null> {
  const { input, carry: s } = state;
  for (const [n, content] of phase.prompts.entries()) {
    if (!(await mayContinue(state))) return null;
    const threadId = s.threads[agentId]!;
    const outcome = await missionPostPrompt({
      tenant: input.tenant,
      threadId,
      agentId,
      ownerId: input.requestedBy,
      messageId: promptMessageId(input.projectId, phase.id, agentId, n),
      content,
    });
    await progressed(state);
    if (!state.evidenceRule) continue;
    const failure = turnFailure(phase.id, agentId, outcome);
    if (failure) return failure;
    if (outcome.ok) s.replies!.push({ agent_id: agentId, thread_id: threadId, message_id: outcome.messageId });
  }
  return null;
}

/** Opens the phase's question set; the mission then waits for people. */
async function openQuestions(state: MissionState, phase: MissionPhase): Promise<void> {
  const id = questionSetId(state.input.projectId, phase.id);
  state.carry.openSet = { id, phase: phase.id, questionIds: phase.questions.map((q) => q.id), answered: [] };
  await project(state, { kind: 'questions_opened', question_set_id: id, phase: phase.id, questions: phase.questions });
  await publishWaiting(state);
}

/** A phase's start: its threads, its prompts, then its questions; false when the mission ends here (ended or failed). */
async function startPhase(state: MissionState, phase: MissionPhase): Promise<boolean> {
  const s = state.carry;
  if (!(await mayContinue(state))) return false;
  await project(state, { kind: 'phase_started', phase: phase.id, phase_index: s.phaseIndex });
  await progressed(state);
  s.replies = [];
  let failure = await openThreads(state, phase);
  const targets = promptTargets(s, phase, failure);
  for (const agentId of targets) {
    failure = await postPrompts(state, phase, agentId);
    if (failure) break;
  }
  if (isTerminal(s.status)) return false;
  if (state.evidenceRule) failure ??= workFailure(phase, targets);
  if (failure) {
    markStatus(state, 'failed');
    await project(state, { kind: 'phase_failed', phase: phase.id, ...failure });
    return false;
  }
  if (phase.questions.length) await openQuestions(state, phase);
  s.stage = 'awaiting_answers';
  return true;
}

/** Closes the answered question set once its handlers have finished. */
async function closeQuestions(state: MissionState): Promise<void> {
  await condition(allHandlersFinished);
  state.carry.openSet = null;
  await publishWaiting(state);
}

/** Marks the phase done; the projection meets its goals on the evidence recorded (after patch mission-goal-evidence). */
async function completePhase(state: MissionState, phase: MissionPhase): Promise<void> {
  const { input, carry: s } = state;
  s.phasesDone++;
  s.goalsMet += phase.goals.length;
  const evidence = state.evidenceRule
    ? {
        replies: s.replies ?? [],
        question_set_id: phase.questions.length ? questionSetId(input.projectId, phase.id) : null,
      }
    : {};
  const progress = s.phasesDone / input.phases.length;
  await project(state, { kind: 'phase_completed', phase: phase.id, phases_done: s.phasesDone, progress, ...evidence });
  s.phaseIndex++;
  s.stage = 'phase_start';
  await progressed(state);
}

/** Completes the mission unless it already ended, then publishes its last waiting state. */
async function finish(state: MissionState): Promise<void> {
  if (!isTerminal(state.carry.status)) {
    markStatus(state, 'completed');
    await project(state, { kind: 'completed' });
  }
  state.finished = true;
  // A cancel or close ends the loop while its handler still records `status_changed`: let it finish
  // first, so the projection reads status_changed, then waiting_state (patch: mission-terminal-order).
  if (patched('mission-terminal-order')) await condition(allHandlersFinished);
  await publishWaiting(state);
  await condition(allHandlersFinished);
  await state.stuckWatch;
}

/**
 * A mission (`mission/<project_id>`): walks the snapshotted blueprint's phases in order. Per phase it
 * marks the phase's goals in progress, opens the threads of the agents the phase names (the mission's
 * first thread is its root thread), posts the phase's prompts into them, and, when the phase has
 * questions, opens a question set and waits durably until people answer it; then the goals are met,
 * on evidence only: the agents' replies to the prompts, else the answered questions. A phase that
 * cannot run (no agent, agent gone, model failure) ends the mission `failed`, saying why.
 * `setStatus` pauses, resumes, cancels or closes; `answerQuestions` answers. A timer per quiet
 * stretch marks the mission `STUCK` after `stuckAfterSeconds` without progress while running.
 * Every change is projected by `missionProject` (row + event, one transaction).
 */
export async function missionWorkflow(input: MissionInput): Promise<void> {
  const state = newMissionState(input, patched('mission-goal-evidence'));
  const s = state.carry;
  registerHandlers(state);
  state.stuckWatch = watchForStuck(state);
  if (!input.carry) {
    upsertSearchAttributes([
      { key: SearchAttributes.missionStatus, value: s.status },
      { key: SearchAttributes.missionWaitingState, value: s.waiting },
    ]);
  }
  // The answers are awaited here and `finish` is called right after the loop, not through a helper
  // that returns first: a cancel wakes this and the stuck detector together, and the commands each
  // issues next must keep their recorded order (an extra await would let the detector's go first).
  while (s.phaseIndex < input.phases.length) {
    const phase = input.phases[s.phaseIndex]!;
    if (s.stage === 'phase_start') {
      if (shouldContinueAsNew()) return continueNow(state);
      if (!(await startPhase(state, phase))) break;
    }
    const set = s.openSet;
    if (set) {
      await condition(() => allAnswered(set) || isTerminal(s.status) || shouldContinueAsNew());
      if (isTerminal(s.status)) break;
      if (!allAnswered(set)) return continueNow(state);
      await closeQuestions(state);
    }
    if (!(await mayContinue(state))) break;
    await completePhase(state, phase);
  }
  await finish(state);
}
