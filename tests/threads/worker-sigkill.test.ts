/**
 * A worker process killed (SIGKILL) while the model is answering: the turn resumes on another
 * worker once the heartbeat times out, and the conversation holds each message once.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startThread } from '../../shared/threads/service.js';
import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { startWorker } from '../helpers/temporal.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let llm: FakeLlm;
let stack: Stack;
const processes: WorkerProcess[] = [];
const owner: Principal = {
  kind: 'person',
  id: 'local-admin',
  tenant: 'default',
  displayName: 'Local admin',
  roles: ['admin'],
  permissions: permissionsFor(['admin']),
  credential: 'idp_jwt',
};

beforeAll(async () => {
  llm = await startFakeLlm();
  stack = await startStack({
    worker: false,
    env: { PLATFORM_LLM_BASE_URL: llm.baseUrl, PLATFORM_LLM_MODEL: 'fake-model' },
  });
});
afterAll(async () => {
  for (const p of processes) await p.stop().catch(() => undefined);
  await stack?.close();
  await llm?.close();
});

describe('a worker killed mid-turn', () => {
  it('loses no message: the turn finishes on another worker, each message stored once', async () => {
    const worker = spawnWorkerProcess({
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      PLATFORM_LLM_BASE_URL: llm.baseUrl,
      PLATFORM_LLM_MODEL: 'fake-model',
    });
    processes.push(worker);
    await worker.ready;

    llm.respond = () => ({ hang: true });
    const pending = startThread(stack.api.deps, stack.api.deps.orm.em.fork(), owner, {
      initialPrompt: 'do not lose me',
      origin: 'mcp_origin',
    });
    for (let i = 0; i < 200 && llm.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(llm.requests).toHaveLength(1);

    expect((await worker.kill()).signal).toBe('SIGKILL');
    llm.respond = () => ({ content: 'answered by the second worker' });
    stack.worker = await startWorker({ orm: stack.api.deps.orm, config: stack.config, log: stack.log });

    const { thread, turn } = await pending;
    expect(turn.reply).toBe('answered by the second worker');
    expect(llm.requests).toHaveLength(2);
    const rows = await query(
      stack.db.url,
      'select role, content from conversation_messages where thread_id = $1 order by created_at',
      [thread.id],
    );
    expect(rows).toEqual([
      { role: 'user', content: 'do not lose me' },
      { role: 'assistant', content: 'answered by the second worker' },
    ]);
    const history = await stack.api.deps.temporal.workflow.getHandle(`thread/${thread.id}`).fetchHistory();
    // One model call scheduled; its second attempt (after the heartbeat timeout) is the one that answered.
    const scheduled = history.events!.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel',
    );
    expect(scheduled).toHaveLength(1);
    const started = history.events!.find(
      (e) =>
        e.activityTaskStartedEventAttributes &&
        e.activityTaskStartedEventAttributes.scheduledEventId?.toString() === scheduled[0]!.eventId?.toString(),
    );
    expect(started!.activityTaskStartedEventAttributes!.attempt).toBe(2);
    // TIMEOUT_TYPE_HEARTBEAT: the dead worker stopped heartbeating.
    expect(started!.activityTaskStartedEventAttributes!.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(4);
  });
});
