/** The approval's lifetime in virtual time: the time-skipping server skips the TTL timer. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordHistory } from '../helpers/histories.js';
import { startTimeSkipping, uniqueTaskQueue } from '../helpers/temporal.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

describe('crmMergeApprovalWorkflow', () => {
  it('records expiry when the TTL ends unclaimed, after exactly the TTL', async () => {
    const expired: string[] = [];
    const taskQueue = uniqueTaskQueue();
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: {
        recordMergeApproved: async () => undefined,
        expireMergeApproval: async ({ approvalId }: { approvalId: string }) => (
          expired.push(approvalId),
          { expired: true }
        ),
      },
    });
    const startedAt = await env.currentTimeMs();
    const handle = await env.client.workflow.start('crmMergeApprovalWorkflow', {
      taskQueue,
      workflowId: 'crm-merge/ttl-virtual',
      args: [
        {
          approvalId: 'ttl-virtual',
          tenant: 't1',
          connectionName: 'crm_main',
          ttlSeconds: 3600,
          settleWaitSeconds: 660,
        },
      ],
    });
    const result = await worker.runUntil(handle.result());
    expect(result).toEqual({ phase: 'expired', approvedBy: null, finalStatus: null });
    expect(expired).toEqual(['ttl-virtual']);
    expect((await env.currentTimeMs()) - startedAt).toBeGreaterThanOrEqual(3_600_000);
    // The lifetime is one durable timer of exactly the TTL (virtual time may skip further after completion).
    const timers = (await handle.fetchHistory()).events!.filter((e) => e.timerStartedEventAttributes);
    expect(timers.map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds))).toEqual([3600]);
    await recordHistory('crm-merge-ttl-expired', handle);
  });

  it('keeps the outcome when the inbox claimed the execution just before the TTL', async () => {
    const taskQueue = uniqueTaskQueue();
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: { recordMergeApproved: async () => undefined, expireMergeApproval: async () => ({ expired: false }) },
    });
    const handle = await env.client.workflow.start('crmMergeApprovalWorkflow', {
      taskQueue,
      workflowId: 'crm-merge/ttl-claimed',
      args: [
        { approvalId: 'ttl-claimed', tenant: 't1', connectionName: 'crm_main', ttlSeconds: 60, settleWaitSeconds: 120 },
      ],
    });
    expect(await worker.runUntil(handle.result())).toMatchObject({ phase: 'executing' });
  });
});
