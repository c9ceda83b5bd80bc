/**
 * A Temporal worker in a process of its own, so a test can kill it for real (SIGKILL: no shutdown,
 * no drain, no goodbye to the server) and start another.
 *
 * As a script (`node --import tsx tests/helpers/worker-process.ts`) it reads DATABASE_URL,
 * TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, the Action Review settings (ACTION_REVIEW_*, TICKET_TRACKER_URL,
 * LOCAL_CLI_*) and WORKFLOW_BUNDLE_PATH (the test run's prebuilt bundle) from the environment, runs
 * the real workflows and activities (with the worker's toolbox and its own Temporal client, as
 * `worker/index.ts` gives them, so activities that start or update workflows work), and writes `ready` on a line of stdout once it polls.
 * As the worker, it relays its log lines in hosted mode; with WORKER_SCHEDULES=1 it also ensures the worker's Schedules. SIGTERM
 * (or the parent going away) stops it gracefully. Logs go to stderr.
 *
 * From a test, `spawnWorkerProcess` starts one and answers a handle to wait for, kill and stop it.
 * `{ standby: true }` starts a spare: it loads the app and creates its Worker (the seconds a worker takes
 * to start) but does not poll until `activate()`, so no task can reach it before; then it runs as any
 * other. A test that kills workers one after another starts the next ones as spares meanwhile, so a
 * replacement polls moments after its kill instead of after a whole process start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { loadConfig } from '../../shared/config.js';
import { initOrm } from '../../shared/db/orm.js';
import { isMain } from '../../shared/is-main.js';
import { createLogger, describeError } from '../../shared/log.js';
import { installWorkerRuntime } from '../../shared/observability/temporal-runtime.js';
import { ensureWorkerSchedules, workerDefaults, workerTuning } from '../../worker/index.js';
import { startLogRelayPublisher } from '../../shared/log-relay.js';
import { Settings } from '../../shared/settings/store.js';
import { createWorkerToolbox } from '../../worker/toolbox.js';
import { testEmbeddingConsumers } from './embedding-test-consumer.js';

const scriptPath = fileURLToPath(import.meta.url);
const projectRoot = fileURLToPath(new URL('../../', import.meta.url));
const READY = 'ready';
/** A spare's line once it waits for its `activate` message (on the IPC channel). */
const STANDBY = 'standby';
const ACTIVATE = 'activate';

/**
 * A spare (WORKER_STANDBY=1) waits here until its parent activates it; it exits if the parent goes or it
 * is stopped (SIGTERM, SIGINT) first: it has nothing to drain.
 */
function standbyUntilActivated(): Promise<void> {
  return new Promise((resolve) => {
    const leave = () => process.exit(0);
    const onMessage = (message: unknown) => {
      if (message !== ACTIVATE) return;
      process.off('message', onMessage);
      for (const event of ['disconnect', 'SIGTERM', 'SIGINT'] as const) process.off(event, leave);
      resolve();
    };
    process.on('message', onMessage);
    for (const event of ['disconnect', 'SIGTERM', 'SIGINT'] as const) process.on(event, leave);
    process.stdout.write(`${STANDBY}\n`);
  });
}

async function main(): Promise<void> {
  const bundlePath = process.env.WORKFLOW_BUNDLE_PATH;
  if (!bundlePath) throw new Error('WORKFLOW_BUNDLE_PATH is not set');
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  const log = createLogger({
    level: config.logLevel,
    base: { service: 'worker-process', pid: process.pid },
    sink: (line) => process.stderr.write(line + '\n'),
  });
  // As the worker does: SDK lines through our logger (errors only here), metrics when TEMPORAL_WORKER_METRICS_ADDRESS is set.
  installWorkerRuntime({
    log: log.child({ component: 'temporal-sdk' }),
    sdkLevel: 'error',
    metricsBindAddress: config.observability.workerMetricsAddress,
  });
  const orm = await initOrm({ clientUrl: config.databaseUrl, poolMax: 2 });
  // As the worker does in hosted mode: lines naming a workflow or a principal reach the API's log sockets.
  const logRelay =
    config.auth.provider === 'hosted'
      ? startLogRelayPublisher({ databaseUrl: config.databaseUrl, tenant: config.auth.deploymentTenant })
      : null;
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  // As the worker does: a Temporal client of its own for the tools and the activities that start or
  // update workflows (the mission's prompt activity, Action Review proposals).
  const tools = createWorkerToolbox({ orm, config, log });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowBundle: { codePath: bundlePath },
    activities: createActivities({
      orm,
      config,
      log,
      toolbox: tools.toolbox,
      temporal: tools.temporal,
      ...(process.env.TEST_EMBEDDING_CONSUMER === '1' ? { embeddingConsumers: testEmbeddingConsumers() } : {}),
    }),
    ...workerDefaults,
    ...workerTuning(config),
  });
  // A spare waits here, connected and created but not polling: no task reaches a worker before it polls.
  if (process.env.WORKER_STANDBY === '1') await standbyUntilActivated();
  // WORKER_SCHEDULES=1: ensure the Schedules as the worker does at start (a namespace of the test's own:
  // their ids are fixed per namespace).
  if (process.env.WORKER_SCHEDULES === '1') await ensureWorkerSchedules(config, log, new Settings(orm, config));
  // The SDK's runtime turns SIGINT/SIGTERM into a graceful shutdown; a vanished parent does too.
  process.channel?.unref(); // the channel alone must not keep the process alive
  process.on('disconnect', () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
  const running = worker.run();
  process.stdout.write(`${READY}\n`);
  await running;
  await tools.close();
  await connection.close();
  await logRelay?.close();
  await orm.close();
  process.exit(0);
}

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves once the worker polls its task queue; rejects if the process ends first. */
  ready: Promise<void>;
  /** A spare (`{ standby: true }`): connect and poll now (answers `ready`). Any other: answers `ready`. */
  activate(): Promise<void>;
  /** Resolves once the app is loaded: a spare waits for `activate()` from then on; any other is `ready`. */
  loaded: Promise<void>;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What the process wrote to stderr so far (for failure messages). */
  stderr(): string;
  /** SIGKILL: the process dies on the spot, as in a crash or an OOM kill. */
  kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. Safe to call on an exited process. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `tests/helpers/worker-process.ts` as a child process with the given environment on top of ours;
 * `standby`: as a spare that polls only once activated (`readyTimeoutMs` then counts from `activate()`).
 */
export function spawnWorkerProcess(
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
  { standby = false }: { standby?: boolean } = {},
): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', scriptPath], {
    cwd: projectRoot,
    // The fakes listen on loopback: allow it (the egress policy refuses loopback otherwise).
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
      CRM_ALLOW_INSECURE_LOOPBACK: 'true',
      ...env,
      WORKER_STANDBY: standby ? '1' : '0',
    },
    // An IPC channel only so that the worker notices when its parent (the test run) is gone.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const lines = new Set<string>();
  const onLine = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const line of stdout.split('\n')) lines.add(line);
    for (const check of onLine) check();
  });
  /** Resolves once the child wrote `line`; rejects if it ends first. */
  const lineSeen = (line: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!lines.has(line)) return;
        onLine.delete(check);
        resolve();
      };
      onLine.add(check);
      check();
      void exited.then(({ code, signal }) =>
        reject(
          new Error(
            `worker process ${child.pid} ended before it was ready (code ${code}, signal ${signal})\n${stderr}`,
          ),
        ),
      );
    });
  let activated: Promise<void> | undefined;
  const activate = () => {
    activated ??= (async () => {
      if (standby) {
        await lineSeen(STANDBY);
        child.send(ACTIVATE);
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`worker process ${child.pid} not ready after ${readyTimeoutMs} ms\n${stderr}`)),
          readyTimeoutMs,
        );
      });
      try {
        await Promise.race([lineSeen(READY), timeout]);
      } finally {
        clearTimeout(timer);
      }
    })();
    activated.then(
      () => settleReady?.resolve(),
      (err: unknown) => settleReady?.reject(err),
    );
    return activated;
  };
  // A spare is ready once activated and polling; any other from the start.
  let settleReady: { resolve(): void; reject(err: unknown): void } | undefined;
  const ready = standby ? new Promise<void>((resolve, reject) => (settleReady = { resolve, reject })) : activate();
  ready.catch(() => undefined); // observed by whoever awaits it; never an unhandled rejection
  const loaded = standby ? lineSeen(STANDBY) : ready;
  loaded.catch(() => undefined);
  return {
    child,
    ready,
    activate,
    loaded,
    exited,
    stderr: () => stderr,
    async kill() {
      if (isRunning(child)) child.kill('SIGKILL');
      return exited;
    },
    stop: (graceMs = 10_000) => stopChild(child, exited, graceMs),
  };
}

const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** SIGTERM, then SIGKILL if the child has not exited within `graceMs`; resolves once it has exited. */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>, graceMs: number): Promise<void> {
  if (!isRunning(child)) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => isRunning(child) && child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

if (isMain(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(
      JSON.stringify({ level: 'error', msg: 'worker process failed', ...describeError(err) }) + '\n',
    );
    process.exit(1);
  });
}
