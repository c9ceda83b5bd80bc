import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { startApi, type RunningApi } from '../../api/server.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../scripts/lib/embedded-postgres.js';
import { freePort } from '../../scripts/lib/net.js';
import { resolveTemporalCli } from '../../scripts/lib/temporal-binaries.js';
import { startTemporalDevServer, type DevServer } from '../../scripts/lib/temporal-dev-server.js';
import { loadConfig, type AppConfig } from '../../shared/config.js';
import { initOrm, migrate } from '../../shared/db/orm.js';
import { createLogger } from '../../shared/log.js';
import { workerDefaults, workflowsPath } from '../../worker/index.js';

export interface BenchStack {
  config: AppConfig;
  api: RunningApi;
  /** A client with no API in front: the baseline. */
  bareClient: Client;
  close(): Promise<void>;
}

/** Embedded PostgreSQL, a Temporal dev server, a worker and the API, all in this process or its children. */
export async function startBenchStack(env: Record<string, string> = {}): Promise<BenchStack> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'platform-bench-'));
  await chmod(dir, 0o755);
  const [pg, temporal]: [RunningPostgres, DevServer] = await Promise.all([
    freePort().then((port) =>
      startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port, database: 'platform', persistent: false }),
    ),
    Promise.all([resolveTemporalCli(), freePort()]).then(([cli, port]) =>
      startTemporalDevServer({ cliPath: cli, port, uiPort: null }),
    ),
  ]);
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
    ...env,
  }); // the fake model is on loopback
  const log = createLogger({ level: 'error', sink: () => {} });
  const api = await startApi(config, log);
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue: config.temporal.taskQueue,
    workflowsPath,
    activities: createActivities({ orm: api.deps.orm, config, log }),
    maxConcurrentWorkflowTaskExecutions: 50,
    maxConcurrentActivityTaskExecutions: 50,
    ...workerDefaults,
  });
  const running = worker.run();
  const bareConnection = await Connection.connect({ address: temporal.address });
  return {
    config,
    api,
    bareClient: new Client({ connection: bareConnection }),
    async close() {
      worker.shutdown();
      await running;
      await nativeConnection.close();
      await bareConnection.close();
      await api.close();
      await temporal.stop();
      await pg.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
