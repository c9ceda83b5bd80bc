/** The WIP session's lifetime in virtual time: the time-skipping server skips the TTL timer. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { wipSessionClosedSignal } from '../../workflows/blueprint-wip-definitions.js';
import { recordHistory } from '../helpers/histories.js';
import { startTimeSkipping, uniqueTaskQueue } from '../helpers/temporal.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

async function workerWith(expireResult: boolean, calls: string[]) {
  const taskQueue = uniqueTaskQueue();
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: {
      expireBlueprintWipSession: async ({ sessionId }: { sessionId: string }) => (
        calls.push(sessionId),
        { expired: expireResult }
      ),
    },
  });
  return { worker, taskQueue };
}

describe('blueprintWipSessionWorkflow', () => {
  it('expires the session when the TTL ends, after exactly one timer of the TTL', async () => {
    const calls: string[] = [];
    const { worker, taskQueue } = await workerWith(true, calls);
    const startedAt = await env.currentTimeMs();
    const handle = await env.client.workflow.start('blueprintWipSessionWorkflow', {
      taskQueue,
      workflowId: 'blueprint-wip/bpwip_00000000000000aa',
      args: [{ sessionId: 'bpwip_00000000000000aa', tenant: 't1', blueprintId: 'bp_1', ttlSeconds: 3600 }],
    });
    expect(await worker.runUntil(handle.result())).toEqual({ outcome: 'expired' });
    expect(calls).toEqual(['bpwip_00000000000000aa']);
    expect((await env.currentTimeMs()) - startedAt).toBeGreaterThanOrEqual(3_600_000);
    const timers = (await handle.fetchHistory()).events!.filter((e) => e.timerStartedEventAttributes);
    expect(timers.map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds))).toEqual([3600]);
    await recordHistory('blueprint-wip-expired', handle);
  });

  it('ends without the expiry activity when the API signals a commit or discard', async () => {
    const calls: string[] = [];
    const { worker, taskQueue } = await workerWith(true, calls);
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('blueprintWipSessionWorkflow', {
        taskQueue,
        workflowId: 'blueprint-wip/bpwip_00000000000000bb',
        args: [{ sessionId: 'bpwip_00000000000000bb', tenant: 't1', blueprintId: 'bp_1', ttlSeconds: 3600 }],
      });
      await handle.signal(wipSessionClosedSignal, { status: 'committed' });
      const r = await handle.result();
      await recordHistory('blueprint-wip-committed', handle);
      return r;
    });
    expect(result).toEqual({ outcome: 'closed' });
    expect(calls).toEqual([]);
  });

  it('answers already_closed when the row was closed before the timer fired', async () => {
    const calls: string[] = [];
    const { worker, taskQueue } = await workerWith(false, calls);
    const handle = await env.client.workflow.start('blueprintWipSessionWorkflow', {
      taskQueue,
      workflowId: 'blueprint-wip/bpwip_00000000000000cc',
      args: [{ sessionId: 'bpwip_00000000000000cc', tenant: 't1', blueprintId: 'bp_1', ttlSeconds: 60 }],
    });
    expect(await worker.runUntil(handle.result())).toEqual({ outcome: 'already_closed' });
    expect(calls).toEqual(['bpwip_00000000000000cc']);
  });
});
