import { hostname } from 'node:os';
import { ApplicationFailure, Context, sleep } from '@temporalio/activity';
import { EtlRunEntity, type EtlRunRow } from '../shared/db/entities/index.js';
import { findBuiltJob } from '../shared/etl/built-jobs.js';
import { launch, launcherArgs, OutputCapture, sandboxIdentity } from '../shared/etl/launch.js';
import { EtlRunnerClient } from '../shared/etl/runner-client.js';
import { ETL_OUTPUT_PAGE_MAX, ETL_TERMINAL_STATUSES, type EtlRunStatus } from '../shared/etl/runs.js';
import { refreshKeyring, secretBox } from '../shared/secrets/secret-box.js';
import { killGroup } from '../shared/process/group-run.js';
import { ETL_RUN_ALREADY_STARTED, type EtlRunInput } from '../workflows/etl-run-definitions.js';
import type { ActivityDeps } from './deps.js';
import { sql } from '../shared/db/sql.js';

/** How often a running job's output reaches its row, and the activity heartbeats. */
const FLUSH_MS = 2_000;
/** How often the remote runner is polled, and how long it may stay unreachable before the run is given up. */
const POLL_MS = 1_000;
const REMOTE_LOST_MS = 60_000;

interface Outcome {
  status: EtlRunStatus;
  exitCode: number | null;
  error: string | null;
  output: string;
  outputBytes: number;
  truncated: boolean;
}
export function createEtlActivities(deps: ActivityDeps) {
  const { orm, config, settings } = deps;

  async function writeProgress(runId: string, patch: { output: string; bytes: number; truncated: boolean }) {
    await sql<Record<string, unknown>>(
      orm.em.fork(),
      `update etl_runs set output = ?, output_bytes = ?, output_truncated = ?, updated_at = now()
        where run_id = ? and status = 'running'`,
      [patch.output, patch.bytes, patch.truncated, runId],
    );
  }

  async function finish(runId: string, o: Outcome): Promise<EtlRunStatus> {
    await sql<Record<string, unknown>>(
      orm.em.fork(),
      `update etl_runs set status = ?, exit_code = ?, error = ?, output = ?, output_bytes = ?, output_truncated = ?,
          process_id = null, finished_at = now(), updated_at = now()
        where run_id = ? and status = 'running'`,
      [o.status, o.exitCode, o.error, o.output, o.outputBytes, o.truncated, runId],
    );
    return o.status;
  }

  const failed = (error: string): Outcome => ({
    status: 'failed',
    exitCode: null,
    error,
    output: '',
    outputBytes: 0,
    truncated: false,
  });

  async function runLocally(row: EtlRunRow, params: Record<string, string>, ctx: Context): Promise<Outcome> {
    const jobsDir = await settings.get('etl.jobs_dir');
    if (!jobsDir) return failed('etl.jobs_dir is not set, so there is no built job to run.');
    let found;
    let sandbox;
    try {
      found = await findBuiltJob(jobsDir, row.jobName);
      sandbox = await sandboxIdentity();
    } catch (err) {
      return failed((err as Error).message);
    }
    const output = new OutputCapture();
    const flush = setInterval(() => {
      ctx.heartbeat();
      // Progress is best effort (the final write is not): a failed write must not end the worker.
      writeProgress(row.runId, { output: output.text(), bytes: output.bytesSeen, truncated: output.truncated }).catch(
        () => undefined,
      );
    }, FLUSH_MS);
    try {
      const result = await launch({
        launcherPath: found.launcherPath,
        cwd: found.dir,
        args: launcherArgs(row.contextName ?? undefined, params),
        timeoutMs: row.timeoutSeconds * 1000,
        sandbox,
        output,
        signal: ctx.cancellationSignal,
        onSpawn: (pid) =>
          void sql<Record<string, unknown>>(
            orm.em.fork(),
            `update etl_runs set process_id = ? where run_id = ? and status = 'running'`,
            [pid, row.runId],
          ).catch(() => undefined),
      });
      const error =
        result.error ??
        (result.status === 'timed_out'
          ? `The job ran past etl.run_timeout_seconds (${row.timeoutSeconds} s) and was killed.`
          : result.status === 'failed'
            ? `The job exited with ${result.exit_code === null ? `signal ${result.signal}` : `code ${result.exit_code}`}.`
            : result.status === 'interrupted'
              ? 'The worker stopped while the job ran; the job was stopped and not restarted.'
              : null);
      return {
        status: result.status,
        exitCode: result.exit_code,
        error,
        output: output.text(),
        outputBytes: output.bytesSeen,
        truncated: output.truncated,
      };
    } finally {
      clearInterval(flush);
    }
  }

  async function runRemotely(row: EtlRunRow, params: Record<string, string>, ctx: Context): Promise<Outcome> {
    const url = await settings.get('etl.runner_url');
    if (!url) return failed('etl.runner_url is no longer set; the run was requested for the remote runner.');
    const client = new EtlRunnerClient(url, await settings.get('etl.runner_token'), config);
    let remote;
    try {
      remote = await client.run(
        {
          job_name: row.jobName,
          context: row.contextName ?? undefined,
          context_params: params,
          timeout_seconds: row.timeoutSeconds,
        },
        ctx.cancellationSignal,
      );
    } catch (err) {
      return failed((err as Error).message);
    }
    await sql<Record<string, unknown>>(orm.em.fork(), 'update etl_runs set remote_run_id = ? where run_id = ?', [
      remote.run_id,
      row.runId,
    ]);
    let text = '';
    let unreachableSince: number | null = null;
    for (;;) {
      ctx.heartbeat();
      // While the runner keeps every byte, follow its output page by page; once it drops the middle, read it whole at the end.
      let view;
      try {
        view = await client.get(remote.run_id, text.length, ETL_OUTPUT_PAGE_MAX, ctx.cancellationSignal);
        unreachableSince = null;
      } catch (err) {
        if (ctx.cancellationSignal.aborted) throw err;
        // A blip is waited out; a runner gone for a minute ends the run interrupted (the job may still run there).
        unreachableSince ??= Date.now();
        if (Date.now() - unreachableSince > REMOTE_LOST_MS)
          return {
            ...failed(`Lost contact with the ETL runner for ${REMOTE_LOST_MS / 1000} s: ${(err as Error).message}`),
            status: 'interrupted',
            output: text,
          };
        await sleep(POLL_MS);
        continue;
      }
      if (!view.output.truncated) text += view.output.text;
      if (ETL_TERMINAL_STATUSES.includes(view.status)) {
        if (view.output.truncated || view.output.next_offset !== null) {
          text = '';
          for (let offset: number | null = 0; offset !== null;) {
            const page = await client.get(remote.run_id, offset, ETL_OUTPUT_PAGE_MAX, ctx.cancellationSignal);
            text += page.output.text;
            offset = page.output.next_offset;
          }
        }
        return {
          status: view.status,
          exitCode: view.exit_code,
          error: view.error,
          output: text,
          outputBytes: view.output.bytes_seen,
          truncated: view.output.truncated,
        };
      }
      await writeProgress(row.runId, { output: text, bytes: view.output.bytes_seen, truncated: view.output.truncated });
      await sleep(POLL_MS);
    }
  }

  return {
    /**
     * Runs the job once. The run is claimed (`queued` → `running`) first, so a second attempt of
     * this activity, which the workflow's one-attempt profile should already prevent, refuses instead of running again.
     */
    async etlRunExecute(input: EtlRunInput): Promise<EtlRunStatus> {
      const ctx = Context.current();
      const claimed = await sql<Record<string, unknown>>(
        orm.em.fork(),
        `update etl_runs set status = 'running', started_at = now(), updated_at = now(), worker_host = ?
          where run_id = ? and status = 'queued' returning run_id`,
        [hostname(), input.runId],
      );
      if (!claimed.length)
        throw ApplicationFailure.nonRetryable(`run ${input.runId} was already started`, ETL_RUN_ALREADY_STARTED);
      const em = orm.em.fork();
      const row = await em.findOneOrFail(EtlRunEntity, { runId: input.runId });
      let params: Record<string, string> = {};
      if (row.contextSealed) {
        await refreshKeyring(em);
        params = JSON.parse(secretBox(config).open(row.contextSealed)) as Record<string, string>;
      }
      const outcome =
        row.runner === 'remote' ? await runRemotely(row, params, ctx) : await runLocally(row, params, ctx);
      return await finish(input.runId, outcome);
    },

    /**
     * Ends a run whose worker vanished: its process group killed when it ran on this host, then
     * `interrupted`. The kill comes first: a worker killed between the two leaves the run unmarked,
     * so the retry kills again (a group already gone is no error) instead of finding the run marked
     * and the job still running.
     */
    async etlRunMarkInterrupted(input: { runId: string; reason: string }): Promise<EtlRunStatus> {
      const em = orm.em.fork();
      const rows = await sql<Record<string, unknown>>(
        em,
        `select worker_host, process_id from etl_runs where run_id = ? and status in ('queued', 'running')`,
        [input.runId],
      );
      const stranded = rows[0];
      if (stranded?.process_id && stranded.worker_host === hostname()) {
        killGroup(Number(stranded.process_id), 'SIGKILL');
      }
      await sql(
        em,
        `update etl_runs set status = 'interrupted', error = ?, finished_at = now(), updated_at = now()
          where run_id = ? and status in ('queued', 'running')`,
        [input.reason, input.runId],
      );
      const row = await em.findOneOrFail(EtlRunEntity, { runId: input.runId });
      return row.status;
    },
  };
}

export type EtlActivities = ReturnType<typeof createEtlActivities>;
