import {
  ActivityCancellationType,
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
const create = proxyActivities<CodeAgentActivities>({
  ...ActivityProfiles.externalIdempotent,
  // The provider call itself times out at 30 s; a worker lost mid-create is retried soon after.
  startToCloseTimeout: '40 seconds',
  retry: { ...ActivityProfiles.externalIdempotent.retry, nonRetryableErrorTypes: [CODE_AGENT_REFUSED] },
});
/** A poll is a read; a few quick tries, then the workflow's own backoff takes over. */
const poll = proxyActivities<CodeAgentActivities>({
  startToCloseTimeout: '60 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: [CODE_AGENT_REFUSED],
  },
});

/** Seconds the local runner activity may take beyond the run's own timeout (the kill grace, the last write). */
const SLACK_SECONDS = 120;
/** Seconds the agent-CLI activity may take beyond the run's timeout: clone, commit, push and the pull request. */
const CLI_SLACK_SECONDS = 900;
/** Cloud runs wait on a condition (woken by `cancel`) instead of a plain timer since this patch. */
const CANCEL_PATCH = 'code-agent-cancel';
/** The poll delay grows up to this many times the first one while nothing changes. */
const MAX_BACKOFF_FACTOR = 8;

const reasonOf = (err: unknown): string => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
};

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
    const status = await followRun(input);
    setLifecycleStatus('codeAgentRunWorkflow', status);
    return status;
  });
}

async function followRun(input: CodeAgentRunInput): Promise<CodeAgentRunStatus> {
  const live: CodeAgentLiveStatus = {
    status: 'queued',
    remote_status: null,
    pr_url: null,
    polls: 0,
    last_poll_error: null,
    next_poll_seconds: null,
  };
  setHandler(codeAgentStatusQuery, () => live);
  /** A `cancel` signal: local and agent-CLI runs have their running activity cancelled (its process group killed). */
  let cancelRequested = false;
  let runScope: CancellationScope | null = null;
  setHandler(codeAgentCancelSignal, () => {
    if (cancelRequested) return;
    cancelRequested = true;
    live.cancel_requested = true;
    runScope?.cancel();
  });
  const end = async (status: CodeAgentRunStatus, error: string | null) => {
    live.status = await db.codeAgentFinish({ runId: input.runId, status, error });
    live.next_poll_seconds = null;
    return live.status;
  };
  const CANCELLED = 'Cancelled on request.';
  setLifecycleStatus('codeAgentRunWorkflow', 'running');

  if (input.adapter === 'agent_cli') {
    const run = proxyActivities<CodeAgentActivities>({
      ...ActivityProfiles.irreversible,
      startToCloseTimeout: `${input.timeoutSeconds + CLI_SLACK_SECONDS} seconds`,
      heartbeatTimeout: '10 seconds',
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    try {
      if (cancelRequested) return await end('cancelled', CANCELLED);
      live.status = 'running';
      runScope = new CancellationScope();
      const scope = runScope;
      live.status = await scope.run(() => run.codeAgentCliRun({ runId: input.runId }));
      return live.status;
    } catch (err) {
      if (cancelRequested) return await end('cancelled', CANCELLED);
      const cause = err instanceof ActivityFailure ? err.cause : err;
      const reason =
        cause instanceof TimeoutFailure
          ? 'The worker running the agent CLI stopped answering (it may have crashed); the run was not restarted.'
          : cause instanceof ApplicationFailure && cause.type === CODE_AGENT_ALREADY_STARTED
            ? 'The run had already started on a worker that stopped; it was not started again.'
            : 'The run stopped unexpectedly; it was not restarted.';
      live.status = await db.codeAgentMarkInterrupted({ runId: input.runId, reason });
      return live.status;
    } finally {
      runScope = null;
      // The per-run worktree goes whatever happened (the activity removes it too; this covers its worker dying).
      await CancellationScope.nonCancellable(() => db.codeAgentCliCleanup({ runId: input.runId }));
    }
  }

  if (input.adapter === 'local') {
    const run = proxyActivities<CodeAgentActivities>({
      ...ActivityProfiles.irreversible,
      startToCloseTimeout: `${input.timeoutSeconds + SLACK_SECONDS} seconds`,
      heartbeatTimeout: '20 seconds',
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    live.status = 'running';
    try {
      if (cancelRequested) return await end('cancelled', CANCELLED);
      runScope = new CancellationScope();
      const scope = runScope;
      live.status = await scope.run(() => run.codeAgentLocalRun({ runId: input.runId }));
      return live.status;
    } catch (err) {
      if (cancelRequested) return await end('cancelled', CANCELLED);
      const cause = err instanceof ActivityFailure ? err.cause : err;
      const reason =
        cause instanceof TimeoutFailure
          ? 'The worker running the code agent stopped answering (it may have crashed); the run was not restarted.'
          : cause instanceof ApplicationFailure && cause.type === CODE_AGENT_ALREADY_STARTED
            ? 'The run had already started on a worker that stopped; it was not started again.'
            : 'The run stopped unexpectedly; it was not restarted.';
      live.status = await db.codeAgentMarkInterrupted({ runId: input.runId, reason });
      return live.status;
    }
  }

  const deadline = Date.now() + input.timeoutSeconds * 1000;
  if (cancelRequested) return await end('cancelled', CANCELLED);
  live.status = 'creating';
  let created;
  try {
    created = await create.codeAgentCloudCreate({ runId: input.runId });
  } catch (err) {
    return await end('failed', `The remote run could not be created: ${reasonOf(err)}`);
  }
  live.remote_status = created.remoteStatus;
  live.status = created.status;
  let delay = input.pollSeconds;
  let last = created.remoteStatus;
  let cancelSent = false;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0)
      return await end(
        'expired',
        `The remote run did not finish within ${input.timeoutSeconds} s (enhancements.code_agent.run_timeout_seconds); it is no longer followed.`,
      );
    live.next_poll_seconds = delay;
    if (patched(CANCEL_PATCH)) await condition(() => cancelRequested && !cancelSent, Math.min(delay * 1000, left));
    else await sleep(Math.min(delay * 1000, left));
    if (cancelRequested && !cancelSent) {
      cancelSent = true;
      let answer;
      try {
        answer = await create.codeAgentCloudCancel({ runId: input.runId });
      } catch (err) {
        live.last_poll_error = `The cancel request failed: ${reasonOf(err)}`;
        continue;
      }
      if (answer.cancelled) return await end('cancelled', CANCELLED);
      // 409 run_not_cancellable (recorded as a step): follow the run to its own end.
      continue;
    }
    live.polls++;
    let seen;
    try {
      seen = await poll.codeAgentCloudPoll({ runId: input.runId });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : err;
      if (cause instanceof ApplicationFailure && cause.type === CODE_AGENT_REFUSED)
        return await end('failed', `The provider refused the status request: ${cause.message}`);
      // The provider unreachable: keep following, backing off, until the deadline.
      live.last_poll_error = reasonOf(err);
      delay = Math.min(delay * 2, input.pollSeconds * MAX_BACKOFF_FACTOR);
      continue;
    }
    live.last_poll_error = null;
    live.remote_status = seen.remoteStatus;
    live.pr_url = seen.prUrl;
    live.status = seen.status;
    if (CODE_AGENT_TERMINAL.includes(seen.status)) {
      live.next_poll_seconds = null;
      return seen.status;
    }
    delay =
      seen.remoteStatus !== last ? input.pollSeconds : Math.min(delay * 2, input.pollSeconds * MAX_BACKOFF_FACTOR);
    last = seen.remoteStatus;
  }
}
