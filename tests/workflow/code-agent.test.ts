/**
 * The code-agent run workflow in virtual time, driven only through its public definitions (input,
 * `cancel` signal, `codeAgentStatus` query) and stub activities: cloud polling that backs off while
 * the remote status stays, the expiry at the run timeout, a cancel during polling, a refused status
 * request, and a local run that is never retried.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodeAgentRunStatus } from '../../shared/code-agent/runs.js';
import {
  CODE_AGENT_ALREADY_STARTED,
  CODE_AGENT_REFUSED,
  codeAgentCancelSignal,
  codeAgentStatusQuery,
  codeAgentWorkflowId,
  type CodeAgentRunInput,
} from '../../workflows/code-agent-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker, timerSeconds } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

type Seen = { status: CodeAgentRunStatus; remoteStatus: string; prUrl: string | null };
const running = (remoteStatus = 'queued'): Seen => ({ status: 'running', remoteStatus, prUrl: null });

/** Stubs: each poll answers the next of `polls` (the last one repeats). */
function agentStubs(polls: (Seen | Error)[], extra: Record<string, (input: never) => Promise<unknown>> = {}) {
  return recorded({
    codeAgentCloudCreate: async () => ({ status: 'running', remoteStatus: 'queued' }),
    codeAgentCloudPoll: async () => {
      const next = polls.length > 1 ? polls.shift()! : polls[0]!;
      if (next instanceof Error) throw next;
      return next;
    },
    codeAgentCloudCancel: async () => ({ cancelled: true }),
    codeAgentFinish: async ({ status }: { status: CodeAgentRunStatus }) => status,
    codeAgentMarkInterrupted: async () => 'interrupted',
    ...extra,
  });
}

const cloud = (timeoutSeconds: number): CodeAgentRunInput => ({
  runId: `car_${randomUUID()}`,
  tenant: 't1',
  adapter: 'cloud',
  timeoutSeconds,
  pollSeconds: 10,
});

async function start(stubs: ReturnType<typeof agentStubs>, input: CodeAgentRunInput) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const handle = await env.client.workflow.start('codeAgentRunWorkflow', {
    taskQueue,
    workflowId: codeAgentWorkflowId(input.runId),
    args: [input],
  });
  return { worker, handle };
}

describe('codeAgentRunWorkflow (cloud)', () => {
  it('backs off while the remote status stays, up to 8× the first delay, and expires at the timeout', async () => {
    const stubs = agentStubs([running()]);
    const input = cloud(300);
    const { worker, handle } = await start(stubs, input);
    expect(await worker.runUntil(handle.result())).toBe('expired');
    const timers = await timerSeconds(handle);
    // 10 + 20 + 40 + 80 + 80 s, then what is left of the 300 s.
    expect(timers.slice(0, 5)).toEqual([10, 20, 40, 80, 80]);
    expect(timers).toHaveLength(6);
    expect(stubs.count('codeAgentCloudCreate')).toBe(1);
    expect(stubs.count('codeAgentCloudPoll')).toBe(6);
    expect(stubs.calls.codeAgentFinish).toMatchObject([{ runId: input.runId, status: 'expired' }]);
  });

  it('polls at the first delay again when the remote status changes, and ends when the run finished', async () => {
    const stubs = agentStubs([
      running(),
      running(),
      running('working'),
      { status: 'finished', remoteStatus: 'done', prUrl: 'https://git.example/pr/7' },
    ]);
    const { worker, handle } = await start(stubs, cloud(3600));
    const live = await worker.runUntil(async () => {
      expect(await handle.result()).toBe('finished');
      return handle.query(codeAgentStatusQuery);
    });
    expect(await timerSeconds(handle)).toEqual([10, 20, 40, 10]);
    expect(live).toMatchObject({ status: 'finished', pr_url: 'https://git.example/pr/7', polls: 4 });
    expect(stubs.count('codeAgentFinish')).toBe(0);
  });

  it('keeps following through unreachable polls, then fails when the provider refuses the status request', async () => {
    const unreachable = new Error('connect ECONNREFUSED');
    const stubs = agentStubs([
      unreachable,
      unreachable,
      unreachable,
      ApplicationFailure.nonRetryable('401 unauthorized', CODE_AGENT_REFUSED),
    ]);
    const { worker, handle } = await start(stubs, cloud(3600));
    expect(await worker.runUntil(handle.result())).toBe('failed');
    // The unreachable poll is tried three times by its retry policy, then the workflow backs off.
    expect(stubs.count('codeAgentCloudPoll')).toBe(4);
    expect(await timerSeconds(handle)).toEqual([10, 20]);
    expect(stubs.calls.codeAgentFinish).toMatchObject([
      { status: 'failed', error: 'The provider refused the status request: 401 unauthorized' },
    ]);
  });

  it('a cancel signal during polling cancels the remote run at once and ends cancelled', async () => {
    const stubs = agentStubs([running()]);
    const { worker, handle } = await start(stubs, cloud(3600));
    const result = await worker.runUntil(async () => {
      await expect.poll(() => stubs.count('codeAgentCloudCreate')).toBe(1);
      await handle.signal(codeAgentCancelSignal);
      return handle.result();
    });
    expect(result).toBe('cancelled');
    expect(stubs.count('codeAgentCloudCancel')).toBe(1);
    expect(stubs.count('codeAgentCloudPoll')).toBe(0);
    expect(stubs.calls.codeAgentFinish).toMatchObject([{ status: 'cancelled', error: 'Cancelled on request.' }]);
  });
});

describe('codeAgentRunWorkflow (local)', () => {
  it('never runs the local runner twice: a run found already started ends interrupted', async () => {
    const stubs = agentStubs([running()], {
      codeAgentLocalRun: async () => {
        throw ApplicationFailure.nonRetryable('already started', CODE_AGENT_ALREADY_STARTED);
      },
    });
    const input: CodeAgentRunInput = { ...cloud(600), adapter: 'local' };
    const { worker, handle } = await start(stubs, input);
    expect(await worker.runUntil(handle.result())).toBe('interrupted');
    expect(stubs.count('codeAgentLocalRun')).toBe(1);
    expect(stubs.calls.codeAgentMarkInterrupted).toEqual([
      {
        runId: input.runId,
        reason: 'The run had already started on a worker that stopped; it was not started again.',
      },
    ]);
  });
});
