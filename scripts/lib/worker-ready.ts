import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import protoPackage from '@temporalio/proto';

const { TaskQueueType } = protoPackage.temporal.api.enums.v1;

/** The identity the Temporal SDK gives a worker by default (worker-options: `<pid>@<hostname>`). */
export const workerIdentity = (pid: number): string => `${pid}@${os.hostname()}`;

/**
 * Whether the server has seen `identity` poll `taskQueue` for workflow AND activity tasks
 * (DescribeTaskQueue): from then on a workflow started there runs, it does not wait for the worker.
 */
export async function workerPolling(
  connection: Connection,
  where: { namespace: string; taskQueue: string },
  identity: string,
): Promise<boolean> {
  for (const taskQueueType of [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
    const { pollers } = await connection.workflowService.describeTaskQueue({
      namespace: where.namespace,
      taskQueue: { name: where.taskQueue },
      taskQueueType,
    });
    if (!(pollers ?? []).some((p) => p.identity === identity)) return false;
  }
  return true;
}

/**
 * Waits until the current worker process (`pid()`, which changes when it is restarted) polls the task
 * queue; false when `timeoutMs` passed first or `stop()` said to give up.
 */
export async function waitForWorkerPolling(options: {
  address: string;
  namespace: string;
  taskQueue: string;
  pid: () => number | undefined;
  timeoutMs: number;
  stop: () => boolean;
}): Promise<boolean> {
  const deadline = Date.now() + options.timeoutMs;
  const connection = await Connection.connect({ address: options.address, connectTimeout: 5_000 });
  try {
    while (Date.now() < deadline && !options.stop()) {
      const pid = options.pid();
      // A failed describe (the dev server restarting) is asked again, like a missing poller.
      if (pid !== undefined && (await workerPolling(connection, options, workerIdentity(pid)).catch(() => false)))
        return true;
      await sleep(250);
    }
    return false;
  } finally {
    await connection.close();
  }
}
