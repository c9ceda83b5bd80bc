/**
 * The hand-back of a decision into its conversation, in virtual time: delivery retried with backoff up
 * to the run's attempts and then left pending for the sweep, and the sweep's counts of what it
 * delivered and what failed. Stub activities count each attempt.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

/** Stubs: delivery of a proposal fails the given number of times, then delivers. */
function handbackStubs(failures: Record<string, number>, pending: string[] = []) {
  const failed = new Map<string, number>();
  return recorded({
    listPendingHandbacks: async () => pending,
    deliverHandback: async ({ proposalId }: { proposalId: string }) => {
      const n = failed.get(proposalId) ?? 0;
      if (n < (failures[proposalId] ?? 0)) {
        failed.set(proposalId, n + 1);
        throw new Error('conversation store unavailable');
      }
      return { delivered: true, messageId: `msg-${proposalId}` };
    },
  });
}

async function run(stubs: ReturnType<typeof handbackStubs>, workflowType: string, args: unknown[]) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const handle = await env.client.workflow.start(workflowType, {
    taskQueue,
    workflowId: `handback-test/${randomUUID()}`,
    args,
  });
  return worker.runUntil(handle.result());
}

describe('actionReviewHandbackWorkflow', () => {
  it('retries a failing delivery with backoff and delivers', async () => {
    const stubs = handbackStubs({ p1: 2 });
    const result = await run(stubs, 'actionReviewHandbackWorkflow', [{ proposalId: 'p1', maxAttempts: 5 }]);
    expect(result).toEqual({ proposalId: 'p1', delivered: true, messageId: 'msg-p1' });
    expect(stubs.count('deliverHandback')).toBe(3);
  });

  it('gives up after its attempts and leaves the hand-back pending for the sweep', async () => {
    const stubs = handbackStubs({ p1: 100 });
    const result = await run(stubs, 'actionReviewHandbackWorkflow', [{ proposalId: 'p1', maxAttempts: 3 }]);
    expect(result).toEqual({ proposalId: 'p1', delivered: false, messageId: null });
    expect(stubs.count('deliverHandback')).toBe(3);
  });
});

describe('actionReviewHandbackSweepWorkflow', () => {
  it('delivers every pending hand-back, three attempts each, and counts the ones still failing', async () => {
    const stubs = handbackStubs({ p2: 1, p3: 100 }, ['p1', 'p2', 'p3']);
    const result = await run(stubs, 'actionReviewHandbackSweepWorkflow', [{ limit: 10 }]);
    expect(result).toEqual({ pending: 3, delivered: 2, failed: 1 });
    expect(stubs.calls.listPendingHandbacks).toEqual([{ limit: 10 }]);
    // p1 once, p2 twice, p3 three times (its attempts are spent; the next sweep tries again).
    expect(stubs.count('deliverHandback')).toBe(6);
  });
});
