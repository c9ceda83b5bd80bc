/**
 * Once per `npm test`: one embedded PostgreSQL with a migrated template database, one Temporal dev
 * server (started by us: the SDK gives a server it launches only 5 s), one workflow bundle. Each test
 * file then gets its own database (cloned from the template) and its own task queue.
 * `TEST_WORKFLOW_BUNDLE=skip` leaves the bundle out and `TEST_TEMPLATE_SCHEMA=skip` the migrations of
 * the template database (the exit-status gate: five nested runs whose fixtures use neither; bundling is
 * most of this setup's CPU). The bundler and the ORM are imported only when used: this module must not
 * load the app (the worker's module graph costs seconds before any test file can start).
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../scripts/lib/embedded-postgres.js';
import { freePort } from '../../scripts/lib/net.js';
import { resolveTemporalCli, resolveTemporalTestServer } from '../../scripts/lib/temporal-binaries.js';
import { startTemporalDevServer } from '../../scripts/lib/temporal-dev-server.js';
import { workflowsPath } from '../../worker/workflows-path.js';

export const TEMPLATE_DB = 'platform_template';
/**
 * A Temporal namespace of its own for the replicas suite: its workers ensure the Schedules with the
 * deployment's fixed ids, which must not meet the ones other files create in `default`.
 */
export const REPLICAS_NAMESPACE = 'replicas';
/** The same for the chaos suite's replicas topology (`tests/chaos/api-replica-kill`), which may run beside it. */
export const REPLICAS_CHAOS_NAMESPACE = 'replicas-chaos';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplateDb: string;
    temporalAddress: string;
    workflowBundlePath: string;
    testServerPath: string;
    temporalCliPath: string;
  }
}

export default async function setup(project: TestProject) {
  const log = (line: string) => process.stderr.write(`[global-setup] ${line}\n`);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'platform-tests-'));
  // PostgreSQL runs as the `postgres` user when we are root: it must be able to enter this folder.
  await chmod(workDir, 0o755);
  // Loaded while the servers start (it is CPU here, they are other processes).
  const loadingOrm = process.env.TEST_TEMPLATE_SCHEMA === 'skip' ? undefined : import('../../shared/db/orm.js');
  loadingOrm?.catch(() => undefined); // awaited below, unless the start fails first
  const [cli, testServer] = await Promise.all([resolveTemporalCli(log), resolveTemporalTestServer(log)]);

  const started = await Promise.allSettled([
    freePort().then((port) =>
      startEmbeddedPostgres({ dataDir: path.join(workDir, 'pg'), port, database: TEMPLATE_DB, persistent: false }),
    ),
    Promise.all([freePort()]).then(([port]) =>
      startTemporalDevServer({
        cliPath: cli,
        port,
        uiPort: null,
        logFile: path.join(workDir, 'temporal.log'),
        namespaces: [REPLICAS_NAMESPACE, REPLICAS_CHAOS_NAMESPACE],
      }),
    ),
    process.env.TEST_WORKFLOW_BUNDLE === 'skip'
      ? { code: '' }
      : import('@temporalio/worker').then(({ bundleWorkflowCode }) =>
          bundleWorkflowCode({
            workflowsPath,
            logger: { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} } as never,
          }),
        ),
  ]);
  const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) {
    // Leave nothing running behind a failed start.
    await Promise.all(
      started.map((s) =>
        s.status === 'fulfilled' && 'stop' in s.value ? s.value.stop().catch(() => undefined) : undefined,
      ),
    );
    await rm(workDir, { recursive: true, force: true });
    throw failure.reason;
  }
  const [postgres, temporal, bundle] = started.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [
    Awaited<ReturnType<typeof startEmbeddedPostgres>>,
    Awaited<ReturnType<typeof startTemporalDevServer>>,
    { code: string },
  ];
  if (loadingOrm) {
    const { initOrm, migrate } = await loadingOrm;
    const orm = await initOrm({ clientUrl: postgres.url, poolMax: 2 });
    await migrate(orm);
    await orm.close();
  }
  const workflowBundlePath = path.join(workDir, 'workflow-bundle.js');
  await writeFile(workflowBundlePath, bundle.code);

  project.provide('pgAdminUrl', postgres.urlFor('postgres'));
  project.provide('pgTemplateDb', TEMPLATE_DB);
  project.provide('temporalAddress', temporal.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('testServerPath', testServer);
  project.provide('temporalCliPath', cli);
  log(`postgres ${postgres.urlFor('').replace(/:[^:@/]+@/, ':***@')} · temporal ${temporal.address}`);

  return async () => {
    await temporal.stop();
    await postgres.stop();
    await rm(workDir, { recursive: true, force: true });
  };
}
