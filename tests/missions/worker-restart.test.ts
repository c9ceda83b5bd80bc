/**
 * A worker process killed (SIGKILL) mid-phase, while the phase prompt's model call is in flight: the
 * mission goes on with a new worker once the heartbeats time out, and the phase prompt and its reply
 * are each stored once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { missionStateQuery, missionWorkflowId } from '../../workflows/mission-definitions.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { startWorker } from '../helpers/temporal.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let llm: FakeLlm;
let stack: Stack;
let root: string;
const processes: WorkerProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'mission-restart-'));
  llm = await startFakeLlm(() => ({ hang: true }));
  stack = await startStack({
    worker: false,
    env: { PLATFORM_BLUEPRINTS_DIR: root, PLATFORM_LLM_BASE_URL: llm.baseUrl, PLATFORM_LLM_MODEL: 'fake-model' },
  });
  await query(
    stack.db.url,
    `insert into agents (id, tenant, name, instructions, tool_groups, access, source, is_editable, created_by, created_at, updated_at)
     values ('analyst', 'default', 'Analyst', 'You analyse.', '[]', '{"roles": [], "users": []}', 'api', true, 'root', now(), now())`,
  );
});
afterAll(async () => {
  for (const p of processes) await p.stop().catch(() => undefined);
  await stack?.close();
  await llm?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a mission across a worker restart', () => {
  it('continues the phase on a new worker after the first process is killed', async () => {
    // The first worker is a process of its own (the real activities, its own Temporal client for the
    // prompt activity's update-with-start on the thread), so it can die for real.
    const first = spawnWorkerProcess({
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      PLATFORM_BLUEPRINTS_DIR: root,
      PLATFORM_LLM_BASE_URL: llm.baseUrl,
      PLATFORM_LLM_MODEL: 'fake-model',
    });
    processes.push(first);
    await first.ready;
    const bp = await http(stack.url, 'POST', '/api/blueprints/', {
      body: {
        blueprint_name: 'restart',
        phases: [
          { id: 'one', name: 'One', goal: 'first', agents: ['analyst'], prompts: [{ text: 'Phase one work' }] },
          { id: 'two', name: 'Two', goal: 'second', questions: [{ id: 'ok', content: 'Looks right?' }] },
        ],
      },
    });
    expect(bp.status).toBe(201);
    const started = await http(stack.url, 'POST', '/api/projects', { body: { blueprint_name: 'restart' } });
    expect(started.status).toBe(201);
    const id = started.body.data.id as string;

    // Mid-phase: the model call of the phase prompt is in flight on the first worker.
    for (let i = 0; i < 300 && llm.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(llm.requests).toHaveLength(1);
    expect((await first.kill()).signal).toBe('SIGKILL');
    llm.respond = () => ({ content: 'phase one done' });
    stack.worker = await startWorker({ orm: stack.api.deps.orm, config: stack.config, log: stack.log });

    const handle = stack.api.deps.temporal.workflow.getHandle(missionWorkflowId(id));
    for (;;) {
      const s = await handle.query(missionStateQuery);
      if (s.waiting_state === 'IN_PROGRESS_NEEDING_INPUT') {
        expect(s).toMatchObject({ blueprint_phase: 'two', stats: { phases_done: 1, questions_open: 1 } });
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const [project] = await query(stack.db.url, 'select root_thread_id, phases_done from projects where id = $1', [id]);
    expect(project!.phases_done).toBe(1);
    const messages = await query(
      stack.db.url,
      'select role, content from conversation_messages where thread_id = $1 order by created_at',
      [project!.root_thread_id],
    );
    expect(messages).toEqual([
      { role: 'user', content: 'Phase one work' },
      { role: 'assistant', content: 'phase one done' },
    ]);
    const cancel = await http(stack.url, 'PUT', `/api/projects/${id}/status`, { body: { action: 'cancel' } });
    expect(cancel.status).toBe(200);
  });
});
