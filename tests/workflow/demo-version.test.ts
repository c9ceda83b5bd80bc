/**
 * Demo versions with stub activities, in virtual time: the validation of a version, and a run's steps
 * (a step retried up to three attempts, later steps skipped after a failure, the rest skipped when
 * the run is cancelled, the finish always recorded).
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoRunStep } from '../../workflows/demo-version-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

const plan: DemoRunStep[] = [
  { kind: 'agent', target: 'analyst', status: 'pending', detail: null },
  { kind: 'blueprint', target: 'orders', status: 'pending', detail: null },
  { kind: 'connection', target: 'warehouse', status: 'pending', detail: null },
];

/** Stubs: the blueprint step runs `blueprintStep`; the others are done at once. */
function demoStubs(blueprintStep: () => Promise<void>, started = true) {
  return recorded({
    demoVersionMarkValidating: async () => undefined,
    demoVersionValidate: async () => 'ready',
    demoRunStart: async () => ({ started, steps: plan }),
    demoRunStep: async ({ step }: { step: DemoRunStep }) => {
      if (step.kind === 'blueprint') await blueprintStep();
      return { ...step, status: 'done', detail: null };
    },
    demoRunFinish: async ({ steps, error }: { steps: DemoRunStep[]; error: string | null }) =>
      error ? 'failed' : steps.every((s) => s.status === 'done') ? 'completed' : 'incomplete',
  });
}

async function start(stubs: ReturnType<typeof demoStubs>, workflowType: string, args: unknown[]) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const handle = await env.client.workflow.start(workflowType, {
    taskQueue,
    workflowId: `demo-test/${randomUUID()}`,
    args,
  });
  return { worker, handle };
}

async function runDemo(stubs: ReturnType<typeof demoStubs>) {
  const { worker, handle } = await start(stubs, 'demoRunWorkflow', [{ runId: 'dr_1' }]);
  return worker.runUntil(handle.result());
}

/** A step check that fails `times` times, then passes. */
function failing(times: number) {
  let failures = 0;
  return async () => {
    if (failures++ < times) throw new Error('blueprint orders does not resolve');
  };
}

const finished = (stubs: ReturnType<typeof demoStubs>) =>
  stubs.calls.demoRunFinish as { steps: DemoRunStep[]; error: string | null }[];

describe('demoVersionWorkflow', () => {
  it('marks the version validating, then answers its validation', async () => {
    const stubs = demoStubs(async () => undefined);
    const { worker, handle } = await start(stubs, 'demoVersionWorkflow', [{ versionId: 'dv_1' }]);
    expect(await worker.runUntil(handle.result())).toBe('ready');
    expect(stubs.calls.demoVersionMarkValidating).toEqual([{ versionId: 'dv_1' }]);
    expect(stubs.count('demoVersionValidate')).toBe(1);
  });
});

describe('demoRunWorkflow', () => {
  it('retries a failing step check and completes when every step is done', async () => {
    const stubs = demoStubs(failing(2));
    expect(await runDemo(stubs)).toBe('completed');
    expect(stubs.count('demoRunStep')).toBe(5);
    expect(finished(stubs)[0]!.steps.map((s) => s.status)).toEqual(['done', 'done', 'done']);
  });

  it('after three failed attempts of a step, skips the later steps and ends failed', async () => {
    const stubs = demoStubs(failing(100));
    expect(await runDemo(stubs)).toBe('failed');
    expect(stubs.count('demoRunStep')).toBe(4);
    const [finish] = finished(stubs);
    expect(finish!.error).toBe('step blueprint orders failed');
    expect(finish!.steps.map((s) => [s.status, s.detail])).toEqual([
      ['done', null],
      // The detail is the activity failure's own message, not its cause's (today's behaviour).
      ['failed', 'Activity task failed'],
      ['skipped', 'an earlier step failed'],
    ]);
  });

  it('fails without running a step when the version is no longer ready', async () => {
    const stubs = demoStubs(async () => undefined, false);
    expect(await runDemo(stubs)).toBe('failed');
    expect(stubs.count('demoRunStep')).toBe(0);
    expect(stubs.count('demoRunFinish')).toBe(0);
  });

  it('a cancelled run skips the step in flight and the rest, and still records its finish', async () => {
    const stubs = demoStubs(() => Context.current().cancelled);
    const { worker, handle } = await start(stubs, 'demoRunWorkflow', [{ runId: 'dr_cancel' }]);
    const result = await worker.runUntil(async () => {
      await expect.poll(() => stubs.count('demoRunStep')).toBe(2);
      await handle.cancel();
      return handle.result();
    });
    expect(result).toBe('incomplete');
    expect(finished(stubs)[0]!.steps.map((s) => [s.status, s.detail])).toEqual([
      ['done', null],
      ['skipped', 'run cancelled'],
      ['skipped', 'run cancelled'],
    ]);
    expect(stubs.count('demoRunStep')).toBe(2);
  });
});
