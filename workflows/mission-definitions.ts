import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { MissionCodes } from '../shared/missions/error-codes.js';

/** Mission project status (spec: project lifecycle; ours). `failed`: a phase could not run (see PhaseFailure). */
export const MISSION_STATUSES = ['running', 'paused', 'completed', 'cancelled', 'closed', 'failed'] as const;
export type MissionStatus = (typeof MISSION_STATUSES)[number];

/** Search attribute `MissionWaitingState` (spec, Other lifecycles: mission waiting states). */
export const WAITING_STATES = ['NONE', 'IN_PROGRESS_NEEDING_INPUT', 'STUCK'] as const;
export type WaitingState = (typeof WAITING_STATES)[number];

export const STATUS_ACTIONS = ['pause', 'resume', 'cancel', 'close'] as const;
export type StatusAction = (typeof STATUS_ACTIONS)[number];

/** Allowed transitions: action → (from status → to status). Anything else is refused (409). */
export const STATUS_TRANSITIONS: Record<StatusAction, Partial<Record<MissionStatus, MissionStatus>>> = {
  pause: { running: 'paused' },
  resume: { paused: 'running' },
  cancel: { running: 'cancelled', paused: 'cancelled' },
  close: { running: 'closed', paused: 'closed' },
};

/** The status `action` leads to from `from`, or null when the transition is not allowed. */
export function nextStatus(from: MissionStatus, action: StatusAction): MissionStatus | null {
  return STATUS_TRANSITIONS[action][from] ?? null;
}

export const isTerminal = (s: MissionStatus) =>
  s === 'completed' || s === 'cancelled' || s === 'closed' || s === 'failed';

/** Why a phase could not run; the mission then ends `failed` and the phase's goals stay unmet. */
export const PHASE_FAILURE_CODES = [
  MissionCodes.no_agent,
  MissionCodes.agent_not_found,
  MissionCodes.no_prompt,
  MissionCodes.no_model_provider,
  MissionCodes.model_failed,
  MissionCodes.no_output,
] as const;
export type PhaseFailureCode = (typeof PHASE_FAILURE_CODES)[number];
export interface PhaseFailure {
  reason_code: PhaseFailureCode;
  message: string;
}

/** Recorded evidence of a phase's work: an agent's reply to one of its prompts. */
export interface PhaseReply {
  agent_id: string;
  thread_id: string;
  message_id: string;
}

export interface MissionQuestion {
  id: string;
  content: string;
  priority: 'high' | 'normal' | 'low';
  category: string | null;
  expected_response_type: 'text' | 'choice' | 'boolean' | null;
  options: string[] | null;
  recommended: string | null;
}

/** One phase as snapshotted at start (file prompts already read from the blueprint's commit). */
export interface MissionPhase {
  id: string;
  name: string;
  agents: string[];
  goals: Array<{ id: string; name: string; acceptance_criterion: string | null }>;
  prompts: string[];
  questions: MissionQuestion[];
}

/** State a continued-as-new run carries over. */
export interface MissionCarry {
  phaseIndex: number;
  stage: 'phase_start' | 'awaiting_answers';
  status: MissionStatus;
  stuck: boolean;
  waiting: WaitingState;
  threads: Record<string, string>;
  rootThreadId: string | null;
  phasesDone: number;
  goalsMet: number;
  openSet: { id: string; phase: string; questionIds: string[]; answered: string[] } | null;
  /** The current phase's replies so far (absent in runs carried over before patch mission-goal-evidence). */
  replies?: PhaseReply[];
}

export interface MissionInput {
  projectId: string;
  tenant: string;
  requestedBy: string;
  blueprintName: string;
  blueprintCommit: string;
  /** Epoch ms of the mission's start (the project's `started_at`). */
  startedAtMs: number;
  phases: MissionPhase[];
  /** No progress for this long while running → waiting state `STUCK` (a durable timer). */
  stuckAfterSeconds: number;
  carry?: MissionCarry;
}

export interface MissionStateView {
  status: MissionStatus;
  waiting_state: WaitingState;
  blueprint_phase: string | null;
  progress: number;
  elapsed_time: number;
  agents: string[];
  root_thread_id: string | null;
  stats: { phases_total: number; phases_done: number; goals_total: number; goals_met: number; questions_open: number };
}

export interface SetStatusInput {
  action: StatusAction;
  reason?: string | null;
  by: string;
}
export interface SetStatusResult {
  previous_status: MissionStatus;
  status: MissionStatus;
  reason: string | null;
}

export interface AnswerQuestionsInput {
  question_set_id: string;
  answers: Array<{ question_id: string; answer: string }>;
  by: string;
}
export interface AnswerQuestionsResult {
  question_set_id: string;
  answered: string[];
  remaining: number;
  /** True when the set is complete and the mission continues. */
  resumed: boolean;
}

/** What the mission projects (one event row + its projection change, one transaction). */
export type MissionEventInput =
  | { kind: 'phase_started'; phase: string; phase_index: number }
  | { kind: 'thread_opened'; agent_id: string; thread_id: string; root: boolean }
  | { kind: 'questions_opened'; question_set_id: string; phase: string; questions: MissionQuestion[] }
  | {
      kind: 'questions_answered';
      question_set_id: string;
      answers: Array<{ question_id: string; answer: string }>;
      by: string;
    }
  | {
      kind: 'phase_completed';
      phase: string;
      phases_done: number;
      progress: number;
      /** The evidence the projection checks before it marks the phase's goals met (absent before the patch). */
      replies?: PhaseReply[];
      question_set_id?: string | null;
    }
  | { kind: 'phase_failed'; phase: string; reason_code: PhaseFailureCode; message: string }
  | { kind: 'waiting_state'; state: WaitingState }
  | { kind: 'status_changed'; status: MissionStatus; previous_status: MissionStatus; reason: string | null; by: string }
  | { kind: 'completed' };

/** Refusals of the mission's Updates (ApplicationFailure type; `details[0]` is the code). */
export const MISSION_REFUSAL = 'MissionRefusal';
export type MissionRefusalCode =
  'invalid_transition' | 'unknown_question_set' | 'question_set_answered' | 'bad_answers';

export const missionWorkflowId = (projectId: string) => `mission/${projectId}`;
/** The question set a phase opens (one per phase and project). */
export const questionSetId = (projectId: string, phaseId: string) => `qs_${projectId.slice(4)}_${phaseId}`;
/** The message id of a phase prompt posted into an agent's thread (idempotent per mission, phase, agent). */
export const promptMessageId = (projectId: string, phaseId: string, agentId: string, n: number) =>
  `${projectId}:${phaseId}:${agentId}:${n}`;

/** History length past which the mission continues as new (or sooner when the server suggests it). */
export const MISSION_HISTORY_LIMIT = 5000;

export const setStatusUpdate = defineUpdate<SetStatusResult, [SetStatusInput]>('setStatus');
export const answerQuestionsUpdate = defineUpdate<AnswerQuestionsResult, [AnswerQuestionsInput]>('answerQuestions');
export const missionStateQuery = defineQuery<MissionStateView>('state');
