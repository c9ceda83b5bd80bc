import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { buildDeps, startApi, type RunningApi } from '../../api/server.js';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing, temporalWorkerPlugins } from '../../shared/observability/tracing.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../scripts/lib/embedded-postgres.js';
import { startPgvectorPostgres } from '../../scripts/lib/pgvector-postgres.js';
import { freePort } from '../../scripts/lib/net.js';
import { resolveTemporalCli } from '../../scripts/lib/temporal-binaries.js';
import { startTemporalDevServer, type DevServer } from '../../scripts/lib/temporal-dev-server.js';
import { loadConfig, type AppConfig } from '../../shared/config.js';
import { initOrm, migrate } from '../../shared/db/orm.js';
import { createLogger } from '../../shared/log.js';
import { workerDefaults, workerTuning, workflowsPath } from '../../worker/index.js';

/** An in-process exporter that counts spans and drops them: the cost of tracing without a collector's. */
class CountingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: ExportResultCode }) => void): void {
    this.spans += spans.length;
    done({ code: ExportResultCode.SUCCESS });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface BenchStack {
  config: AppConfig;
  /** Spans exported so far with `BENCH_TRACING=1`; undefined with tracing off. */
  tracedSpans(): number | undefined;
  api: RunningApi;
  /** A client with no API in front: the baseline. */
  bareClient: Client;
  close(): Promise<void>;
}

export interface BenchStackOptions {
  /** Run a worker in this process (default true); false: the benchmark starts worker processes of its own. */
  worker?: boolean;
}

/** Embedded PostgreSQL, a Temporal dev server, a worker and the API, all in this process or its children. */
export async function startBenchStack(
  env: Record<string, string> = {},
  options: BenchStackOptions = {},
): Promise<BenchStack> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'platform-bench-'));
  await chmod(dir, 0o755);
  // BENCH_PGVECTOR=1: a throwaway PostgreSQL 16 with pgvector (the pgvector suite's cluster) instead of the
  // embedded one, so the document-index benchmark measures the pgvector/HNSW path; its shared buffers
  // (`BENCH_PGVECTOR_SHARED_BUFFERS`, default 1GB) hold a 100k-chunk index's HNSW graph (about 200 MB), as
  // pgvector's documentation asks of a server that searches it (with the default 128 MB every search reads it
  // from the OS cache).
  const temporalPort = await freePort();
  const cli = await resolveTemporalCli();
  const [pg, started]: [Pick<RunningPostgres, 'url' | 'stop'>, DevServer] = await Promise.all([
    process.env.BENCH_PGVECTOR === '1'
      ? startPgvectorPostgres(undefined, {
          shared_buffers: process.env.BENCH_PGVECTOR_SHARED_BUFFERS ?? '1GB',
        }).then((c) => ({ url: c.adminUrl, stop: () => c.stop() }))
      : freePort().then((port) =>
          startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port, database: 'platform', persistent: false }),
        ),
    startTemporalDevServer({ cliPath: cli, port: temporalPort, uiPort: null }),
  ]);
  let temporal = started;
  const orm = await initOrm({ clientUrl: pg.url });
  await migrate(orm);
  await orm.close();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: temporal.address,
    AUTH_PROVIDER: 'none',
    CRM_ALLOW_INSECURE_LOOPBACK: 'true',
    // The provider the benchmarks save points at the loopback fake: an administrator-saved endpoint.
    PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
    PLATFORM_BLUEPRINTS_DIR: path.join(dir, 'blueprints'),
    ...env,
  }); // the fake model is on loopback
  const log = createLogger({ level: 'error', sink: () => {} });
  // BENCH_TRACING=1: tracing on in API and worker, spans to an in-process exporter (no network).
  const exporter = process.env.BENCH_TRACING === '1' ? new CountingExporter() : undefined;
  const tracing = exporter ? startTracing({ serviceName: 'bench', exporter }) : undefined;
  const api = await startApi(config, log, tracing ? await buildDeps(config, log, { tracing }) : undefined);
  if (!temporal.running) {
    // It answered, then ended before its first client (once in a CI run: the worker's connection refused). Its
    // output says why; one more start on the same address, which the API's client reconnects to.
    process.stderr.write(
      `[bench stack] the Temporal dev server at ${temporal.address} ended after start-up (${await temporal.exited}); ` +
        `its last output:\n${temporal.recentOutput()}\n[bench stack] starting it again\n`,
    );
    temporal = await startTemporalDevServer({ cliPath: cli, port: temporalPort, uiPort: null });
  }
  const inProcess =
    options.worker === false ? undefined : await startInProcessWorker(config, temporal.address, api, log, tracing);
  const bareConnection = await Connection.connect({ address: temporal.address });
  return {
    config,
    api,
    bareClient: new Client({ connection: bareConnection }),
    tracedSpans: () => exporter?.spans,
    async close() {
      await inProcess?.stop();
      await bareConnection.close();
      await api.close();
      if (tracing) {
        await api.deps.orm.close();
        await api.deps.temporalConnection.close();
        await tracing.shutdown();
      }
      await temporal.stop();
      await pg.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The benchmarks' worker, in this process: the configured cache, 50 workflow tasks and 50 activities at once. */
async function startInProcessWorker(
  config: AppConfig,
  address: string,
  api: RunningApi,
  log: ReturnType<typeof createLogger>,
  tracing: ReturnType<typeof startTracing>,
): Promise<{ stop(): Promise<void> }> {
  const nativeConnection = await NativeConnection.connect({ address });
  // WORKFLOW_BUNDLE_PATH (the test run's prebuilt bundle, for the fuzzer's stack): no bundling here, tens of
  // seconds of CPU on 2 cores. Tracing's plugin adds its interceptors to the bundle, so it bundles itself.
  const bundlePath = tracing ? undefined : process.env.WORKFLOW_BUNDLE_PATH;
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue: config.temporal.taskQueue,
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath }),
    activities: createActivities({ orm: api.deps.orm, config, log }),
    // The configured workflow cache (TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS), 50 workflow tasks at most at once.
    ...workerTuning({ temporal: { ...config.temporal, workerMaxConcurrentWorkflowTasks: 50 } }),
    maxConcurrentActivityTaskExecutions: 50,
    ...workerDefaults,
    plugins: temporalWorkerPlugins(tracing),
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      await nativeConnection.close();
    },
  };
}
