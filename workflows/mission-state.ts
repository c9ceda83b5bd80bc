import { ApplicationFailure } from '@temporalio/workflow';
import type { PromptOutcome } from '../activities/missions.js';
import {
  isTerminal,
  MISSION_REFUSAL,
  type AnswerQuestionsInput,
  type MissionCarry,
  type MissionInput,
  type MissionPhase,
  type MissionRefusalCode,
  type MissionStateView,
  type PhaseFailure,
  type SetStatusInput,
  type WaitingState,
  nextStatus,
} from './mission-definitions.js';
import { MissionCodes } from '../shared/missions/error-codes.js';

/*
 * The mission workflow's state object and the rules over it: the query's view, the Update
 * validators, the waiting state and why a phase fails. Pure (workflow-safe, no commands), so the
 * handlers and phase steps in `mission.ts` only say which applies.
 */

/** Everything the mission's handlers, phase steps and stuck detector share. */
export interface MissionState {
  readonly input: MissionInput;
  /** What a continued-as-new run carries over: this very object is passed on. */
  readonly carry: MissionCarry;
  /** Patch mission-goal-evidence: goals met on recorded evidence, a phase that cannot run fails (older runs: every phase passes). */
  readonly evidenceRule: boolean;
  readonly goalsTotal: number;
  /** Counts progress: a change restarts the stuck timer. */
  tick: number;
  /** The waiting-state publications, serialised. */
  publishing: Promise<void>;
  /** Set when the run ends (completes or continues as new): the stuck detector stops. */
  finished: boolean;
  /** The stuck detector's loop (see `watchForStuck`). */
  stuckWatch: Promise<void>;
}

const freshCarry = (): MissionCarry => ({
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
});

export function newMissionState(input: MissionInput, evidenceRule: boolean): MissionState {
  return {
    input,
    carry: input.carry ?? freshCarry(),
    evidenceRule,
    goalsTotal: input.phases.reduce((n, p) => n + p.goals.length, 0),
    tick: 0,
    publishing: Promise.resolve(),
    finished: false,
    stuckWatch: Promise.resolve(),
  };
}

/** The waiting state the mission should show now. */
export function waitingStateOf(s: MissionCarry): WaitingState {
  if (isTerminal(s.status)) return 'NONE';
  if (s.stuck) return 'STUCK';
  return s.openSet ? 'IN_PROGRESS_NEEDING_INPUT' : 'NONE';
}

/** The `state` query's answer. */
export function missionView({ input, carry: s, goalsTotal }: MissionState): MissionStateView {
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
}

/** True once every question of the set is answered. */
export const allAnswered = (set: NonNullable<MissionCarry['openSet']>) =>
  set.answered.length === set.questionIds.length;

// ─── Validators: synchronous; a refusal rejects the Update and nothing enters history ───

const refuse = (code: MissionRefusalCode, message: string) =>
  ApplicationFailure.create({ type: MISSION_REFUSAL, message, details: [code], nonRetryable: true });

export function validateSetStatus(s: MissionCarry, req: SetStatusInput): void {
  if (!nextStatus(s.status, req.action))
    throw refuse(MissionCodes.invalid_transition, `A ${s.status} mission cannot be asked to ${req.action}.`);
}

export function validateAnswers(s: MissionCarry, req: AnswerQuestionsInput): void {
  if (isTerminal(s.status)) throw refuse(MissionCodes.invalid_transition, `The mission is ${s.status}.`);
  const set = s.openSet;
  if (!set || set.id !== req.question_set_id)
    throw refuse(MissionCodes.unknown_question_set, `Question set ${req.question_set_id} is not open.`);
  const seen = new Set<string>();
  for (const a of req.answers) {
    if (!set.questionIds.includes(a.question_id) || seen.has(a.question_id))
      throw refuse(
        MissionCodes.bad_answers,
        `Question ${a.question_id} is not a question of set ${set.id} (or is named twice).`,
      );
    if (set.answered.includes(a.question_id))
      throw refuse(MissionCodes.question_set_answered, `Question ${a.question_id} is already answered.`);
    seen.add(a.question_id);
  }
}

// ─── Phases ───

/** Prompts go to the phase's agents, else to the root thread (none: the phase has nobody to ask). */
export function promptTargets(s: MissionCarry, phase: MissionPhase, failure: PhaseFailure | null): string[] {
  if (failure) return [];
  if (phase.agents.length) return phase.agents;
  return s.rootThreadId ? Object.keys(s.threads).filter((a) => s.threads[a] === s.rootThreadId) : [];
}

/** Why a prompt's turn produced no evidence, or null when its reply is evidence. */
export function turnFailure(phaseId: string, agentId: string, r: PromptOutcome): PhaseFailure | null {
  if (!r.ok)
    return r.failure.kind === 'not_configured'
      ? {
          reason_code: MissionCodes.no_model_provider,
          message: `Phase ${phaseId}: no language-model provider is configured, so agent ${agentId} could not answer. ${r.failure.message}`,
        }
      : {
          reason_code: MissionCodes.model_failed,
          message: `Phase ${phaseId}: the model call of agent ${agentId} failed (${r.failure.kind}): ${r.failure.message}`,
        };
  if (r.empty)
    return { reason_code: MissionCodes.no_output, message: `Phase ${phaseId}: agent ${agentId} answered nothing.` };
  return null;
}

/** Why a phase that ran without failing still has nothing that could prove its goals, or null. */
export function workFailure(phase: MissionPhase, targets: string[]): PhaseFailure | null {
  if (!targets.length && (phase.prompts.length || !phase.questions.length))
    return {
      reason_code: MissionCodes.no_agent,
      message: `Phase ${phase.id} names no agent and the mission has no thread yet: nobody can work on its goals.`,
    };
  if (!phase.prompts.length && !phase.questions.length)
    return {
      reason_code: MissionCodes.no_prompt,
      message: `Phase ${phase.id} gives its agents no prompt and asks no question: nothing can prove its goals.`,
    };
  return null;
}
