// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { ActivityOptions } from '@temporalio/common';

/**
 * Named activity option profiles; every workflow picks one per activity family. Workflow-safe
 * (plain data). An irreversible effect uses `irreversible`: one attempt, never a blind retry.
 */
export const ActivityProfiles = {
  /** Idempotent writes and reads in PostgreSQL. */
  database: {
    startToCloseTimeout: '30 seconds',
    // No attempt limit: a projection must land even after a long database outage, or the workflow's
    // state and the rows the API reads would part ways.
    retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  },
  /** Calls to external HTTP systems that are safe to repeat (reads, idempotent writes). */
  externalIdempotent: {
    startToCloseTimeout: '60 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
  },
  /** Effects that must not run twice: one attempt; an unknown outcome is reconciled by a person. */
  irreversible: {
    startToCloseTimeout: '10 minutes',
    retry: { maximumAttempts: 1 },
  },
} as const satisfies Record<string, ActivityOptions>;

/** The task queue every workflow and activity of the platform runs on unless configured otherwise. */
export const DEFAULT_TASK_QUEUE = 'platform';
