/**
 * A flow run with stub activities: steps in order, a batch of sixteen concurrent steps held in
 * flight until eight are running (never more: the cap), a failed step that starts no further one,
 * and a step whose attempts all fail recorded as abandoned. (A worker kill is tested for real in
 * tests/managed-sources/flow-run-worker-kill.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { flowRunWorkflowId, type FlowRunInput } from '../../workflows/flow-run-definitions.js';
import { recorded, runStubbed, useTimeSkipping } from './support.js';

const time = useTimeSkipping();

type StepInput = { runId: string; stepIndex: number };
const steps = (flags: boolean[]) => flags.map((runConcurrently, index) => ({ index, runConcurrently }));

function flowStubs(step: (input: StepInput) => Promise<string>) {
  return recorded({
    flowRunStep: step,
    flowRunStepAbandoned: async () => 'failed',
    flowRunFinish: async (input: { status: string }) => input.status,
  });
}

async function run(stubs: ReturnType<typeof flowStubs>, flags: boolean[]) {
  const input: FlowRunInput = { runId: randomUUID(), tenant: 't1', steps: steps(flags) };
  const { result } = await runStubbed(time.env, stubs.activities, 'flowRunWorkflow', {
    workflowId: flowRunWorkflowId(input.runId),
    args: [input],
  });
  return { input, result };
}

describe('flowRunWorkflow', () => {
  it('runs steps in order and a concurrent batch at most 8 at once', async () => {
    // Step 0, then sixteen concurrent steps, then step 17. The batch's steps wait until eight are in
    // flight, then all eight end together: with the cap, exactly two such rounds.
    const flags = [false, ...Array<boolean>(16).fill(true), false];
    const held: Array<() => void> = [];
    let inFlight = 0;
    let most = 0;
    let rounds = 0;
    const stubs = flowStubs(async ({ stepIndex }) => {
      if (stepIndex === 0 || stepIndex === 17) return 'succeeded';
      most = Math.max(most, ++inFlight);
      const done = new Promise<void>((resolve) => held.push(resolve));
      if (held.length === 8) {
        rounds++;
        for (const release of held.splice(0)) release();
      }
      await done;
      inFlight--;
      return 'succeeded';
    });
    const { input, result } = await run(stubs, flags);
    expect(result).toBe('succeeded');
    expect(most).toBe(8);
    expect(rounds).toBe(2);
    const order = (stubs.calls.flowRunStep as StepInput[]).map((c) => c.stepIndex);
    expect(order[0]).toBe(0);
    expect(order.at(-1)).toBe(17);
    expect([...order].sort((a, b) => a - b)).toEqual(flags.map((_, i) => i));
    expect(stubs.calls.flowRunFinish).toEqual([{ runId: input.runId, status: 'succeeded' }]);
  });

  it('starts no step after a failed one and ends failed', async () => {
    const stubs = flowStubs(async ({ stepIndex }) => (stepIndex === 1 ? 'failed' : 'succeeded'));
    const { input, result } = await run(stubs, [false, false, false]);
    expect(result).toBe('failed');
    expect((stubs.calls.flowRunStep as StepInput[]).map((c) => c.stepIndex)).toEqual([0, 1]);
    expect(stubs.calls.flowRunFinish).toEqual([{ runId: input.runId, status: 'failed' }]);
  });

  it('records a step whose attempts all failed as abandoned (failed)', async () => {
    const stubs = flowStubs(async () => {
      throw ApplicationFailure.nonRetryable('the worker lost the step', 'StepLost');
    });
    const { input, result } = await run(stubs, [false, false]);
    expect(result).toBe('failed');
    expect(stubs.count('flowRunStep')).toBe(1);
    expect(stubs.calls.flowRunStepAbandoned).toEqual([
      { runId: input.runId, stepIndex: 0, reason: 'the worker lost the step' },
    ]);
    expect(stubs.calls.flowRunFinish).toEqual([{ runId: input.runId, status: 'failed' }]);
  });
});
