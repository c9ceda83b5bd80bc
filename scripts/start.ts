/**
 * `npm start`: the whole system on one machine. Starts the Temporal dev server (unless
 * TEMPORAL_ADDRESS is set) and embedded PostgreSQL (unless DATABASE_URL is set), applies the
 * migrations, then runs the worker and the API as child processes. Ctrl-C stops everything it
 * started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../shared/config.js';
import { initOrm, migrate } from '../shared/db/orm.js';
import { startEmbeddedPostgres, type RunningPostgres } from './lib/embedded-postgres.js';
import { portOpen } from './lib/net.js';
import { dataDir, projectRoot } from './lib/paths.js';
import { resolveTemporalCli } from './lib/temporal-binaries.js';
import { startTemporalDevServer, waitForTemporal, type DevServer } from './lib/temporal-dev-server.js';

const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
const children: ChildProcess[] = [];
let postgres: RunningPostgres | undefined;
let temporal: DevServer | undefined;
let shuttingDown = false;

let stopping: Promise<void> | undefined;

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
  const running = children.filter((c) => c.exitCode === null && c.signalCode === null);
  if (running.length === 0 && !temporal && !postgres) return;
  say('stopping…');
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => (clearTimeout(timer), resolve()));
          child.kill('SIGTERM');
        }),
    ),
  );
  say('worker and API stopped');
  await temporal?.stop().catch(() => undefined);
  temporal = undefined;
  say('Temporal stopped');
  await postgres?.stop().catch(() => undefined);
  postgres = undefined;
  say('stopped');
}

function runChild(name: string, script: string, env: NodeJS.ProcessEnv): ChildProcess {
  // One node process per child (tsx as a loader, not a wrapper), so signals and the IPC channel reach
  // it directly; the channel lets it notice if this process dies without a chance to stop it.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, script)], {
    cwd: projectRoot,
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.on('exit', (code, signal) => {
    if (!shuttingDown) {
      say(`${name} exited (${signal ?? code}); stopping the rest`);
      void stopAll().then(() => process.exit(1));
    }
  });
  children.push(child);
  return child;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const env: NodeJS.ProcessEnv = { ...process.env };

  if (process.env.TEMPORAL_ADDRESS) {
    say(`using Temporal at ${config.temporal.address}`);
    await waitForTemporal(config.temporal.address, 60_000);
  } else {
    const cli = await resolveTemporalCli(say);
    const port = Number(process.env.TEMPORAL_DEV_PORT ?? 7233);
    const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? port + 1000);
    if (await portOpen('127.0.0.1', port)) throw new Error(`port ${port} is in use; set TEMPORAL_ADDRESS to use that server, or TEMPORAL_DEV_PORT`);
    say(`starting Temporal dev server (${cli}) on 127.0.0.1:${port}, UI on ${uiPort}`);
    temporal = await startTemporalDevServer({
      cliPath: cli,
      port,
      uiPort,
      dbFilename: path.join(dataDir, 'temporal', 'dev.sqlite'),
      namespaces: config.temporal.namespace === 'default' ? [] : [config.temporal.namespace],
      logFile: path.join(dataDir, 'logs', 'temporal.log'),
    });
    env.TEMPORAL_ADDRESS = temporal.address;
    env.TEMPORAL_UI_URL ??= temporal.uiUrl;
    if (shuttingDown) return stopAll(); // the signal came while it was starting
  }

  if (process.env.DATABASE_URL) {
    say('using PostgreSQL from DATABASE_URL');
  } else {
    const port = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
    if (await portOpen('127.0.0.1', port)) throw new Error(`port ${port} is in use; set DATABASE_URL or EMBEDDED_PG_PORT`);
    say(`starting embedded PostgreSQL on 127.0.0.1:${port} (data in ${path.join(dataDir, 'postgres')})`);
    postgres = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'postgres'), port, database: 'platform', persistent: true });
    env.DATABASE_URL = postgres.url;
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
  runChild('worker', 'worker/index.ts', env);
  runChild('api', 'api/server.ts', env);

  const apiUrl = `http://127.0.0.1:${config.port}`;
  for (let i = 0; i < 120 && !(await portOpen('127.0.0.1', config.port)); i++) await sleep(250);
  const lines = [
    '',
    `  API            ${apiUrl}`,
    `  OpenAPI        ${apiUrl}/openapi.json`,
    `  API reference  ${apiUrl}/docs`,
    `  Readiness      ${apiUrl}/readyz`,
    `  Temporal UI    ${env.TEMPORAL_UI_URL ?? '(not known: set TEMPORAL_UI_URL)'}`,
    `  Auth           ${config.auth.provider}${
      config.auth.provider === 'none' ? ' — authentication is OFF: every request acts as the local admin (local use only)' : ''
    }`,
    '',
    '  Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

let startFailed = false;
const started = main().catch(async (err: unknown) => {
  startFailed = true;
  say(`failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopAll();
  process.exit(1);
});

/**
 * Ctrl-C, SIGTERM or SIGHUP: stop everything, then exit 0 (a clean stop) or 1 (the start itself had
 * failed). A signal during start-up lets the step in progress finish, since that step then stops what
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
    process.exit(startFailed ? 1 : 0);
  })();
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
