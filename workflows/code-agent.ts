import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { CodeAgentActivities } from '../activities/code-agent.js';
import { CODE_AGENT_TERMINAL, type CodeAgentLiveStatus, type CodeAgentRunStatus } from '../shared/code-agent/runs.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import {
  CODE_AGENT_ALREADY_STARTED,
  CODE_AGENT_REFUSED,
  codeAgentCancelSignal,
  codeAgentStatusQuery,
  type CodeAgentRunInput,
} from './code-agent-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

const db = proxyActivities<CodeAgentActivities>(ActivityProfiles.database);
/** Creating the remote run is safe to repeat: the idempotency key derived from the run id makes a retry answer the same run. */
const create = proxyActivities<CodeAgentActivities>(ActivityProfiles.remoteCreate([CODE_AGENT_REFUSED]));
/** A poll is a read; a few quick tries, then the workflow's own backoff takes over. */
const poll = proxyActivities<CodeAgentActivities>(ActivityProfiles.remotePoll([CODE_AGENT_REFUSED]));

/** Seconds the local runner activity may take beyond the run's own timeout (the kill grace, the last write). */
const SLACK_SECONDS = 120;
/** Seconds the agent-CLI activity may take beyond the run's timeout: clone, commit, push and the pull request. */
const CLI_SLACK_SECONDS = 900;
/** Cloud runs wait on a condition (woken by `cancel`) instead of a plain timer since this patch. */
const CANCEL_PATCH = 'code-agent-cancel';
/** The poll delay grows up to this many times the first one while nothing changes. */
const MAX_BACKOFF_FACTOR = 8;
const CANCELLED = 'Cancelled on request.';

const reasonOf = (err: unknown): string => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
};

/** Everything the handlers and the three adapters' paths share. */
interface CodeAgentRunState {
  readonly input: CodeAgentRunInput;
  /** What the `codeAgentStatus` query answers. */
  readonly live: CodeAgentLiveStatus;
  cancelRequested: boolean;
  /** The scope of the running worker activity (local, agent CLI), cancelled by `cancel`. */
  runScope: CancellationScope | null;
}

function newRunState(input: CodeAgentRunInput): CodeAgentRunState {
  return {
    input,
    live: {
      status: 'queued',
      remote_status: null,
      pr_url: null,
      polls: 0,
      last_poll_error: null,
      next_poll_seconds: null,
    },
    cancelRequested: false,
    runScope: null,
  };
}

/** A `cancel` signal: local and agent-CLI runs have their running activity cancelled (its process group killed). */
function requestCancel(state: CodeAgentRunState): void {
  if (state.cancelRequested) return;
  state.cancelRequested = true;
  state.live.cancel_requested = true;
  state.runScope?.cancel();
}

function registerHandlers(state: CodeAgentRunState): void {
  setHandler(codeAgentStatusQuery, () => state.live);
  setHandler(codeAgentCancelSignal, () => requestCancel(state));
}

/** Records the run's end on its row; the row's answer is what the query shows. */
async function end(state: CodeAgentRunState, status: CodeAgentRunStatus, error: string | null) {
  state.live.status = await db.codeAgentFinish({ runId: state.input.runId, status, error });
  state.live.next_poll_seconds = null;
  return state.live.status;
}

/** What differs between the two paths that run the agent as one activity on a worker. */
interface WorkerRun {
  /** The one activity, already bound to its options. */
  readonly start: (runId: string) => Promise<CodeAgentRunStatus>;
  /** Who "stopped answering" in the interruption reason. */
  readonly runnerLabel: string;
  /** The local runner showed `running` before it looked at an early cancel; the agent CLI after. */
  readonly runningBeforeCancelCheck: boolean;
  /** Run whatever happened, outside cancellation (the agent CLI's per-run worktree). */
  readonly cleanup: ((runId: string) => Promise<unknown>) | null;
}

function workerRunOf(input: CodeAgentRunInput): WorkerRun {
  if (input.adapter === 'agent_cli') {
    const run = proxyActivities<CodeAgentActivities>(
      ActivityProfiles.cancellableHeartbeatingOnce(input.timeoutSeconds + CLI_SLACK_SECONDS, 10),
    );
    return {
      start: (runId) => run.codeAgentCliRun({ runId }),
      runnerLabel: 'the agent CLI',
      runningBeforeCancelCheck: false,
      // The per-run worktree goes whatever happened (the activity removes it too; this covers its worker dying).
      cleanup: (runId) => db.codeAgentCliCleanup({ runId }),
    };
  }
  const run = proxyActivities<CodeAgentActivities>(
    ActivityProfiles.cancellableHeartbeatingOnce(input.timeoutSeconds + SLACK_SECONDS, 20),
  );
  return {
    start: (runId) => run.codeAgentLocalRun({ runId }),
    runnerLabel: 'the code agent',
    runningBeforeCancelCheck: true,
    cleanup: null,
  };
}

/** Why a worker run that failed is `interrupted`: it is never run again (it writes to a repository). */
function interruptionReason(err: unknown, runnerLabel: string): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure)
    return `The worker running ${runnerLabel} stopped answering (it may have crashed); the run was not restarted.`;
  if (cause instanceof ApplicationFailure && cause.type === CODE_AGENT_ALREADY_STARTED)
    return 'The run had already started on a worker that stopped; it was not started again.';
  return 'The run stopped unexpectedly; it was not restarted.';
}

/** Local and agent-CLI runs: one heartbeating activity in a scope `cancel` cancels, never retried. */
async function runOnWorker(state: CodeAgentRunState, worker: WorkerRun): Promise<CodeAgentRunStatus> {
  const { input, live } = state;
  if (worker.runningBeforeCancelCheck) live.status = 'running';
  try {
    if (state.cancelRequested) return await end(state, 'cancelled', CANCELLED);
    live.status = 'running';
    const scope = new CancellationScope();
    state.runScope = scope;
    live.status = await scope.run(() => worker.start(input.runId));
    return live.status;
  } catch (err) {
    if (state.cancelRequested) return await end(state, 'cancelled', CANCELLED);
    const reason = interruptionReason(err, worker.runnerLabel);
    live.status = await db.codeAgentMarkInterrupted({ runId: input.runId, reason });
    return live.status;
  } finally {
    state.runScope = null;
    const cleanup = worker.cleanup;
    if (cleanup) await CancellationScope.nonCancellable(() => cleanup(input.runId));
  }
}

/** Where the cloud loop stands between polls. */
interface CloudFollow {
  readonly deadline: number;
  delay: number;
  last: string | null;
  cancelSent: boolean;
}

/** Waits for the next poll, woken early by a `cancel` once the patch is in the history. */
async function waitForNextPoll(state: CodeAgentRunState, follow: CloudFollow, left: number): Promise<void> {
  state.live.next_poll_seconds = follow.delay;
  const wait = Math.min(follow.delay * 1000, left);
  if (patched(CANCEL_PATCH)) await condition(() => state.cancelRequested && !follow.cancelSent, wait);
  else await sleep(wait);
}

/** Sends the provider the one cancel; the run's end when it took, null to keep following. */
async function sendCancel(state: CodeAgentRunState, follow: CloudFollow): Promise<CodeAgentRunStatus | null> {
  follow.cancelSent = true;
  let answer;
  try {
    answer = await create.codeAgentCloudCancel({ runId: state.input.runId });
  } catch (err) {
    state.live.last_poll_error = `The cancel request failed: ${reasonOf(err)}`;
    return null;
  }
  if (answer.cancelled) return await end(state, 'cancelled', CANCELLED);
  // 409 run_not_cancellable (recorded as a step): follow the run to its own end.
  return null;
}

/** One poll; the run's end when it ended (or the provider refused), null to keep following. */
async function pollOnce(state: CodeAgentRunState, follow: CloudFollow): Promise<CodeAgentRunStatus | null> {
  const { input, live } = state;
  const backedOff = Math.min(follow.delay * 2, input.pollSeconds * MAX_BACKOFF_FACTOR);
  let seen;
  try {
    seen = await poll.codeAgentCloudPoll({ runId: input.runId });
  } catch (err) {
    live.polls++;
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.type === CODE_AGENT_REFUSED)
      return await end(state, 'failed', `The provider refused the status request: ${cause.message}`);
    // The provider unreachable: keep following, backing off, until the deadline.
    live.last_poll_error = reasonOf(err);
    follow.delay = backedOff;
    return null;
  }
  live.polls++;
  live.last_poll_error = null;
  live.remote_status = seen.remoteStatus;
  live.pr_url = seen.prUrl;
  live.status = seen.status;
  if (CODE_AGENT_TERMINAL.includes(seen.status)) {
    live.next_poll_seconds = null;
    return seen.status;
  }
  follow.delay = seen.remoteStatus !== follow.last ? input.pollSeconds : backedOff;
  follow.last = seen.remoteStatus;
  return null;
}

/** Cloud runs: create the remote run, then poll on workflow timers until it ends or the deadline passes. */
async function followCloudRun(state: CodeAgentRunState): Promise<CodeAgentRunStatus> {
  const { input, live } = state;
  const deadline = Date.now() + input.timeoutSeconds * 1000;
  if (state.cancelRequested) return await end(state, 'cancelled', CANCELLED);
  live.status = 'creating';
  let created;
  try {
    created = await create.codeAgentCloudCreate({ runId: input.runId });
  } catch (err) {
    return await end(state, 'failed', `The remote run could not be created: ${reasonOf(err)}`);
  }
  live.remote_status = created.remoteStatus;
  live.status = created.status;
  const follow: CloudFollow = { deadline, delay: input.pollSeconds, last: created.remoteStatus, cancelSent: false };
  for (;;) {
    const left = follow.deadline - Date.now();
    if (left <= 0)
      return await end(
        state,
        'expired',
        `The remote run did not finish within ${input.timeoutSeconds} s (enhancements.code_agent.run_timeout_seconds); it is no longer followed.`,
      );
    await waitForNextPoll(state, follow, left);
    const ended =
      state.cancelRequested && !follow.cancelSent ? await sendCancel(state, follow) : await pollOnce(state, follow);
    if (ended !== null) return ended;
  }
}

/**
 * One code-agent run, `code-agent/<run_id>`. Cloud: create the remote run (idempotency key from the
 * run id, so a restarted worker never creates a second one), then follow it with durable polling on
 * workflow timers, backing off while the status stays, until it finishes, fails or expires (the
 * provider says so, or `timeoutSeconds` passes). Local: the runner command as one heartbeating
 * activity, never retried (it writes to a repository); a worker lost mid-run ends it `interrupted`.
 * The row and the `codeAgentStatus` query show status, steps and outcome while it runs.
 */
export async function codeAgentRunWorkflow(input: CodeAgentRunInput): Promise<CodeAgentRunStatus> {
  return trackFailure('codeAgentRunWorkflow', async () => {
    const state = newRunState(input);
    registerHandlers(state);
    setLifecycleStatus('codeAgentRunWorkflow', 'running');
    const onWorker = input.adapter === 'agent_cli' || input.adapter === 'local';
    const status = onWorker ? await runOnWorker(state, workerRunOf(input)) : await followCloudRun(state);
    setLifecycleStatus('codeAgentRunWorkflow', status);
    return status;
  });
}
