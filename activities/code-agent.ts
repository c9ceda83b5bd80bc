import * as fs from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import { CodeAgentApiError, CodeAgentClient } from '../shared/code-agent/client.js';
import { openApiKeyConnection, type CodeAgentCredential } from '../shared/code-agent/connection.js';
import { agentCliCommand, runnerArgv } from '../shared/code-agent/launcher.js';
import { CODE_AGENT_TERMINAL, statusOfRemote, type CodeAgentRunStatus } from '../shared/code-agent/runs.js';
import { findConnectionRow } from '../shared/crm/store.js';
import { CodeAgentRunEntity, type CodeAgentRunRow } from '../shared/db/entities/index.js';
import { findPullRequestByHead, openPullRequest, repoCoordinates } from '../shared/git/forge.js';
import {
  checkoutNewBranch,
  cloneBranch,
  commitAs,
  gitRemote,
  pushBranch,
  stageAllChanges,
} from '../shared/git/worktree.js';
import { EgressError } from '../shared/http/egress.js';
import { classifyGitError } from '../shared/managed-sources/git.js';
import { killGroup, OutputCapture, runInProcessGroup, type GroupRunResult } from '../shared/process/group-run.js';
import { CODE_AGENT_ALREADY_STARTED, CODE_AGENT_REFUSED } from '../workflows/code-agent-definitions.js';
import type { ActivityDeps } from './deps.js';
import { withHeartbeat } from './heartbeat.js';
import { sql } from '../shared/db/sql.js';
import { EgressCodes } from '../shared/http/egress-policy.js';

/** How often a running local runner's output reaches its row, and the activity heartbeats. */
const FLUSH_MS = 2_000;
/** Output kept per local run: the first and the last bytes. */
const OUTPUT_HEAD_BYTES = 192 * 1024;
const OUTPUT_TAIL_BYTES = 64 * 1024;
/** A line the local runner prints to report its pull request. */
const PR_LINE = /^CODE_AGENT_PR_URL=(\S+)\s*$/gm;
const step = (name: string, detail?: string) =>
  JSON.stringify([{ at: new Date().toISOString(), step: name, ...(detail ? { detail } : {}) }]);

/**
 * True when the activity was cancelled because its workflow asked (the `cancel` signal), not because
 * the worker is shutting down or the activity timed out (those end the run `interrupted`).
 */
const cancelledOnRequest = (ctx: Context) =>
  ctx.cancellationSignal.aborted && (ctx.cancellationSignal.reason as Error | undefined)?.message === 'CANCELLED';

/** The identity agent-CLI commits carry (author and committer). */
export const CODE_AGENT_BOT = { name: 'Platform Code Agent', email: 'code-agent@platform.invalid' };
/** The branch an agent-CLI run pushes. */
export const codeAgentBranch = (runId: string) => `code-agent/${runId}`;

/**
 * Heartbeat interval of the provider calls that create or cancel a remote run: with the profile's 10 s
 * heartbeat timeout, a worker that dies while the provider answers is noticed in seconds, not at the
 * 40 s start-to-close limit (the retry then gets the same run through the idempotency key).
 */
const REMOTE_HEARTBEAT_MS = 2_000;

/** The idempotency key of a run's remote create: the same for every attempt of every worker. */
export const remoteIdempotencyKey = (runId: string) => `code-agent-${runId}`;

export function createCodeAgentActivities(deps: ActivityDeps) {
  const { orm, config } = deps;

  async function load(runId: string): Promise<{ em: EntityManager; row: CodeAgentRunRow }> {
    const em = orm.em.fork();
    const row = await em.findOneOrFail(CodeAgentRunEntity, { runId }, { refresh: true });
    return { em, row };
  }

  async function client(em: EntityManager, row: CodeAgentRunRow): Promise<CodeAgentClient> {
    let cred;
    try {
      cred = openApiKeyConnection(config, await findConnectionRow(em, row.tenant, row.connectionName ?? '', 'api_key'));
    } catch (err) {
      throw ApplicationFailure.nonRetryable(
        `The code-agent connection "${row.connectionName}" is not usable: ${(err as Error).message}`,
        CODE_AGENT_REFUSED,
      );
    }
    if (cred.scope !== 'shared')
      throw ApplicationFailure.nonRetryable(
        `The connection "${cred.name}" is not shared-scope; the cloud adapter refuses personal connections.`,
        CODE_AGENT_REFUSED,
      );
    return new CodeAgentClient(cred, config);
  }

  /** A provider refusal (4xx other than 429) will not change on retry; anything else may. */
  /** While a run's process works: a heartbeat and its output so far every FLUSH_MS (best effort; the final write is not). */
  function flushWhileRunning(runId: string, output: OutputCapture, ctx: Context): NodeJS.Timeout {
    return setInterval(() => {
      ctx.heartbeat();
      sql<Record<string, unknown>>(
        orm.em.fork(),
        `update code_agent_runs set output = ?, output_bytes = ?, output_truncated = ?, updated_at = now()
          where run_id = ? and status = 'running'`,
        [output.text(), output.bytesSeen, output.truncated, runId],
      ).catch(() => undefined);
    }, FLUSH_MS);
  }

  /**
   * Runs a run's command line in a process group of its own, the prompt on stdin, until the run's
   * timeout or the activity's cancellation; the group's id is recorded on the run (a crashed worker's
   * run is then ended by killing it).
   */
  function runRunProcess(
    runId: string,
    row: CodeAgentRunRow,
    argv: string[],
    opts: { cwd: string; env: Record<string, string>; output: OutputCapture; ctx: Context; what: string },
  ): Promise<GroupRunResult> {
    return runInProcessGroup({
      file: argv[0]!,
      argv: argv.slice(1),
      cwd: opts.cwd,
      env: opts.env,
      stdin: row.prompt,
      timeoutMs: row.timeoutSeconds * 1000,
      output: opts.output,
      signal: opts.ctx.cancellationSignal,
      what: opts.what,
      onSpawn: (pid) =>
        void sql<Record<string, unknown>>(
          orm.em.fork(),
          `update code_agent_runs set process_id = ? where run_id = ? and status = 'running'`,
          [pid, runId],
        ).catch(() => undefined),
    });
  }

  /**
   * The pull request a run whose worker was lost left (see codeAgentMarkInterrupted): the URL and how it
   * was found, or the step saying why the Git host could not be asked; null when there is none.
   */
  async function leftPullRequest(
    em: EntityManager,
    row: CodeAgentRunRow,
  ): Promise<{ prUrl: string | null; step: string } | null> {
    const reported = [...(row.output ?? '').matchAll(PR_LINE)].pop()?.[1];
    if (reported) return { prUrl: reported, step: step('pull_request_recovered', `${reported} (the runner's output)`) };
    if (!row.targetRepoUrl || !row.branch) return null;
    try {
      const token = row.gitConnectionName
        ? openApiKeyConnection(config, await findConnectionRow(em, row.tenant, row.gitConnectionName, 'api_key')).apiKey
        : null;
      const pr = await findPullRequestByHead({
        policy: config.egress,
        coordinates: repoCoordinates(
          row.targetRepoUrl,
          await deps.settings.get('enhancements.coding_agent.agent_cli.forge_api_url'),
        ),
        token,
        branch: row.branch,
      });
      if (!pr) return null;
      const how = `found on the Git host by head branch ${row.branch}`;
      return { prUrl: pr.html_url, step: step('pull_request_recovered', `${pr.html_url} (${how})`) };
    } catch (err) {
      return { prUrl: null, step: step('pull_request_lookup_failed', (err as Error).message.slice(0, 300)) };
    }
  }

  function classify(err: unknown, what: string): never {
    if (err instanceof CodeAgentApiError && !err.retryable)
      throw ApplicationFailure.nonRetryable(
        `${what} answered HTTP ${err.status}${err.code ? ` (${err.code})` : ''}`,
        CODE_AGENT_REFUSED,
      );
    if (err instanceof EgressError && err.code === EgressCodes.egress_refused)
      throw ApplicationFailure.nonRetryable(`${what}: ${err.message}`, CODE_AGENT_REFUSED);
    throw err;
  }

  return {
    /**
     * Creates the remote run once: a row that already has its remote ids answers them; otherwise the
     * create carries the idempotency key derived from the run id, so a retry after a crash (the
     * provider created the run, the answer was lost) gets the same run back, never a second one.
     */
    async codeAgentCloudCreate(input: {
      runId: string;
    }): Promise<{ status: CodeAgentRunStatus; remoteStatus: string }> {
      const { em, row } = await load(input.runId);
      if (row.remoteAgentId && row.remoteRunId)
        return { status: row.status, remoteStatus: row.remoteStatus ?? 'CREATING' };
      await sql<Record<string, unknown>>(
        em,
        `update code_agent_runs set status = 'creating', started_at = coalesce(started_at, now()), updated_at = now()
          where run_id = ? and status = 'queued'`,
        [input.runId],
      );
      const api = await client(em, row);
      let remote;
      try {
        remote = await withHeartbeat(REMOTE_HEARTBEAT_MS, () =>
          api.launch(
            {
              prompt: row.prompt,
              repoUrl: row.targetRepoUrl ?? '',
              startingRef: row.targetBaseRef,
              autoCreatePr: row.autoCreatePr,
            },
            remoteIdempotencyKey(row.runId),
            Context.current().cancellationSignal,
          ),
        );
      } catch (err) {
        classify(err, 'POST /v1/agents');
      }
      const status = statusOfRemote(remote.status);
      await sql<Record<string, unknown>>(
        em,
        `update code_agent_runs set remote_agent_id = ?, remote_run_id = ?, remote_status = ?, status = ?,
            steps = steps || ?::jsonb, updated_at = now()
          where run_id = ? and remote_run_id is null`,
        [remote.agentId, remote.runId, remote.status, status, step('remote_run_created', remote.runId), input.runId],
      );
      return { status, remoteStatus: remote.status };
    },

    /** Reads the remote run's status; records a change (a step), the PR URL, and the end when it is terminal. */
    async codeAgentCloudPoll(input: {
      runId: string;
    }): Promise<{ status: CodeAgentRunStatus; remoteStatus: string; prUrl: string | null }> {
      const { em, row } = await load(input.runId);
      const api = await client(em, row);
      let remote;
      try {
        remote = await api.run(row.remoteAgentId ?? '', row.remoteRunId ?? '', Context.current().cancellationSignal);
      } catch (err) {
        classify(err, 'GET /v1/agents/{id}/runs/{runId}');
      }
      const status = statusOfRemote(remote.status);
      const terminal = CODE_AGENT_TERMINAL.includes(status);
      const steps: string[] = [];
      if (remote.status !== row.remoteStatus) steps.push(step(`status:${remote.status}`));
      if (remote.prUrl && remote.prUrl !== row.prUrl) steps.push(step('pull_request', remote.prUrl));
      const newSteps = steps.length ? JSON.stringify(steps.flatMap((s) => JSON.parse(s) as unknown[])) : '[]';
      await sql<Record<string, unknown>>(
        em,
        `update code_agent_runs set remote_status = ?, status = ?, pr_url = coalesce(?, pr_url),
            branch = coalesce(?, branch), summary = coalesce(?, summary), steps = steps || ?::jsonb,
            error = case when ? then ? else error end,
            finished_at = case when ? then now() else finished_at end, updated_at = now()
          where run_id = ? and status not in ('finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted')`,
        [
          remote.status,
          status,
          remote.prUrl,
          remote.branch,
          remote.summary,
          newSteps,
          status === 'failed' || status === 'expired' || status === 'cancelled',
          `The provider reports the run ${remote.status}.`,
          terminal,
          input.runId,
        ],
      );
      return { status, remoteStatus: remote.status, prUrl: remote.prUrl ?? row.prUrl };
    },

    /** Ends a run the workflow gives up (create refused, deadline passed); a run already ended keeps its status. */
    async codeAgentFinish(input: {
      runId: string;
      status: CodeAgentRunStatus;
      error: string | null;
    }): Promise<CodeAgentRunStatus> {
      const em = orm.em.fork();
      await sql<Record<string, unknown>>(
        em,
        `update code_agent_runs set status = ?, error = ?, steps = steps || ?::jsonb, finished_at = now(), updated_at = now()
          where run_id = ? and status not in ('finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted')`,
        [input.status, input.error, step(input.status, input.error ?? undefined), input.runId],
      );
      return (await load(input.runId)).row.status;
    },

    /**
     * The local runner: `CODE_AGENT_RUNNER_COMMAND` (this worker's) as a child process without a
     * shell, in its own process group, with a scrubbed environment (PATH, locale, HOME and the run's
     * own variables), the prompt on stdin, output captured under a cap, heartbeats, and the group
     * killed at the run's timeout. A line `CODE_AGENT_PR_URL=<url>` reports the pull request.
     */
    async codeAgentLocalRun(input: { runId: string }): Promise<CodeAgentRunStatus> {
      const ctx = Context.current();
      const claimed = await sql<Record<string, unknown>>(
        orm.em.fork(),
        `update code_agent_runs set status = 'running', started_at = now(), updated_at = now(), worker_host = ?,
            branch = ?, steps = steps || ?::jsonb
          where run_id = ? and status = 'queued' returning run_id`,
        [hostname(), codeAgentBranch(input.runId), step('runner_started'), input.runId],
      );
      if (!claimed.length)
        throw ApplicationFailure.nonRetryable(`run ${input.runId} was already started`, CODE_AGENT_ALREADY_STARTED);
      const { em, row } = await load(input.runId);
      // The run reads settings as of its start (a setting applied through any replica just before is seen).
      await deps.settings.catchUp();
      const argv = runnerArgv(await deps.settings.get('enhancements.code_agent.runner_command'));
      const finish = async (
        status: CodeAgentRunStatus,
        fields: { exitCode: number | null; error: string | null; output: OutputCapture | null },
      ) => {
        const text = fields.output?.text() ?? '';
        const pr = [...text.matchAll(PR_LINE)].pop()?.[1] ?? null;
        await sql<Record<string, unknown>>(
          em,
          `update code_agent_runs set status = ?, exit_code = ?, error = ?, output = ?, output_bytes = ?,
              output_truncated = ?, pr_url = coalesce(?, pr_url), process_id = null, steps = steps || ?::jsonb,
              finished_at = now(), updated_at = now()
            where run_id = ? and status = 'running'`,
          [
            status,
            fields.exitCode,
            fields.error,
            text,
            fields.output?.bytesSeen ?? 0,
            fields.output?.truncated ?? false,
            pr,
            step(status, fields.error ?? undefined),
            input.runId,
          ],
        );
        return status;
      };
      if (!argv.length)
        return await finish('failed', {
          exitCode: null,
          error: 'CODE_AGENT_RUNNER_COMMAND is not set on the worker that took the run.',
          output: null,
        });
      const output = new OutputCapture(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
      const workdir = await mkdtemp(path.join(tmpdir(), 'code-agent-'));
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        LANG: process.env.LANG ?? 'C.UTF-8',
        HOME: workdir,
        CODE_AGENT_RUN_ID: row.runId,
        // The head branch to push: if this worker is lost, the platform finds the pull request by it.
        CODE_AGENT_BRANCH: codeAgentBranch(row.runId),
        CODE_AGENT_TARGET_REPO_URL: row.targetRepoUrl ?? '',
        CODE_AGENT_TARGET_BASE_REF: row.targetBaseRef,
        CODE_AGENT_AUTO_CREATE_PR: String(row.autoCreatePr),
        ...(row.ticketKey ? { CODE_AGENT_TICKET_KEY: row.ticketKey } : {}),
      };
      const flush = flushWhileRunning(input.runId, output, ctx);
      try {
        const result = await runRunProcess(input.runId, row, argv, {
          cwd: workdir,
          env,
          output,
          ctx,
          what: 'The code-agent runner',
        });
        const cancelled = result.status === 'interrupted' && cancelledOnRequest(ctx);
        const status: CodeAgentRunStatus = cancelled
          ? 'cancelled'
          : result.status === 'succeeded'
            ? 'finished'
            : result.status;
        const error = cancelled
          ? 'Cancelled on request; the runner was stopped with its process group.'
          : (result.error ??
            (result.status === 'timed_out'
              ? `The runner ran past enhancements.code_agent.run_timeout_seconds (${row.timeoutSeconds} s) and was killed with its process group.`
              : result.status === 'failed'
                ? `The runner exited with ${result.exit_code === null ? `signal ${result.signal}` : `code ${result.exit_code}`}.`
                : result.status === 'interrupted'
                  ? 'The worker stopped while the runner ran; it was stopped and not restarted.'
                  : null));
        return await finish(status, { exitCode: result.exit_code, error, output });
      } finally {
        clearInterval(flush);
        await rm(workdir, { recursive: true, force: true }).catch(() => undefined);
      }
    },

    /**
     * Cancels a cloud run: `POST /v1/agents/{id}/runs/{runId}/cancel`. Accepted: the run ends
     * `cancelled`. A 409 (`run_not_cancellable`: it is ending anyway) is recorded as a step and the
     * run is followed to its own end. A run not yet created remotely ends `cancelled` at once.
     */
    async codeAgentCloudCancel(input: { runId: string }): Promise<{ cancelled: boolean }> {
      const { em, row } = await load(input.runId);
      const end = async () => {
        await sql<Record<string, unknown>>(
          em,
          `update code_agent_runs set status = 'cancelled', error = ?, steps = steps || ?::jsonb, finished_at = now(),
              updated_at = now()
            where run_id = ? and status not in ('finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted')`,
          ['Cancelled on request.', step('cancelled'), input.runId],
        );
        return { cancelled: true };
      };
      const { remoteAgentId, remoteRunId } = row;
      if (!remoteAgentId || !remoteRunId) return await end();
      const api = await client(em, row);
      try {
        await withHeartbeat(REMOTE_HEARTBEAT_MS, () =>
          api.cancel(remoteAgentId, remoteRunId, Context.current().cancellationSignal),
        );
      } catch (err) {
        if (err instanceof CodeAgentApiError && err.status === 409) {
          await sql<Record<string, unknown>>(
            em,
            `update code_agent_runs set steps = steps || ?::jsonb, updated_at = now() where run_id = ?`,
            [step('cancel_refused', err.code ?? 'HTTP 409'), input.runId],
          );
          return { cancelled: false };
        }
        classify(err, 'POST /v1/agents/{id}/runs/{runId}/cancel');
      }
      return await end();
    },

    /**
     * The agent-CLI backend, one heartbeating activity on one worker (the worktree is local to it):
     * clone `target_repo_url` at `target_base_ref` (shallow, single branch) into `<worktree_root>/<run_id>`
     * with the git connection's token, create branch `code-agent/<run_id>`, run CODE_AGENT_CLI_COMMAND
     * in it (no shell, own process group, scrubbed environment plus CODE_AGENT_API_KEY and
     * CODE_AGENT_API_BASE_URL from the model connection, prompt on stdin, killed at the run timeout or on
     * cancel), then commit what changed as the platform bot, push the branch and open the pull request
     * through the Git host's API. Nothing changed: outcome `no_changes`, no push, no PR. The worktree is
     * removed whatever happens. Never retried (it writes to a repository).
     */
    async codeAgentCliRun(input: { runId: string }): Promise<CodeAgentRunStatus> {
      const ctx = Context.current();
      const claimed = await sql<Record<string, unknown>>(
        orm.em.fork(),
        `update code_agent_runs set status = 'running', started_at = now(), updated_at = now(), worker_host = ?,
            branch = ?, steps = steps || ?::jsonb
          where run_id = ? and status = 'queued' returning run_id`,
        [hostname(), codeAgentBranch(input.runId), step('worktree_cloning'), input.runId],
      );
      if (!claimed.length)
        throw ApplicationFailure.nonRetryable(`run ${input.runId} was already started`, CODE_AGENT_ALREADY_STARTED);
      const { em, row } = await load(input.runId);
      // The run reads settings as of its start (a setting applied through any replica just before is seen).
      await deps.settings.catchUp();
      const addStep = (name: string, detail?: string) =>
        sql<Record<string, unknown>>(
          em,
          `update code_agent_runs set steps = steps || ?::jsonb, updated_at = now() where run_id = ?`,
          [step(name, detail), input.runId],
        );
      const output = new OutputCapture(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
      /** Set once the clone started: the directory `finish` removes. */
      let worktree: string | null = null;
      const finish = async (
        status: CodeAgentRunStatus,
        fields: {
          exitCode?: number | null;
          error?: string | null;
          outcome?: 'pull_request' | 'no_changes';
          prUrl?: string;
        },
      ) => {
        // The worktree goes before the run reads as ended, so an ended run never has one left behind.
        const removed = worktree
          ? await rm(worktree, { recursive: true, force: true }).then(
              () => true,
              () => false,
            )
          : false;
        const final: CodeAgentRunStatus = cancelledOnRequest(ctx) && status !== 'finished' ? 'cancelled' : status;
        const error =
          final === 'cancelled'
            ? 'Cancelled on request; the agent CLI was stopped with its process group.'
            : (fields.error ?? null);
        await sql<Record<string, unknown>>(
          em,
          `update code_agent_runs set status = ?, exit_code = coalesce(?, exit_code), error = ?, output = ?,
              output_bytes = ?, output_truncated = ?, outcome = ?, pr_url = coalesce(?, pr_url), process_id = null,
              steps = steps || ?::jsonb, finished_at = now(), updated_at = now()
            where run_id = ? and status = 'running'`,
          [
            final,
            fields.exitCode ?? null,
            error,
            output.text(),
            output.bytesSeen,
            output.truncated,
            fields.outcome ?? null,
            fields.prUrl ?? null,
            JSON.stringify([
              ...(removed ? (JSON.parse(step('worktree_removed', worktree!)) as unknown[]) : []),
              ...(JSON.parse(
                step(fields.outcome && final === 'finished' ? fields.outcome : final, error ?? undefined),
              ) as unknown[]),
            ]),
            input.runId,
          ],
        );
        return final;
      };
      const command = await agentCliCommand(deps.settings, em);
      if (!command)
        return await finish('failed', {
          error:
            'CODE_AGENT_CLI_COMMAND is not set on the worker that took the run (and no local CLI is imported in desktop mode).',
        });
      const { argv } = command;
      if (!row.worktreePath) return await finish('failed', { error: 'The run has no worktree path.' });
      let model: CodeAgentCredential;
      let forgeCred: CodeAgentCredential;
      try {
        model = openApiKeyConnection(
          config,
          await findConnectionRow(em, row.tenant, row.connectionName ?? '', 'api_key'),
        );
        forgeCred = openApiKeyConnection(
          config,
          await findConnectionRow(em, row.tenant, row.gitConnectionName ?? '', 'api_key'),
        );
      } catch (err) {
        return await finish('failed', { error: `A connection of the run is not usable: ${(err as Error).message}` });
      }
      const repoUrl = row.targetRepoUrl ?? '';
      const host = (() => {
        try {
          return new URL(repoUrl).host;
        } catch {
          return repoUrl;
        }
      })();
      const dir = row.worktreePath;
      const branch = codeAgentBranch(row.runId);
      const remote = gitRemote(config.egress, repoUrl, { kind: 'token', username: null, secret: forgeCred.apiKey });
      const beat = flushWhileRunning(input.runId, output, ctx);
      const home = await mkdtemp(path.join(tmpdir(), 'code-agent-home-'));
      try {
        await rm(dir, { recursive: true, force: true });
        await mkdir(dir, { recursive: true });
        worktree = dir;
        try {
          await cloneBranch(remote, dir, row.targetBaseRef, { depth: 1 });
          await checkoutNewBranch(dir, branch);
        } catch (err) {
          const e = classifyGitError(err, host, 'token');
          return await finish('failed', {
            error: `Cloning ${repoUrl} at ${row.targetBaseRef} failed (${e.code}): ${e.message}`,
          });
        }
        if (ctx.cancellationSignal.aborted)
          return await finish(cancelledOnRequest(ctx) ? 'cancelled' : 'interrupted', {
            error: 'The worker stopped while the worktree was cloned; the run was not restarted.',
          });
        await addStep('agent_cli_started', `${branch}; ${argv[0]!} from ${command.source}`);
        const env: Record<string, string> = {
          PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
          LANG: process.env.LANG ?? 'C.UTF-8',
          HOME: home,
          CODE_AGENT_RUN_ID: row.runId,
          CODE_AGENT_BRANCH: branch,
          CODE_AGENT_TARGET_BASE_REF: row.targetBaseRef,
          CODE_AGENT_API_KEY: model.apiKey,
          CODE_AGENT_API_BASE_URL: model.apiBaseUrl,
          ...(row.ticketKey ? { CODE_AGENT_TICKET_KEY: row.ticketKey } : {}),
        };
        const result = await runRunProcess(input.runId, row, argv, {
          cwd: dir,
          env,
          output,
          ctx,
          what: 'The agent CLI',
        });
        if (result.status !== 'succeeded')
          return await finish(result.status, {
            exitCode: result.exit_code,
            error:
              result.error ??
              (result.status === 'timed_out'
                ? `The agent CLI ran past enhancements.code_agent.run_timeout_seconds (${row.timeoutSeconds} s) and was killed with its process group.`
                : result.status === 'failed'
                  ? `The agent CLI exited with ${result.exit_code === null ? `signal ${result.signal}` : `code ${result.exit_code}`}.`
                  : 'The worker stopped while the agent CLI ran; it was stopped and not restarted.'),
          });
        await addStep('agent_cli_finished', 'exit code 0');
        // What the CLI changed: every path whose working copy differs from the base commit.
        const changed = await stageAllChanges(dir);
        if (!changed.length) return await finish('finished', { exitCode: 0, outcome: 'no_changes' });
        const title = `Code agent: ${row.ticketKey ?? row.prompt.split('\n')[0]!.slice(0, 80)}`;
        const sha = await commitAs(dir, CODE_AGENT_BOT, `${title}\n\nCode-agent run ${row.runId}.`);
        await addStep('committed', `${sha} (${changed.length} file(s))`);
        try {
          await pushBranch(remote, dir, branch);
        } catch (err) {
          const e = classifyGitError(err, host, 'token');
          return await finish('failed', { exitCode: 0, error: `Pushing ${branch} failed (${e.code}): ${e.message}` });
        }
        await addStep('pushed', branch);
        let pr;
        try {
          pr = await openPullRequest({
            policy: config.egress,
            coordinates: repoCoordinates(
              repoUrl,
              await deps.settings.get('enhancements.coding_agent.agent_cli.forge_api_url'),
            ),
            token: forgeCred.apiKey,
            title,
            head: branch,
            base: row.targetBaseRef,
            body: `${row.prompt.slice(0, 20_000)}\n\n---\nOpened by code-agent run ${row.runId}.`,
          });
        } catch (err) {
          return await finish('failed', {
            exitCode: 0,
            error: `The branch ${branch} was pushed but the pull request could not be opened: ${(err as Error).message}`,
          });
        }
        return await finish('finished', { exitCode: 0, outcome: 'pull_request', prUrl: pr.html_url });
      } finally {
        clearInterval(beat);
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
        await rm(home, { recursive: true, force: true }).catch(() => undefined);
      }
    },

    /** The workflow's finally step for agent-CLI runs: the run's worktree removed (also after a failure or a cancel). */
    async codeAgentCliCleanup(input: { runId: string }): Promise<boolean> {
      const { em, row } = await load(input.runId);
      if (!row.worktreePath) return false;
      const existed = fs.existsSync(row.worktreePath);
      if (!existed) return false;
      await rm(row.worktreePath, { recursive: true, force: true });
      await sql<Record<string, unknown>>(
        em,
        `update code_agent_runs set steps = steps || ?::jsonb, updated_at = now() where run_id = ?`,
        [step('worktree_removed', row.worktreePath), input.runId],
      );
      return existed;
    },

    /**
     * Ends a local run whose worker vanished: its process group killed when it ran on this host, then
     * what the run left looked for, so nothing it did is lost: its pull request, from the runner's
     * `CODE_AGENT_PR_URL=` line in the output flushed so far, else from the Git host by the run's head
     * branch (`code-agent/<run_id>`); the run is written `interrupted` with it (`pr_url`, outcome
     * `pull_request`) in one update.
     */
    async codeAgentMarkInterrupted(input: { runId: string; reason: string }): Promise<CodeAgentRunStatus> {
      const { em, row } = await load(input.runId);
      if (row.status !== 'queued' && row.status !== 'running') return row.status;
      // The stranded runner goes first, so it opens nothing after the look below.
      if (row.processId && row.workerHost === hostname()) killGroup(row.processId, 'SIGKILL');
      const left = row.prUrl || !row.branch ? null : await leftPullRequest(em, row);
      // One write: the run never reads as ended without what it left.
      await sql<Record<string, unknown>>(
        em,
        `update code_agent_runs set status = 'interrupted', error = ?, finished_at = now(), updated_at = now(),
            pr_url = coalesce(?, pr_url), outcome = case when ?::text is null then outcome else 'pull_request' end,
            steps = steps || ?::jsonb || ?::jsonb
          where run_id = ? and status in ('queued', 'running')`,
        [
          input.reason,
          left?.prUrl ?? null,
          left?.prUrl ?? null,
          step('interrupted', input.reason),
          left?.step ?? '[]',
          input.runId,
        ],
      );
      return (await load(input.runId)).row.status;
    },
  };
}

export type CodeAgentActivities = ReturnType<typeof createCodeAgentActivities>;
