// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { ActivityCancellationType, type ActivityOptions } from '@temporalio/common';

/** Idempotent writes and reads in PostgreSQL. */
const database = {
  startToCloseTimeout: '30 seconds',
  // No attempt limit: a projection must land even after a long database outage, or the workflow's
  // state and the rows the API reads would part ways.
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
} as const;
/** Calls to external HTTP systems that are safe to repeat (reads, idempotent writes). */
const externalIdempotent = {
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
} as const;
/** Effects that must not run twice: one attempt; an unknown outcome is reconciled by a person. */
const irreversible = {
  startToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 1 },
} as const;

/**
 * Named activity option profiles; every workflow picks one per activity family. Workflow-safe
 * (plain data). An irreversible effect uses `irreversible`: one attempt, never a blind retry.
 * A profile whose timeout comes from the workflow's input is a function of it (the input is fixed
 * at start, so replay never reads the environment). tests/unit/workflow-shape.test.ts checks that
 * every `proxyActivities` call in workflows/ names one.
 */
export const ActivityProfiles = {
  database,
  externalIdempotent,
  irreversible,
  /**
   * Idempotent database writes in long batches (re-sealing secrets, a rechunk's swap and drop, a sync's record). They heartbeat, so a batch whose
   * worker died is retried after 10 s, not at the 5-minute limit (`npm run chaos` hit that wait).
   */
  databaseBatch: { ...database, startToCloseTimeout: '5 minutes', heartbeatTimeout: '10 seconds' },
  /**
   * A database build that grows with an index (pgvector's HNSW index of a million vectors takes minutes on two cores):
   * it heartbeats, so a dead worker's build is retried after 30 s, and may run up to 2 hours. Its retries back off to
   * 10 minutes apart (not 30 s): each attempt loads both cores for as long as the build runs, so a build that keeps
   * failing (a full disk, say) must not keep the database busy; it still lands once the cause is gone.
   */
  databaseBuild: {
    ...database,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: '30 seconds',
    retry: { ...database.retry, maximumInterval: '10 minutes' },
  },
  /** Database work a workflow cancels and then waits for (a presenter's reset clears the session itself). */
  databaseAwaitingCancellation: { ...database, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED },
  /** A write to an external system that is not idempotent (filing a ticket): a few attempts for a lost connection. */
  externalFewAttemptsAwaitingCancellation: {
    startToCloseTimeout: '60 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  },
  /** A step whose check may fail for real: a few attempts, then the run ends `failed`. */
  checkedStep: {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 3 },
  },
  /** Cleanup retried until it succeeds, backing off to a minute. */
  cleanupUntilDone: {
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  },
  /** A heartbeating document batch: a dead worker's batch runs again elsewhere, until it lands. */
  documentBatch: {
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  },
  /** A heartbeating document batch with a bounded number of attempts (a provider that stays down fails the run). */
  documentBatchBounded: {
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
  },
  /** One heartbeating embedding call; a provider that stays down fails the run after the attempts. */
  embeddingBatch: {
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
  },
  /**
   * A local activity that only shortens a path another activity takes anyway (the no-change resync of a
   * managed source): one attempt, and any failure or timeout falls back to that activity.
   */
  localShortcut: { startToCloseTimeout: '1 minute', retry: { maximumAttempts: 1 } },
  /**
   * Git over the network: long, transient failures retried a few times. Every activity on it heartbeats
   * every 2 s throughout (activities/managed-sources.ts), so a worker that dies mid-fetch is noticed
   * within 10 s and the attempt runs again on another (a heartbeat timeout counts as an attempt).
   */
  gitNetwork: { ...externalIdempotent, startToCloseTimeout: '15 minutes', heartbeatTimeout: '10 seconds' },
  /** A model call: heartbeats, so a worker that dies mid-call is detected within the heartbeat timeout. */
  modelCall: { ...externalIdempotent, startToCloseTimeout: '5 minutes', heartbeatTimeout: '10 seconds' },
  /**
   * One flow step (a tool call): heartbeats, so a worker that dies mid-step is noticed within 10 s and
   * the step is attempted again on another; the activity answers an outcome it finds recorded instead
   * of running the step again.
   */
  flowStep: {
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
  },
  /** A tool call: three attempts, with the server's default backoff. */
  toolCall: { ...externalIdempotent, retry: { maximumAttempts: 3 } },
  /** The sweep's redelivery of a pending hand-back: three quick attempts, the next sweep tries again. */
  handbackSweepDelivery: {
    ...database,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
  },
  /** Delivering one hand-back: backing off to five minutes, up to the deployment's attempt count. */
  handbackDelivery: (maxAttempts: number) => ({
    ...database,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '5 minutes',
      maximumAttempts: maxAttempts,
    },
  }),
  /**
   * Creating (or cancelling) a remote run under an idempotency key: the provider call itself times out at
   * 30 s; the activity heartbeats meanwhile, so a dead worker's attempt is retried after 10 s.
   */
  remoteCreate: (nonRetryableErrorTypes: string[]) => ({
    ...externalIdempotent,
    startToCloseTimeout: '40 seconds',
    heartbeatTimeout: '10 seconds',
    retry: { ...externalIdempotent.retry, nonRetryableErrorTypes },
  }),
  /** A status read: a few quick tries, then the workflow's own backoff takes over. */
  remotePoll: (nonRetryableErrorTypes: string[]) => ({
    startToCloseTimeout: '60 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes },
  }),
  /** A prompt that waits for an agent's reply (a model call, perhaps tool calls): heartbeats show it alive. */
  agentPrompt: {
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  },
  /** An irreversible heartbeating run bounded by its own timeout: one attempt. */
  heartbeatingOnce: (startToCloseSeconds: number, heartbeatSeconds: number) => ({
    ...irreversible,
    startToCloseTimeout: `${startToCloseSeconds} seconds`,
    heartbeatTimeout: `${heartbeatSeconds} seconds`,
  }),
  /** As `heartbeatingOnce`, and a cancel waits for the process to be killed. */
  cancellableHeartbeatingOnce: (startToCloseSeconds: number, heartbeatSeconds: number) => ({
    ...irreversible,
    startToCloseTimeout: `${startToCloseSeconds} seconds`,
    heartbeatTimeout: `${heartbeatSeconds} seconds`,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  }),
} as const satisfies Record<string, ActivityOptions | ((...args: never[]) => ActivityOptions)>;

/** The task queue every workflow and activity of the platform runs on unless configured otherwise. */
export const DEFAULT_TASK_QUEUE = 'platform';
