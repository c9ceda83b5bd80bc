import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { createWorkerToolbox } from './toolbox.js';
import { handbackSweepSchedule } from '../shared/action-review/sweep-schedule.js';
import { autoSyncSchedule } from '../shared/managed-sources/auto-sync-schedule.js';
import { desktopDiagnosticsSchedule } from '../shared/desktop/diagnostics-schedule.js';
import { loadConfig, type AppConfig } from '../shared/config.js';
import { initOrm } from '../shared/db/orm.js';
import { isMain } from '../shared/is-main.js';
import { createLogger, describeError, type Logger } from '../shared/log.js';
import { startLogRelayPublisher } from '../shared/log-relay.js';
import { installWorkerRuntime } from '../shared/observability/temporal-runtime.js';
import { startTracing, temporalWorkerPlugins } from '../shared/observability/tracing.js';
import { Settings } from '../shared/settings/store.js';
import { syncTrackerSchedulesAtStart } from '../shared/tracker/schedules.js';
import { blueprintPurgeSchedule } from '../shared/blueprints/purge-schedule.js';
import { ensureIntervalScheduleAtStart } from '../shared/temporal/interval-schedule.js';
import { workflowsPath } from './workflows-path.js';
import { workflowSource } from './workflow-source.js';

export { workflowsPath };

/** Worker options shared by production and tests: non-determinism fails the workflow task loudly. */
export const workerDefaults: Pick<WorkerOptions, 'workflowFailureErrorTypes'> = {
  workflowFailureErrorTypes: { '*': ['NondeterminismError'] },
};

/**
 * The worker's workflow cache and task slots from the configuration (`TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS`,
 * `TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS`). The cache is bounded so that workflows which wait
 * (a mission waiting days for an answer) are evicted and replayed from history on their next task:
 * memory follows the cache size, not the number of open workflows. The SDK wants a cache of at least 2
 * and no more concurrent workflow tasks than cached workflows.
 *
 * Replicas: a workflow's next task first goes to the sticky queue of the worker that cached it; when
 * that worker died (SIGKILL, OOM), the task waits there `TEMPORAL_WORKER_STICKY_TIMEOUT_MS` (1 s; the
 * SDK's default 10 s) before another worker takes it from the shared queue. On SIGTERM (the SDK's
 * runtime turns it into `worker.shutdown()`) the worker stops polling, releases its sticky queue and
 * gives running activities `TEMPORAL_WORKER_SHUTDOWN_GRACE_SECONDS` (10 s) to finish before cancelling them.
 */
export function workerTuning(
  config: Pick<AppConfig, 'temporal'>,
): Pick<
  WorkerOptions,
  | 'maxCachedWorkflows'
  | 'maxConcurrentWorkflowTaskExecutions'
  | 'stickyQueueScheduleToStartTimeout'
  | 'shutdownGraceTime'
> {
  const maxCachedWorkflows = Math.max(2, config.temporal.workerMaxCachedWorkflows);
  const tasks = Math.max(2, config.temporal.workerMaxConcurrentWorkflowTasks);
  return {
    maxCachedWorkflows,
    maxConcurrentWorkflowTaskExecutions: Math.min(tasks, maxCachedWorkflows),
    stickyQueueScheduleToStartTimeout: config.temporal.workerStickyTimeoutMs,
    shutdownGraceTime: config.temporal.workerShutdownGraceSeconds * 1000,
  };
}

/**
 * The Schedules every worker ensures at start (idempotent: create, or bring an existing one in line), so
 * N workers on one Temporal namespace leave each Schedule once, and each of its runs starts once.
 */
export async function ensureWorkerSchedules(config: AppConfig, log: Logger, settings: Settings): Promise<void> {
  const sweepEvery = await settings.get('action_review.sweep_interval_seconds').catch((err: unknown) => {
    log.warn('could not read the saved sweep interval; using env or default', describeError(err));
    return config.actionReview.sweepIntervalSeconds;
  });
  await ensureIntervalScheduleAtStart(config, log, handbackSweepSchedule(sweepEvery));
  await ensureIntervalScheduleAtStart(config, log, autoSyncSchedule());
  // Desktop mode only: the hourly automatic diagnostics attempt.
  if (await settings.get('desktop.enabled').catch(() => false))
    await ensureIntervalScheduleAtStart(config, log, desktopDiagnosticsSchedule());
  // Tracker automation: both pollers' Schedules, paused unless enabled.
  await syncTrackerSchedulesAtStart(config, log, settings);
  // Hidden blueprints whose missions have all ended are purged hourly.
  await ensureIntervalScheduleAtStart(config, log, blueprintPurgeSchedule());
}

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger({ level: config.logLevel, base: { service: 'worker' } });
  // Once per process, before any connection: SDK logs through our logger, worker metrics when configured.
  installWorkerRuntime({ log, metricsBindAddress: config.observability.workerMetricsAddress });
  if (config.observability.workerMetricsAddress)
    log.info('worker metrics', { address: config.observability.workerMetricsAddress, path: '/metrics' });
  const tracing = startTracing({ serviceName: 'platform-worker', otlpEndpoint: config.observability.otlpEndpoint });
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  const orm = await initOrm({ clientUrl: config.databaseUrl, poolMax: config.databasePoolMax });
  // Hosted mode: lines naming a workflow or a principal reach the API's log WebSockets (NOTIFY per tenant).
  const logRelay =
    config.auth.provider === 'hosted'
      ? startLogRelayPublisher({ databaseUrl: config.databaseUrl, tenant: config.auth.deploymentTenant })
      : null;
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const settings = new Settings(orm, config);
  const tools = createWorkerToolbox({ orm, config, log, settings });
  const plugins = temporalWorkerPlugins(tracing);
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(await workflowSource(config.temporal.workerBundleCache, plugins, log)),
    activities: createActivities({ orm, config, log, settings, toolbox: tools.toolbox, temporal: tools.temporal }),
    ...workerDefaults,
    ...workerTuning(config),
    plugins,
  });
  await ensureWorkerSchedules(config, log, settings);
  log.info('worker started', { task_queue: config.temporal.taskQueue, namespace: config.temporal.namespace });
  // SIGINT and SIGTERM are handled by the SDK's runtime (graceful shutdown). Started by `npm start`
  // with an IPC channel: when the parent goes, so do we (no orphans).
  process.on('disconnect', () => {
    log.info('worker stopping', { reason: 'parent exited' });
    if (worker.getState() === 'RUNNING') worker.shutdown();
    // Its Temporal server and database may be gone with the parent: a shutdown that hangs must not leave
    // an orphan (the grace time for running activities, then a little for the closes).
    const deadline = config.temporal.workerShutdownGraceSeconds * 1000 + 15_000;
    setTimeout(() => {
      log.warn('worker stop timed out; exiting', { reason: 'parent exited', after_ms: deadline });
      process.exit(0);
    }, deadline).unref();
  });
  await worker.run();
  await tools.close();
  await connection.close();
  await logRelay?.close();
  await orm.close();
  await tracing?.shutdown();
  log.info('worker stopped');
}

if (isMain(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(JSON.stringify({ level: 'error', msg: 'worker failed', ...describeError(err) }));
    process.exit(1);
  });
}
