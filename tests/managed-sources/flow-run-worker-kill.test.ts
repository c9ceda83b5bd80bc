/**
 * A flow run survives its worker being SIGKILLed mid-step (issue 31, item 3): the worker process
 * dies while step 4 of 5 waits on the language model; another worker takes the run over. No step
 * is lost (all five end `succeeded`) and no completed step runs again: the fake model saw each
 * earlier question once, the index holds its one document, and CREATE_INDEX (which refuses a second
 * time) did not fail. Only the step cut off by the kill ran twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { flowRunWorkflowId } from '../../workflows/flow-run-definitions.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type ChatRequest, type FakeLlm } from '../helpers/fake-llm.js';
import { recordHistory } from '../helpers/histories.js';
import { http, type Stack } from '../helpers/stack.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { managedSources, spawnStackWorker, startGitStack, tokenCredentials, until, type GitStack } from './support.js';

let env: GitStack;
let stack: Stack;
let llm: FakeLlm;
const workers: WorkerProcess[] = [];
/** While true, the step-4 question is held (never answered). */
let holdBravo = true;
const question = (r: ChatRequest) => r.messages.at(-1)?.content ?? '';
const asked = (marker: string) => llm.requests.filter((r) => question(r).includes(marker)).length;

const doc = (action: string, args: Record<string, unknown> = {}) => ({
  tool: '_document_index',
  arguments: { action, index_name: 'killkb', ...args },
});
const FLOW = {
  steps: [
    { name: 'create', ...doc('CREATE_INDEX') },
    { name: 'add', ...doc('ADD_TEXT', { text: 'Backups are kept for thirty days.', metadata: { filepath: 'b.md' } }) },
    { name: 'alpha', ...doc('ASK', { query: 'alpha: how long are backups kept' }) },
    { name: 'bravo', ...doc('ASK', { query: 'bravo: how long are backups kept' }) },
    { name: 'charlie', ...doc('ASK', { query: 'charlie: how long are backups kept' }) },
  ],
};

function worker(): WorkerProcess {
  const w = spawnStackWorker(env);
  workers.push(w);
  return w;
}

beforeAll(async () => {
  llm = await startFakeLlm((req) =>
    holdBravo && question(req).includes('bravo:') ? { hang: true } : { content: 'Thirty days [1].' },
  );
  env = await startGitStack({ dataDirPrefix: 'flow-kill-', worker: false });
  stack = env.stack;
  for (const [path, body] of [
    [
      '/api/config/llm-providers/other',
      { sub_provider: 'acme', base_url: llm.baseUrl, api_key: 'k1', model_name: 'fake-model' },
    ],
    ['/api/config/llm-providers/other/activate', { sub_provider: 'acme' }],
  ] as const) {
    const r = await http(stack.url, 'POST', path, { token: env.admin, body });
    expect(r.status, r.text).toBe(200);
  }
}, 120_000);
afterAll(async () => {
  llm?.release({ content: 'released at the end' });
  for (const w of workers) await w.stop(5_000);
  await env?.close();
  await llm?.close();
});

describe('a flow run and a worker kill', () => {
  it('loses no step and repeats no completed step', { timeout: 180_000 }, async () => {
    const first = worker();
    await first.ready;
    const repo = env.gitServer.repo('kill');
    repo.write({ 'flows/kill/flow.yaml': stringify(FLOW) });
    const { create } = managedSources(() => env, {
      name: 'kill',
      scan_types_enabled: ['flows'],
      credentials: tokenCredentials(),
    });
    const src = await create(repo, { sync_now: true });
    const pending = await http(stack.url, 'GET', `/api/flows/pending-promotions?source_id=${src}`, {
      token: env.admin,
    });
    for (const c of pending.body.data.changes as Array<{ change_id: string }>)
      expect(
        (
          await http(stack.url, 'POST', `/api/flows/pending-promotions/${src}/${c.change_id}/promote`, {
            token: env.admin,
            body: {},
          })
        ).status,
      ).toBe(200);

    const started = await http(stack.url, 'POST', '/api/flows/runs', {
      token: env.admin,
      body: { source_id: src, flow_name: 'kill' },
    });
    expect(started.status, started.text).toBe(201);
    const runId = started.body.data.run_id as string;
    await until('step 4 waiting on the model', () => (asked('bravo:') === 1 ? true : undefined));
    await first.kill();
    holdBravo = false;
    const second = worker();
    await second.ready;

    const done = await until('the run to end', async () => {
      const r = await http(stack.url, 'GET', `/api/flows/runs/${runId}`, { token: env.admin });
      return r.body.data.status === 'running' ? undefined : r.body.data;
    });
    expect(done.status, JSON.stringify(done.steps)).toBe('succeeded');
    expect(done.steps.map((s: { status: string; attempts: number }) => [s.status, s.attempts])).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
      ['succeeded', 1],
      ['succeeded', 2],
      ['succeeded', 1],
    ]);
    expect([asked('alpha:'), asked('bravo:'), asked('charlie:')]).toEqual([1, 2, 1]);
    const docs = await query<{ n: number }>(
      stack.db.url,
      `select count(*)::int as n from doc_documents d join doc_indexes i on i.id = d.index_id where i.name = 'killkb'`,
    );
    expect(docs).toEqual([{ n: 1 }]);
    const handle = stack.api.deps.temporal.workflow.getHandle(flowRunWorkflowId(runId));
    expect(await handle.result()).toBe('succeeded');
    await recordHistory('flow-run-worker-killed', handle);
  });
});
