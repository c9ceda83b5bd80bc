/**
 * `npm start`: the whole system on one machine. Starts the Temporal dev server (unless
 * TEMPORAL_ADDRESS is set) and embedded PostgreSQL (unless DATABASE_URL is set), applies the
 * migrations, then runs the worker and the API as child processes. Each of these four is supervised
 * (scripts/lib/supervisor.ts): when one exits unasked it is started again, with backoff, on the same
 * port and data; only one that keeps failing right after start stops the whole system (exit 1).
 * The banner (URLs of the API, the review console, the MCP endpoint…) comes once the API listens and
 * Temporal has seen the worker poll its task queue, so what it lists works when it appears.
 * Ctrl-C stops everything it started.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../shared/config.js';
import { initOrm, migrate } from '../shared/db/orm.js';
import { startEmbeddedPostgres } from './lib/embedded-postgres.js';
import { portOpen } from './lib/net.js';
import { dataDir, projectRoot } from './lib/paths.js';
import { Supervisor, type Run } from './lib/supervisor.js';
import { resolveTemporalCli } from './lib/temporal-binaries.js';
import { startTemporalDevServer, waitForTemporal, type DevServerOptions } from './lib/temporal-dev-server.js';
import { waitForWorkerPolling } from './lib/worker-ready.js';

const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
/** What runs, by stop order: worker and API first, then Temporal, then PostgreSQL. */
const supervised: { children: Supervisor[]; temporal?: Supervisor; postgres?: Supervisor } = { children: [] };
let shuttingDown = false;
/** The start failed, or a process kept failing: the exit status is 1. */
let failed = false;

let stopping: Promise<void> | undefined;
/** How long the banner waits for the worker's first poll (it bundles the workflows first: slow on a busy machine). */
const WORKER_READY_TIMEOUT_MS = 180_000;

/** Stops everything started so far; a second call (e.g. a start step finishing after the signal) stops the rest. */
async function stopAll(): Promise<void> {
  shuttingDown = true;
  const previous = stopping;
  stopping = (async () => {
    await previous;
    await stopStarted();
  })();
  return stopping;
}

async function stopStarted(): Promise<void> {
  const { children, temporal, postgres } = supervised;
  supervised.children = [];
  supervised.temporal = supervised.postgres = undefined;
  if (children.length === 0 && !temporal && !postgres) return;
  // First no restarts anywhere, so that stopping one process never restarts another.
  for (const s of [...children, temporal, postgres]) s?.retire();
  say('stopping…');
  await Promise.all(children.map((s) => s.stop()));
  say('worker and API stopped');
  await temporal?.stop().catch(() => undefined);
  say('Temporal stopped');
  await postgres?.stop().catch(() => undefined);
  say('stopped');
}

/** A supervisor that logs with `[start]` and stops the whole system (exit 1) when it gives up. */
function supervise(name: string, start: () => Promise<Run>): Supervisor {
  return new Supervisor({
    name,
    start,
    log: say,
    onGiveUp: () => {
      if (shuttingDown) return;
      failed = true;
      void stopAll().then(() => process.exit(1));
    },
  });
}

/** Starts a node script as a child process; answers once it is spawned (with its pid). */
async function runChild(script: string, env: NodeJS.ProcessEnv): Promise<Run & { pid: number | undefined }> {
  // One node process per child (tsx as a loader, not a wrapper), so signals and the IPC channel reach
  // it directly; the channel lets it notice if this process dies without a chance to stop it.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, script)], {
    cwd: projectRoot,
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ?? `code ${code}`));
    child.once('error', (err) => resolve(`error: ${err.message}`));
  });
  return {
    pid: child.pid,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(timer);
    },
  };
}

/** True when `GET /healthz` at `base` answers this API's liveness document. */
async function answersHealth(base: string): Promise<boolean> {
  try {
    const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) });
    if (res.status !== 200) return false;
    const body = (await res.json()) as { status?: unknown };
    return body.status === 'ok';
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything starts: a port held by another process would leave the API restarting on EADDRINUSE.
  if (await portOpen('127.0.0.1', config.port))
    throw new Error(`port ${config.port} is in use; stop what listens there, or set PORT`);
  const env: NodeJS.ProcessEnv = { ...process.env };

  if (process.env.TEMPORAL_ADDRESS) {
    say(`using Temporal at ${config.temporal.address}`);
    await waitForTemporal(config.temporal.address, 60_000);
  } else {
    const cli = await resolveTemporalCli(say);
    const port = Number(process.env.TEMPORAL_DEV_PORT ?? 7233);
    const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? port + 1000);
    if (await portOpen('127.0.0.1', port))
      throw new Error(`port ${port} is in use; set TEMPORAL_ADDRESS to use that server, or TEMPORAL_DEV_PORT`);
    say(`starting Temporal dev server (${cli}) on 127.0.0.1:${port}, UI on ${uiPort}`);
    const options: DevServerOptions = {
      cliPath: cli,
      port,
      uiPort,
      dbFilename: path.join(dataDir, 'temporal', 'dev.sqlite'),
      namespaces: config.temporal.namespace === 'default' ? [] : [config.temporal.namespace],
      logFile: path.join(dataDir, 'logs', 'temporal.log'),
    };
    // A restart uses the same ports and SQLite file: workflows carry on where they were.
    const temporal = (supervised.temporal = supervise('Temporal dev server', () => startTemporalDevServer(options)));
    await temporal.start();
    env.TEMPORAL_ADDRESS = `127.0.0.1:${port}`;
    env.TEMPORAL_UI_URL ??= `http://127.0.0.1:${uiPort}`;
    if (shuttingDown) return stopAll(); // the signal came while it was starting
  }

  if (process.env.DATABASE_URL) {
    say('using PostgreSQL from DATABASE_URL');
  } else {
    const port = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
    if (await portOpen('127.0.0.1', port))
      throw new Error(`port ${port} is in use; set DATABASE_URL or EMBEDDED_PG_PORT`);
    say(`starting embedded PostgreSQL on 127.0.0.1:${port} (data in ${path.join(dataDir, 'postgres')})`);
    let cluster: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
    const postgres = (supervised.postgres = supervise('PostgreSQL', async () => {
      // The first start creates the cluster (if new); a restart starts the same one on the same port.
      if (cluster) await cluster.start();
      else
        cluster = await startEmbeddedPostgres({
          dataDir: path.join(dataDir, 'postgres'),
          port,
          database: 'platform',
          persistent: true,
        });
      return { exited: cluster.exited(), stop: cluster.stop };
    }));
    await postgres.start();
    env.DATABASE_URL = cluster!.url;
    if (shuttingDown) return stopAll();
  }

  const orm = await initOrm({ clientUrl: env.DATABASE_URL! });
  try {
    const applied = await migrate(orm);
    say(applied.length ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date');
  } finally {
    await orm.close();
  }

  if (shuttingDown) return stopAll();
  // The workflow bundle is made by the first worker of this start and reused by any restart of it
  // (a new file per start, so a start after a code change never runs the old bundle).
  if (!process.env.TEMPORAL_WORKER_BUNDLE_CACHE) {
    const bundleDir = path.join(dataDir, 'run');
    await rm(bundleDir, { recursive: true, force: true });
    env.TEMPORAL_WORKER_BUNDLE_CACHE = path.join(bundleDir, `workflow-bundle-${process.pid}.js`);
  }
  // The worker's current process (a restart changes it): the banner waits until it polls.
  let workerPid: number | undefined;
  for (const [name, script] of [
    ['worker', 'worker/index.ts'],
    ['API', 'api/server.ts'],
  ] as const) {
    const child = supervise(name, async () => {
      const run = await runChild(script, env);
      if (name === 'worker') workerPid = run.pid;
      return run;
    });
    supervised.children.push(child);
    await child.start();
  }

  const apiUrl = `http://127.0.0.1:${config.port}`;
  const [apiReady, workerReady] = await Promise.all([
    (async () => {
      // This API's own liveness answer, not just an open port (another listener could hold it).
      for (let i = 0; i < 120; i++) {
        if (await answersHealth(apiUrl)) return true;
        if (shuttingDown) return false;
        await sleep(250);
      }
      return false;
    })(),
    // Workflow-backed requests run only once the worker polls (it bundles the workflows first).
    waitForWorkerPolling({
      address: env.TEMPORAL_ADDRESS ?? config.temporal.address,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      pid: () => workerPid,
      timeoutMs: WORKER_READY_TIMEOUT_MS,
      stop: () => shuttingDown,
    }),
  ]);
  if (shuttingDown) return stopAll();
  if (!apiReady)
    say(
      `the API does not answer ${apiUrl}/healthz after 30 s: requests fail until it does (see its log above; PORT=${config.port})`,
    );
  if (!workerReady)
    say(
      `the worker is not polling task queue ${config.temporal.taskQueue} after ${WORKER_READY_TIMEOUT_MS / 1000} s: workflow-backed requests wait until it does (see its log above)`,
    );
  const lines = [
    '',
    `  API            ${apiUrl}`,
    `  Review console ${apiUrl}/console`,
    `  MCP endpoint   ${apiUrl}/mcp/`,
    `  OpenAPI        ${apiUrl}/openapi.json`,
    `  API reference  ${apiUrl}/docs`,
    `  Readiness      ${apiUrl}/readyz`,
    `  Worker         ${workerReady ? `polling task queue ${config.temporal.taskQueue}` : 'NOT polling yet'}`,
    `  Temporal UI    ${env.TEMPORAL_UI_URL ?? '(not known: set TEMPORAL_UI_URL)'}`,
    `  Auth           ${config.auth.provider}${
      config.auth.provider === 'none'
        ? ' — authentication is OFF: every request acts as the local admin (local use only)'
        : ''
    }`,
    '',
    '  Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

const started = main().catch(async (err: unknown) => {
  failed = true;
  say(`failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopAll();
  process.exit(1);
});

/**
 * Ctrl-C, SIGTERM or SIGHUP: stop everything (no restarts from then on), then exit 0 (a clean stop)
 * or 1 (the start itself had failed, or a process kept failing). A signal during start-up lets the step in progress finish, since that step then stops what
 * it started. A second signal, or a stop that takes longer than 45 s, forces the exit.
 */
let signalled = false;
function onSignal(signal: NodeJS.Signals): void {
  if (signalled) {
    say(`${signal} again: exiting without waiting`);
    process.exit(1);
  }
  signalled = true;
  setTimeout(() => {
    say('stopping took longer than 45 s: exiting');
    process.exit(1);
  }, 45_000).unref();
  void (async () => {
    await stopAll();
    await Promise.race([started, sleep(30_000)]);
    await stopAll();
    process.exit(failed ? 1 : 0);
  })();
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
