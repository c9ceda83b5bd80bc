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
import type { MissionActivities, PromptOutcome } from '../activities/missions.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import {
  answerQuestionsUpdate,
  isTerminal,
  MISSION_HISTORY_LIMIT,
  MISSION_REFUSAL,
  missionStateQuery,
  nextStatus,
  promptMessageId,
  questionSetId,
  setStatusUpdate,
  type AnswerQuestionsInput,
  type AnswerQuestionsResult,
  type MissionCarry,
  type MissionEventInput,
  type MissionInput,
  type MissionPhase,
  type MissionRefusalCode,
  type MissionStateView,
  type PhaseFailure,
  type SetStatusInput,
  type SetStatusResult,
  type WaitingState,
} from './mission-definitions.js';

const { missionProject, missionOpenThread } = proxyActivities<MissionActivities>(ActivityProfiles.database);
// A phase prompt waits for the agent's reply (a model call, perhaps tool calls): heartbeats show it alive.
const { missionPostPrompt } = proxyActivities<MissionActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const refuse = (code: MissionRefusalCode, message: string) =>
  ApplicationFailure.create({ type: MISSION_REFUSAL, message, details: [code], nonRetryable: true });

/** `missionOpenThread` refused because the agent is gone from the tenant. */
const isAgentGone = (err: unknown) =>
  err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'MissionAgentGone';

/** Why a prompt's turn produced no evidence, or null when its reply is evidence. */
function turnFailure(phaseId: string, agentId: string, r: PromptOutcome): PhaseFailure | null {
  if (!r.ok)
    return r.failure.kind === 'not_configured'
      ? {
          reason_code: 'no_model_provider',
          message: `Phase ${phaseId}: no language-model provider is configured, so agent ${agentId} could not answer. ${r.failure.message}`,
        }
      : {
          reason_code: 'model_failed',
          message: `Phase ${phaseId}: the model call of agent ${agentId} failed (${r.failure.kind}): ${r.failure.message}`,
        };
  if (r.empty) return { reason_code: 'no_output', message: `Phase ${phaseId}: agent ${agentId} answered nothing.` };
  return null;
}

/** Why a phase that ran without failing still has nothing that could prove its goals, or null. */
function workFailure(phase: MissionPhase, targets: string[]): PhaseFailure | null {
  if (!targets.length && (phase.prompts.length || !phase.questions.length))
    return {
      reason_code: 'no_agent',
      message: `Phase ${phase.id} names no agent and the mission has no thread yet: nobody can work on its goals.`,
    };
  if (!phase.prompts.length && !phase.questions.length)
    return {
      reason_code: 'no_prompt',
      message: `Phase ${phase.id} gives its agents no prompt and asks no question: nothing can prove its goals.`,
    };
  return null;
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
  // Goals met on recorded evidence; a phase that cannot run fails the mission (older runs: every phase passes).
  const evidenceRule = patched('mission-goal-evidence');
  const goalsTotal = input.phases.reduce((n, p) => n + p.goals.length, 0);
  const s: MissionCarry = input.carry ?? {
    phaseIndex: 0,
    stage: 'phase_start',
    status: 'running',
    stuck: false,
    waiting: 'NONE',
    threads: {},
    rootThreadId: null,
    phasesDone: 0,
    goalsMet: 0,
    openSet: null,
  };
  let tick = 0;
  let publishing: Promise<void> = Promise.resolve();

  const project = (event: MissionEventInput) => missionProject({ projectId: input.projectId, event });

  /** Publishes the waiting state (search attribute + projection) when it changed; serialised. */
  const publishWaiting = () => {
    publishing = publishing.then(async () => {
      const next: WaitingState = isTerminal(s.status)
        ? 'NONE'
        : s.stuck
          ? 'STUCK'
          : s.openSet
            ? 'IN_PROGRESS_NEEDING_INPUT'
            : 'NONE';
      if (next === s.waiting) return;
      s.waiting = next;
      upsertSearchAttributes([{ key: SearchAttributes.missionWaitingState, value: next }]);
      await project({ kind: 'waiting_state', state: next });
    });
    return publishing;
  };
  /** Something moved: restart the stuck timer and clear `STUCK`. */
  const progressed = async () => {
    tick++;
    if (s.stuck) {
      s.stuck = false;
      await publishWaiting();
    }
  };

  const view = (): MissionStateView => {
    const phase = input.phases[Math.min(s.phaseIndex, input.phases.length - 1)];
    return {
      status: s.status,
      waiting_state: s.waiting,
      blueprint_phase: input.phases.length ? (phase?.id ?? null) : null,
      progress: input.phases.length ? s.phasesDone / input.phases.length : 1,
      elapsed_time: Math.max(0, Math.floor((Date.now() - input.startedAtMs) / 1000)),
      agents: Object.keys(s.threads),
      root_thread_id: s.rootThreadId,
      stats: {
        phases_total: input.phases.length,
        phases_done: s.phasesDone,
        goals_total: goalsTotal,
        goals_met: s.goalsMet,
        questions_open: s.openSet ? s.openSet.questionIds.length - s.openSet.answered.length : 0,
      },
    };
  };

  setHandler(missionStateQuery, view);
  setHandler(
    setStatusUpdate,
    async (req: SetStatusInput): Promise<SetStatusResult> => {
      const previous = s.status;
      const status = nextStatus(previous, req.action)!;
      s.status = status;
      upsertSearchAttributes([{ key: SearchAttributes.missionStatus, value: status }]);
      await project({
        kind: 'status_changed',
        status,
        previous_status: previous,
        reason: req.reason ?? null,
        by: req.by,
      });
      if (isTerminal(status)) await publishWaiting();
      return { previous_status: previous, status, reason: req.reason ?? null };
    },
    {
      validator: (req: SetStatusInput) => {
        if (!nextStatus(s.status, req.action))
          throw refuse('invalid_transition', `A ${s.status} mission cannot be asked to ${req.action}.`);
      },
    },
  );
  setHandler(
    answerQuestionsUpdate,
    async (req: AnswerQuestionsInput): Promise<AnswerQuestionsResult> => {
      const set = s.openSet!;
      const ids = req.answers.map((a) => a.question_id);
      set.answered.push(...ids);
      const remaining = set.questionIds.length - set.answered.length;
      await project({ kind: 'questions_answered', question_set_id: set.id, answers: req.answers, by: req.by });
      await progressed();
      return { question_set_id: set.id, answered: ids, remaining, resumed: remaining === 0 };
    },
    {
      validator: (req: AnswerQuestionsInput) => {
        if (isTerminal(s.status)) throw refuse('invalid_transition', `The mission is ${s.status}.`);
        const set = s.openSet;
        if (!set || set.id !== req.question_set_id)
          throw refuse('unknown_question_set', `Question set ${req.question_set_id} is not open.`);
        const seen = new Set<string>();
        for (const a of req.answers) {
          if (!set.questionIds.includes(a.question_id) || seen.has(a.question_id))
            throw refuse(
              'bad_answers',
              `Question ${a.question_id} is not a question of set ${set.id} (or is named twice).`,
            );
          if (set.answered.includes(a.question_id))
            throw refuse('question_set_answered', `Question ${a.question_id} is already answered.`);
          seen.add(a.question_id);
        }
      },
    },
  );

  // The stuck detector: one durable timer per quiet stretch while the mission runs.
  const stuckMs = input.stuckAfterSeconds * 1000;
  let finished = false;
  void (async () => {
    while (!finished) {
      if (s.status !== 'running') {
        await condition(() => finished || s.status === 'running');
        continue;
      }
      const seen = tick;
      const moved = await condition(() => finished || tick !== seen || s.status !== 'running', stuckMs);
      if (!moved && !s.stuck && !finished) {
        s.stuck = true;
        await publishWaiting();
      }
      if (!moved && s.stuck) await condition(() => finished || tick !== seen || s.status !== 'running');
    }
  })();

  /** Waits while paused; answers false once the mission is cancelled or closed. */
  const mayContinue = async () => {
    await condition(() => s.status !== 'paused');
    return !isTerminal(s.status);
  };
  const shouldContinueAsNew = () =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MISSION_HISTORY_LIMIT;
  const continueNow = async () => {
    await condition(allHandlersFinished);
    await publishing;
    finished = true;
    await continueAsNew<typeof missionWorkflow>({ ...input, carry: s });
  };

  if (!input.carry) {
    upsertSearchAttributes([
      { key: SearchAttributes.missionStatus, value: s.status },
      { key: SearchAttributes.missionWaitingState, value: s.waiting },
    ]);
  }

  while (s.phaseIndex < input.phases.length) {
    const phase = input.phases[s.phaseIndex]!;
    if (s.stage === 'phase_start') {
      if (shouldContinueAsNew()) return continueNow();
      if (!(await mayContinue())) break;
      await project({ kind: 'phase_started', phase: phase.id, phase_index: s.phaseIndex });
      await progressed();
      const agents = phase.agents.length ? phase.agents : [];
      let failure: PhaseFailure | null = null;
      s.replies = [];
      for (const agentId of agents) {
        if (s.threads[agentId]) continue;
        const opened = await missionOpenThread({
          projectId: input.projectId,
          tenant: input.tenant,
          ownerId: input.requestedBy,
          agentId,
        }).catch((err: unknown) => {
          if (evidenceRule && isAgentGone(err)) return null;
          throw err;
        });
        if (!opened) {
          failure = {
            reason_code: 'agent_not_found',
            message: `Phase ${phase.id}: agent ${agentId} no longer exists.`,
          };
          break;
        }
        const { threadId } = opened;
        s.threads[agentId] = threadId;
        const root = s.rootThreadId === null;
        if (root) s.rootThreadId = threadId;
        await project({ kind: 'thread_opened', agent_id: agentId, thread_id: threadId, root });
      }
      // Prompts go to the phase's agents, else to the root thread (none: the phase has nobody to ask).
      const targets = failure
        ? []
        : agents.length
          ? agents
          : s.rootThreadId
            ? Object.keys(s.threads).filter((a) => s.threads[a] === s.rootThreadId)
            : [];
      for (const agentId of targets) {
        for (const [n, content] of phase.prompts.entries()) {
          if (!(await mayContinue())) break;
          const threadId = s.threads[agentId]!;
          const outcome = await missionPostPrompt({
            tenant: input.tenant,
            threadId,
            agentId,
            ownerId: input.requestedBy,
            messageId: promptMessageId(input.projectId, phase.id, agentId, n),
            content,
          });
          await progressed();
          if (!evidenceRule) continue;
          failure = turnFailure(phase.id, agentId, outcome);
          if (failure) break;
          if (outcome.ok) s.replies.push({ agent_id: agentId, thread_id: threadId, message_id: outcome.messageId });
        }
        if (failure) break;
      }
      if (isTerminal(s.status)) break;
      if (evidenceRule) failure ??= workFailure(phase, targets);
      if (failure) {
        s.status = 'failed';
        upsertSearchAttributes([{ key: SearchAttributes.missionStatus, value: s.status }]);
        await project({ kind: 'phase_failed', phase: phase.id, ...failure });
        break;
      }
      if (phase.questions.length) {
        const id = questionSetId(input.projectId, phase.id);
        s.openSet = { id, phase: phase.id, questionIds: phase.questions.map((q) => q.id), answered: [] };
        await project({ kind: 'questions_opened', question_set_id: id, phase: phase.id, questions: phase.questions });
        await publishWaiting();
      }
      s.stage = 'awaiting_answers';
    }
    if (s.openSet) {
      const set = s.openSet;
      await condition(
        () => set.answered.length === set.questionIds.length || isTerminal(s.status) || shouldContinueAsNew(),
      );
      if (isTerminal(s.status)) break;
      if (set.answered.length < set.questionIds.length) return continueNow();
      await condition(allHandlersFinished);
      s.openSet = null;
      await publishWaiting();
    }
    if (!(await mayContinue())) break;
    s.phasesDone++;
    s.goalsMet += phase.goals.length;
    await project({
      kind: 'phase_completed',
      phase: phase.id,
      phases_done: s.phasesDone,
      progress: s.phasesDone / input.phases.length,
      ...(evidenceRule
        ? {
            replies: s.replies ?? [],
            question_set_id: phase.questions.length ? questionSetId(input.projectId, phase.id) : null,
          }
        : {}),
    });
    s.phaseIndex++;
    s.stage = 'phase_start';
    await progressed();
  }

  if (!isTerminal(s.status)) {
    s.status = 'completed';
    upsertSearchAttributes([{ key: SearchAttributes.missionStatus, value: s.status }]);
    await project({ kind: 'completed' });
  }
  finished = true;
  // A cancel or close ends the loop while its handler still records `status_changed`: let it finish
  // first, so the projection reads status_changed, then waiting_state (patch: mission-terminal-order).
  if (patched('mission-terminal-order')) await condition(allHandlersFinished);
  await publishWaiting();
  await condition(allHandlersFinished);
}
