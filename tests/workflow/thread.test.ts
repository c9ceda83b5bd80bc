/**
 * The agent thread on its own: each message is an Update answered by a turn of stub model and tool
 * activities. Updates run on the shared dev server (awaiting an Update does not skip time); the idle
 * timeout runs in virtual time on the time-skipping server.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  postMessageUpdate,
  threadWorkflowId,
  turnsQuery,
  type LlmFailureView,
  type PostMessageInput,
  type ThreadWorkflowInput,
} from '../../workflows/thread-definitions.js';
import { installQuietRuntime, startTimeSkipping } from '../helpers/temporal.js';
import { gate, recorded, stubWorker, timerSeconds } from './support.js';

let dev: TestWorkflowEnvironment;
let skipping: TestWorkflowEnvironment;

beforeAll(async () => {
  installQuietRuntime();
  dev = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
  skipping = await startTimeSkipping();
});
afterAll(async () => {
  await dev?.teardown();
  await skipping?.teardown();
});

interface ModelInput {
  turnId: string;
  round: number;
  toolsDisabled: boolean;
}
type ModelStep = { content: string | null; messageId: string; toolCalls: { id: string; name: string }[] };

/** Stubs: the model answers each round with `step`; the tool calls and user messages are recorded. */
function threadStubs(step: (input: ModelInput) => Promise<ModelStep>) {
  return recorded({
    recordUserMessage: async () => undefined,
    callModel: step,
    runToolCall: async () => undefined,
  });
}

const answer = (content: string): ModelStep => ({ content, messageId: `m-${content}`, toolCalls: [] });
const toolCall: ModelStep = { content: null, messageId: 'm-tool', toolCalls: [{ id: 'c1', name: 'lookup' }] };
const message = (id: string, content = 'How many orders shipped?'): PostMessageInput => ({
  messageId: id,
  content,
  authorKind: 'person',
  authorId: 'rita',
});

async function withThread(
  env: TestWorkflowEnvironment,
  stubs: ReturnType<typeof threadStubs>,
  body: (handle: Awaited<ReturnType<typeof startThread>>) => Promise<void>,
) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  await worker.runUntil(async () => body(await startThread(env, taskQueue)));
}

async function startThread(env: TestWorkflowEnvironment, taskQueue: string) {
  const threadId = `th_${randomUUID()}`;
  const input: ThreadWorkflowInput = { threadId, tenant: 't1', agentId: 'ag_1' };
  return env.client.workflow.start('threadWorkflow', {
    taskQueue,
    workflowId: threadWorkflowId(threadId),
    args: [input],
  });
}

describe('threadWorkflow turns (dev server)', () => {
  it('a message runs a turn: the tool the model asked for, then its answer', async () => {
    const stubs = threadStubs(async ({ round }) => (round === 0 ? toolCall : answer('42 orders')));
    await withThread(dev, stubs, async (handle) => {
      const reply = await handle.executeUpdate(postMessageUpdate, { args: [message('u1')] });
      expect(reply).toEqual({ ok: true, reply: '42 orders', messageId: 'm-42 orders', toolCalls: 1 });
      expect(await handle.query(turnsQuery)).toEqual({ turns: 1, busy: false });
      expect(stubs.count('recordUserMessage')).toBe(1);
      expect(stubs.count('callModel')).toBe(2);
      expect(stubs.count('runToolCall')).toBe(1);
      await handle.terminate('test done');
    });
  });

  it('refuses an empty message or one without an id: no activity runs, no turn is counted', async () => {
    const stubs = threadStubs(async () => answer('unused'));
    await withThread(dev, stubs, async (handle) => {
      const empty = await handle
        .executeUpdate(postMessageUpdate, { args: [message('u1', '   ')] })
        .catch((err: unknown) => err);
      expect(empty).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((empty as WorkflowUpdateFailedError).cause?.message).toBe('The message is empty.');
      const noId = await handle.executeUpdate(postMessageUpdate, { args: [message('')] }).catch((err: unknown) => err);
      expect((noId as WorkflowUpdateFailedError).cause?.message).toBe('The message has no id.');
      expect(await handle.query(turnsQuery)).toEqual({ turns: 0, busy: false });
      const accepted = (await handle.fetchHistory()).events!.filter(
        (e) => e.workflowExecutionUpdateAcceptedEventAttributes,
      );
      expect(accepted).toHaveLength(0);
      expect(stubs.count('recordUserMessage')).toBe(0);
      expect(stubs.count('callModel')).toBe(0);
      await handle.terminate('test done');
    });
  });

  it('runs concurrent messages one turn at a time', async () => {
    const release = gate();
    const stubs = threadStubs(async ({ turnId }) => {
      if (turnId === 'u1') await release.opened;
      return answer(`re-${turnId}`);
    });
    await withThread(dev, stubs, async (handle) => {
      const first = await handle.startUpdate(postMessageUpdate, {
        args: [message('u1')],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      await expect.poll(() => stubs.count('callModel')).toBe(1);
      const second = await handle.startUpdate(postMessageUpdate, {
        args: [message('u2')],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      // The second turn waits for the first: its message is not even recorded yet.
      expect(await handle.query(turnsQuery)).toEqual({ turns: 0, busy: true });
      expect(stubs.count('recordUserMessage')).toBe(1);
      release.open();
      expect(await first.result()).toMatchObject({ ok: true, reply: 're-u1' });
      expect(await second.result()).toMatchObject({ ok: true, reply: 're-u2' });
      expect(stubs.calls.recordUserMessage).toMatchObject([{ messageId: 'u1' }, { messageId: 'u2' }]);
      expect(await handle.query(turnsQuery)).toEqual({ turns: 2, busy: false });
      await handle.terminate('test done');
    });
  });

  it('answers a classified model failure without failing the thread; the next message is answered', async () => {
    const failure: LlmFailureView = { kind: 'rate_limited', message: 'Try later.', action: 'retry', error_id: 'e1' };
    const stubs = threadStubs(async ({ turnId }) => {
      if (turnId === 'u1')
        throw ApplicationFailure.create({ type: 'LlmError', nonRetryable: true, details: [failure] });
      return answer('back again');
    });
    await withThread(dev, stubs, async (handle) => {
      expect(await handle.executeUpdate(postMessageUpdate, { args: [message('u1')] })).toEqual({
        ok: false,
        llmFailure: failure,
      });
      expect(await handle.executeUpdate(postMessageUpdate, { args: [message('u2')] })).toMatchObject({
        ok: true,
        reply: 'back again',
      });
      expect(stubs.count('callModel')).toBe(2);
      expect(await handle.query(turnsQuery)).toEqual({ turns: 2, busy: false });
      await handle.terminate('test done');
    });
  });

  it('after six tool rounds the last round disables tools and the agent must answer', async () => {
    const stubs = threadStubs(async ({ toolsDisabled }) =>
      toolsDisabled ? { ...toolCall, content: 'enough' } : toolCall,
    );
    await withThread(dev, stubs, async (handle) => {
      expect(await handle.executeUpdate(postMessageUpdate, { args: [message('u1')] })).toMatchObject({
        ok: true,
        reply: 'enough',
        toolCalls: 6,
      });
      expect(stubs.count('callModel')).toBe(7);
      expect(stubs.count('runToolCall')).toBe(6);
      expect((stubs.calls.callModel as ModelInput[]).map((c) => c.toolsDisabled)).toEqual([
        ...Array<boolean>(6).fill(false),
        true,
      ]);
      await handle.terminate('test done');
    });
  });
});

describe('threadWorkflow idle timeout (virtual time)', () => {
  it('closes after a day without messages, running no activity', async () => {
    const stubs = threadStubs(async () => answer('unused'));
    await withThread(skipping, stubs, async (handle) => {
      await handle.result();
      expect(await timerSeconds(handle)).toEqual([24 * 3600]);
      expect(stubs.count('recordUserMessage')).toBe(0);
      expect(stubs.count('callModel')).toBe(0);
    });
  });
});
