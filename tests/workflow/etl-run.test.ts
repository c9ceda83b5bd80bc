/**
 * One ETL run with stub activities: the job's single attempt and its outcome, a failed attempt
 * ending the run `interrupted` without a second attempt, and a run found already started. (A
 * heartbeat timeout is not skipped in virtual time while the activity runs, so it is not tested here.)
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ETL_RUN_ALREADY_STARTED, etlRunWorkflowId, type EtlRunInput } from '../../workflows/etl-run-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

function etlStubs(execute: () => Promise<string>) {
  return recorded({
    etlRunExecute: execute,
    etlRunMarkInterrupted: async () => 'interrupted',
  });
}

async function run(stubs: ReturnType<typeof etlStubs>) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const input: EtlRunInput = { runId: randomUUID(), tenant: 't1', timeoutSeconds: 600 };
  const handle = await env.client.workflow.start('etlRunWorkflow', {
    taskQueue,
    workflowId: etlRunWorkflowId(input.runId),
    args: [input],
  });
  return { input, result: await worker.runUntil(handle.result()) };
}

describe('etlRunWorkflow', () => {
  it("answers the job's own status, a failed job included, after one attempt", async () => {
    const stubs = etlStubs(async () => 'failed');
    const { input, result } = await run(stubs);
    expect(result).toBe('failed');
    expect(stubs.calls.etlRunExecute).toEqual([input]);
    expect(stubs.count('etlRunMarkInterrupted')).toBe(0);
  });

  it('ends interrupted, never running the job again, when its attempt fails in a retryable way', async () => {
    const stubs = etlStubs(async () => {
      throw ApplicationFailure.retryable('runner lost', 'RunnerLost');
    });
    const { input, result } = await run(stubs);
    expect(result).toBe('interrupted');
    expect(stubs.count('etlRunExecute')).toBe(1);
    expect(stubs.calls.etlRunMarkInterrupted).toEqual([
      { runId: input.runId, reason: 'The run stopped unexpectedly; it was not restarted.' },
    ]);
  });

  it('ends interrupted when the activity finds the run already started', async () => {
    const stubs = etlStubs(async () => {
      throw ApplicationFailure.nonRetryable('already started', ETL_RUN_ALREADY_STARTED);
    });
    const { input, result } = await run(stubs);
    expect(result).toBe('interrupted');
    expect(stubs.calls.etlRunMarkInterrupted).toEqual([
      { runId: input.runId, reason: 'The run had already started on a worker that stopped; it was not started again.' },
    ]);
  });
});
