/**
 * The ETL remote runner (spec, "ETL remote runner (served by the runner host)"): a small HTTP service
 * on the host that holds the built jobs, running them exactly as the platform's worker does
 * (launcher without a shell, own process group killed at the timeout, capped output, sandbox user
 * when root). Start it with `npm run etl-runner`; the platform reaches it through `etl.runner_url`.
 *
 *   GET /healthz            no token: {status: "ok"}
 *   GET /jobs               {jobs: BuiltJob[]}
 *   POST /run               {job_name, context?, context_params, timeout_seconds?} → 202, the run
 *   GET /run/{run_id}       the run, output paged with ?offset=&limit=
 *
 * Everything but /healthz needs `Authorization: Bearer <ETL_RUNNER_TOKEN>`. Runs live in memory (the
 * platform keeps its own record in PostgreSQL); the newest 200 finished runs are kept.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { findBuiltJob, listBuiltJobs } from '../shared/etl/built-jobs.js';
import { launch, launcherArgs, OutputCapture, sandboxIdentity, type LaunchResult } from '../shared/etl/launch.js';
import {
  ETL_OUTPUT_PAGE_DEFAULT,
  ETL_OUTPUT_PAGE_MAX,
  pageOutput,
  type EtlRunStatus,
  type EtlRunView,
} from '../shared/etl/runs.js';
import { isMain } from '../shared/is-main.js';

export interface EtlRunnerOptions {
  token: string;
  jobsDir: string;
  /** Upper bound for a run's timeout (a request may ask for less). */
  maxTimeoutSeconds: number;
  port?: number;
  host?: string;
}

interface RemoteRun {
  view: Omit<EtlRunView, 'output'>;
  output: OutputCapture;
}

const RunBody = z
  .object({
    job_name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,199}$/),
    context: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,199}$/)
      .optional(),
    context_params: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_.]{0,199}$/), z.string().max(4000)).default({}),
    timeout_seconds: z.number().int().min(1).max(86_400).optional(),
  })
  .strict();

const KEEP_FINISHED = 200;
const MAX_BODY = 1024 * 1024;

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(c as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export async function startEtlRunner(opts: EtlRunnerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const runs = new Map<string, RemoteRun>();
  const expected = digest(opts.token);
  const authorized = (req: IncomingMessage) => {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    return m !== null && timingSafeEqual(digest(m[1]!), expected);
  };
  const view = (run: RemoteRun, offset?: number, limit?: number): EtlRunView => ({
    ...run.view,
    output: pageOutput(
      run.output.text(),
      { bytes_seen: run.output.bytesSeen, truncated: run.output.truncated },
      offset,
      limit,
    ),
  });
  const forget = () => {
    const finished = [...runs.entries()].filter(([, r]) => r.view.finished_at !== null);
    for (const [id] of finished.slice(0, Math.max(0, finished.length - KEEP_FINISHED))) runs.delete(id);
  };

  async function start(body: z.infer<typeof RunBody>): Promise<RemoteRun> {
    const found = await findBuiltJob(opts.jobsDir, body.job_name);
    const timeoutSeconds = Math.min(body.timeout_seconds ?? opts.maxTimeoutSeconds, opts.maxTimeoutSeconds);
    const now = new Date().toISOString();
    const run: RemoteRun = {
      view: {
        run_id: `run_${randomBytes(12).toString('hex')}`,
        job_name: body.job_name,
        status: 'running',
        context: body.context ?? null,
        context_params: Object.keys(body.context_params),
        timeout_seconds: timeoutSeconds,
        exit_code: null,
        error: null,
        created_at: now,
        started_at: now,
        finished_at: null,
      },
      output: new OutputCapture(),
    };
    runs.set(run.view.run_id, run);
    const done = (status: EtlRunStatus, result: Partial<LaunchResult>, error: string | null) => {
      Object.assign(run.view, {
        status,
        exit_code: result.exit_code ?? null,
        error,
        finished_at: new Date().toISOString(),
      });
      forget();
    };
    void (async () => {
      try {
        const result = await launch({
          launcherPath: found.launcherPath,
          cwd: found.dir,
          args: launcherArgs(body.context, body.context_params),
          timeoutMs: timeoutSeconds * 1000,
          sandbox: await sandboxIdentity(),
          output: run.output,
        });
        const error =
          result.error ??
          (result.status === 'timed_out'
            ? `The job ran past etl.run_timeout_seconds (${timeoutSeconds} s) and was killed.`
            : result.status === 'failed'
              ? `The job exited with ${result.exit_code === null ? `signal ${result.signal}` : `code ${result.exit_code}`}.`
              : null);
        done(result.status, result, error);
      } catch (err) {
        done('failed', {}, (err as Error).message);
      }
    })();
    return run;
  }

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://runner');
      if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
      if (!authorized(req)) {
        res.setHeader('www-authenticate', 'Bearer');
        return send(res, 401, { error: 'A bearer token is required.' });
      }
      if (req.method === 'GET' && url.pathname === '/jobs')
        return send(res, 200, { jobs: await listBuiltJobs(opts.jobsDir) });
      if (req.method === 'POST' && url.pathname === '/run') {
        const parsed = RunBody.safeParse(await readJson(req).catch(() => undefined));
        if (!parsed.success) return send(res, 400, { error: 'Invalid run request.', issues: parsed.error.issues });
        try {
          return send(res, 202, view(await start(parsed.data)));
        } catch (err) {
          return send(res, 404, { error: (err as Error).message });
        }
      }
      const m = /^\/run\/([A-Za-z0-9_]+)$/.exec(url.pathname);
      if (req.method === 'GET' && m) {
        const run = runs.get(m[1]!);
        if (!run) return send(res, 404, { error: 'No such run.' });
        const offset = Math.max(0, Number(url.searchParams.get('offset') ?? 0) || 0);
        const limit = Math.min(
          ETL_OUTPUT_PAGE_MAX,
          Math.max(1, Number(url.searchParams.get('limit') ?? ETL_OUTPUT_PAGE_DEFAULT) || ETL_OUTPUT_PAGE_DEFAULT),
        );
        return send(res, 200, view(run, offset, limit));
      }
      return send(res, 404, { error: 'Not found.' });
    })().catch(() => {
      if (!res.headersSent) send(res, 500, { error: 'Internal error.' });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (isMain(import.meta.url)) {
  const token = process.env.ETL_RUNNER_TOKEN;
  const jobsDir = process.env.ETL_JOBS_DIR;
  if (!token || !jobsDir) {
    process.stderr.write('ETL_RUNNER_TOKEN and ETL_JOBS_DIR must be set.\n');
    process.exit(1);
  }
  const runner = await startEtlRunner({
    token,
    jobsDir,
    maxTimeoutSeconds: Number(process.env.ETL_RUN_TIMEOUT_SECONDS ?? 900),
    port: Number(process.env.ETL_RUNNER_PORT ?? 8790),
    host: process.env.ETL_RUNNER_HOST ?? '0.0.0.0',
  });
  process.stdout.write(`ETL runner listening on ${runner.url}\n`);
  const stop = () => void runner.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
