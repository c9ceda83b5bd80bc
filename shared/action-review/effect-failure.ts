// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';

/**
 * How a failed effect attempt is described to people (`execution_error_detail`): a classified
 * sentence and an `error_id` that finds the raw failure in the log, never the failure's own text
 * (driver, tracker or CRM messages). Workflow-safe: it reads only the failure's type and the
 * structured details our activity attached, so the workflow stays deterministic.
 */

/** The ApplicationFailure type `runProposalEffect` throws when the outcome is unknown. */
export const EFFECT_OUTCOME_UNKNOWN = 'EffectOutcomeUnknown';

/** `details[0]` of that failure: the sentence to show and the id its log line carries. */
export interface EffectFailureDetails {
  summary: string;
  error_id: string;
}

const TIMEOUTS: Record<string, string> = {
  HEARTBEAT: 'heartbeat',
  START_TO_CLOSE: 'start-to-close limit',
  SCHEDULE_TO_CLOSE: 'schedule-to-close limit',
  SCHEDULE_TO_START: 'schedule-to-start limit',
};

/** The sentence for a failure, and its error id when the activity already logged one. */
export function classifyEffectFailure(cause: unknown): { summary: string; errorId: string | null } {
  if (cause instanceof TimeoutFailure) {
    return {
      summary: `The effect timed out (${TIMEOUTS[cause.timeoutType ?? ''] ?? 'timeout'}); it may have been applied.`,
      errorId: null,
    };
  }
  if (cause instanceof ApplicationFailure && cause.type === EFFECT_OUTCOME_UNKNOWN) {
    const d = cause.details?.[0] as Partial<EffectFailureDetails> | undefined;
    if (typeof d?.summary === 'string' && typeof d.error_id === 'string')
      return { summary: d.summary, errorId: d.error_id };
  }
  if (cause instanceof CancelledFailure)
    return { summary: 'The effect was cancelled while it ran; it may have been applied.', errorId: null };
  return { summary: 'The effect attempt failed; it may have been applied.', errorId: null };
}

export const errorDetail = (summary: string, errorId: string) => `${summary} (error_id ${errorId})`;
