/**
 * Flow runs over real HTTP (issue 31, item 3): a promoted flow of a managed source runs as workflow
 * `flow-run/<run_id>`; its `tool` steps call the platform's tools (here `_document_index`, whose ASK
 * calls a fake language model that holds each request, so the steps in flight are counted at the
 * fake). Steps run in order; ten consecutive `run_concurrently` steps run at most 8 at once; each
 * step's outcome is recorded; a step this backend cannot execute fails with a recorded error; a
 * run is cancelled; the refusals (unknown flow, not promoted, invalid manifest, other tenant,
 * cancel of an ended run).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { flowRunWorkflowId } from '../../workflows/flow-run-definitions.js';
import type { ChatRequest, FakeLlm } from '../helpers/fake-llm.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { recordHistory } from '../helpers/histories.js';
import { query } from '../helpers/db.js';
import type { GitRepo } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { managedSources, startGitStack, tokenCredentials, until, type GitStack } from './support.js';

let env: GitStack;
let stack: Stack;
let llm: FakeLlm;
let developer: string;
let member: string;
let outsider: string;
let src: string;
let promotedCommit: string;
let repo: GitRepo;

/** Chat requests the fake holds now, and the most it held at once. */
const fake = { holding: 0, maxHolding: 0 };
const question = (r: ChatRequest) => r.messages.at(-1)?.content ?? '';
const asked = (marker: string) => llm.requests.filter((r) => question(r).includes(marker)).length;

const ask = (name: string, q: string, concurrent = false, index = 'flowkb') => ({
  name,
  tool: '_document_index',
  arguments: { action: 'ASK', index_name: index, query: q },
  ...(concurrent ? { run_concurrently: true } : {}),
});
const listIndices = (name: string) => ({ name, tool: '_document_index', arguments: { action: 'LIST_INDICES' } });
const CONCURRENT = 10;
const FLOWS: Record<string, unknown> = {
  pipeline: {
    steps: [
      { name: 'create', tool: '_document_index', arguments: { action: 'CREATE_INDEX', index_name: 'flowkb' } },
      {
        name: 'add',
        tool: '_document_index',
        arguments: {
          action: 'ADD_TEXT',
          index_name: 'flowkb',
          text: 'Backups are kept for thirty days.',
          metadata: { filepath: 'ops/backups.md' },
        },
      },
      ...Array.from({ length: CONCURRENT }, (_, i) => ask(`ask-${i}`, `batch question ${i} about backups`, true)),
      listIndices('after'),
    ],
  },
  refused: { steps: [listIndices('first'), ask('unknown-index', 'q', false, 'gone'), listIndices('never')] },
  agentic: { steps: [{ name: 'think', agent: 'helper', prompt: 'Summarise the backups.' }, 'extract'] },
  hanging: { steps: [ask('held', 'cancel me about backups'), listIndices('later')] },
  stepless: { name: 'no steps here' },
  unpromoted: { steps: [listIndices('x')] },
};

const start = (flowName: string, token = developer, sourceId = src) =>
  http(stack.url, 'POST', '/api/flows/runs', { token, body: { source_id: sourceId, flow_name: flowName } });
const read = (runId: string, token = developer) => http(stack.url, 'GET', `/api/flows/runs/${runId}`, { token });
const cancel = (runId: string, token = developer) =>
  http(stack.url, 'POST', `/api/flows/runs/${runId}/cancel`, { token });

const ended = (runId: string) =>
  until(`run ${runId} to end`, async () => {
    const r = await read(runId);
    return r.body.data.status === 'running' ? undefined : r.body.data;
  });

type Step = { index: number; name: string; status: string; started_at: string; finished_at: string; attempts: number };

beforeAll(async () => {
  llm = await startFakeLlm((req) => {
    if (!/batch question|cancel me/.test(question(req))) return { content: 'answered' };
    fake.maxHolding = Math.max(fake.maxHolding, ++fake.holding);
    return { hang: true };
  });
  env = await startGitStack({ dataDirPrefix: 'flow-runs-' });
  stack = env.stack;
  developer = await env.idp.sign({ sub: 'dev', roles: ['developer', 'admin'] });
  member = await env.idp.sign({ sub: 'mem', roles: ['member'] });
  outsider = await env.idp.sign({ sub: 'eve', roles: ['admin'], tenant: 'elsewhere' });
  const saved = await http(stack.url, 'POST', '/api/config/llm-providers/other', {
    token: env.admin,
    body: { sub_provider: 'acme', base_url: llm.baseUrl, api_key: 'k1', model_name: 'fake-model' },
  });
  expect(saved.body.success, saved.text).toBe(true);
  const active = await http(stack.url, 'POST', '/api/config/llm-providers/other/activate', {
    token: env.admin,
    body: { sub_provider: 'acme' },
  });
  expect(active.status, active.text).toBe(200);

  repo = env.gitServer.repo('flows');
  promotedCommit = repo.write(
    Object.fromEntries(Object.entries(FLOWS).map(([n, f]) => [`flows/${n}/flow.yaml`, stringify(f)])),
  );
  const { create } = managedSources(() => env, {
    name: 'flows',
    scan_types_enabled: ['flows'],
    credentials: tokenCredentials(),
  });
  src = await create(repo, { sync_now: true });
  const pending = await http(stack.url, 'GET', `/api/flows/pending-promotions?source_id=${src}`, { token: developer });
  for (const c of pending.body.data.changes as Array<{ change_id: string; flow_name: string }>)
    if (c.flow_name !== 'unpromoted') {
      const p = await http(stack.url, 'POST', `/api/flows/pending-promotions/${src}/${c.change_id}/promote`, {
        token: developer,
        body: {},
      });
      expect(p.status, p.text).toBe(200);
    }
}, 120_000);
afterAll(async () => {
  llm?.release({ content: 'released at the end' });
  await env?.close();
  await llm?.close();
});

describe('a flow run', () => {
  it('runs steps in order, ten concurrent steps at most 8 at once, and records each outcome', async () => {
    const started = await start('pipeline');
    expect(started.status, started.text).toBe(201);
    const run = started.body.data;
    expect(run).toMatchObject({
      source_id: src,
      flow_name: 'pipeline',
      status: 'running',
      started_by: 'dev',
      step_count: CONCURRENT + 3,
      workflow_id: flowRunWorkflowId(run.run_id),
    });
    expect(run.steps.map((s: Step) => s.name)).toEqual([
      'create',
      'add',
      ...Array.from({ length: CONCURRENT }, (_, i) => `ask-${i}`),
      'after',
    ]);
    expect(run.steps[2]).toMatchObject({ kind: 'tool', run_concurrently: true });
    expect(run.steps[0]).toMatchObject({ run_concurrently: false });

    // The fake holds every batch question: eight arrive, and the two others wait for a free place.
    await until('eight questions in flight', () => (fake.holding === 8 ? true : undefined));
    const during = (await read(run.run_id)).body.data.steps as Step[];
    const asks = during.filter((s) => s.name.startsWith('ask-'));
    expect(asks.filter((s) => s.status === 'running')).toHaveLength(8);
    expect(asks.filter((s) => s.status === 'pending')).toHaveLength(2);
    expect(during.find((s) => s.name === 'after')!.status).toBe('pending');
    fake.holding = 0;
    llm.release({ content: 'Thirty days [1].' });
    await until('the last two questions in flight', () => (fake.holding === 2 ? true : undefined));
    fake.holding = 0;
    llm.release({ content: 'Thirty days [1].' });

    const done = await ended(run.run_id);
    expect(done).toMatchObject({ status: 'succeeded', error: null });
    expect(fake.maxHolding).toBe(8);
    const steps = done.steps as Array<Step & { result: Record<string, unknown> }>;
    expect(steps.every((s) => s.status === 'succeeded' && s.attempts === 1)).toBe(true);
    for (let i = 0; i < CONCURRENT; i++) expect(asked(`batch question ${i} about`)).toBe(1);
    expect(steps[2]!.result).toMatchObject({ Success: true, answer: 'Thirty days [1].', answer_type: 'generated' });
    expect(steps.at(-1)!.result).toMatchObject({ Success: true });
    // Order: each sequential step starts after the one before ended; the batch after `add`, `after` after the batch.
    const t = (s: string) => Date.parse(s);
    expect(t(steps[1]!.started_at)).toBeGreaterThanOrEqual(t(steps[0]!.finished_at));
    const batch = steps.slice(2, 2 + CONCURRENT);
    for (const s of batch) expect(t(s.started_at)).toBeGreaterThanOrEqual(t(steps[1]!.finished_at));
    const lastAsk = Math.max(...batch.map((s) => t(s.finished_at)));
    expect(t(steps.at(-1)!.started_at)).toBeGreaterThanOrEqual(lastAsk);
    // Two of the batch started only after one of the first eight ended.
    const firstEnd = Math.min(...batch.map((s) => t(s.finished_at)));
    expect(batch.filter((s) => t(s.started_at) >= firstEnd).length).toBeGreaterThanOrEqual(2);

    const handle = stack.api.deps.temporal.workflow.getHandle(flowRunWorkflowId(run.run_id));
    expect(await handle.result()).toBe('succeeded');
    await recordHistory('flow-run-concurrent-batch', handle);
  }, 120_000);

  it('fails at a refused tool call, records the refusal, and skips the rest', async () => {
    const started = await start('refused');
    expect(started.status, started.text).toBe(201);
    const done = await ended(started.body.data.run_id);
    expect(done.status).toBe('failed');
    expect(done.error).toContain('Step 2 (unknown-index) failed');
    expect(done.steps.map((s: Step) => s.status)).toEqual(['succeeded', 'failed', 'skipped']);
    expect(done.steps[1].error).toMatchObject({ error_type: 'not_found', payload: { index_name: 'gone' } });
    expect(done.steps[1].error.error).toContain('No document index named "gone"');
    expect(done.steps[2]).toMatchObject({ attempts: 0, started_at: null, result: null });
  });

  it('fails a step of a kind this backend cannot execute, with a recorded FLOW_STEP_UNSUPPORTED', async () => {
    const started = await start('agentic');
    expect(started.status, started.text).toBe(201);
    expect(started.body.data.steps.map((s: { kind: string }) => s.kind)).toEqual(['agent', 'unspecified']);
    const done = await ended(started.body.data.run_id);
    expect(done.status).toBe('failed');
    expect(done.steps[0]).toMatchObject({
      status: 'failed',
      error: { error_type: 'not_available_here', payload: { code: 'FLOW_STEP_UNSUPPORTED', kind: 'agent' } },
    });
    expect(done.steps[0].error.error).toContain('executes only `tool` steps');
    expect(done.steps[1].status).toBe('skipped');
  });

  it('cancels a running run: the running step and the rest are cancelled; a second cancel is 409', async () => {
    const started = await start('hanging');
    expect(started.status, started.text).toBe(201);
    const runId = started.body.data.run_id as string;
    await until('the held question', () => (asked('cancel me') === 1 ? true : undefined));
    expect((await cancel(runId, member)).status).toBe(403);
    expect((await cancel(runId, outsider)).status).toBe(404);
    const cancelled = await cancel(runId);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data).toMatchObject({
      status: 'cancelled',
      cancel_pending: false,
      error: 'The run was cancelled.',
    });
    expect(cancelled.body.data.steps.map((s: Step) => s.status)).toEqual(['cancelled', 'cancelled']);
    const again = await cancel(runId);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      error_type: 'conflict',
      payload: { code: 'FLOW_RUN_FINISHED', run_id: runId, status: 'cancelled' },
    });
    // The held call is let go; the run stays cancelled.
    fake.holding = 0;
    llm.release({ content: 'too late' });
    const handle = stack.api.deps.temporal.workflow.getHandle(flowRunWorkflowId(runId));
    expect(await handle.result()).toBe('cancelled');
    await recordHistory('flow-run-cancelled', handle);
    expect((await read(runId)).body.data.steps[0].status).toBe('cancelled');
  });

  it('refuses what cannot run, and other tenants see nothing', async () => {
    const unpromoted = await start('unpromoted');
    expect(unpromoted.status).toBe(409);
    expect(unpromoted.body.payload).toMatchObject({ code: 'FLOW_NOT_PROMOTED', flow_name: 'unpromoted' });
    const unknown = await start('nowhere');
    expect(unknown.status).toBe(404);
    expect(unknown.body.payload).toMatchObject({ code: 'FLOW_UNKNOWN', flow_name: 'nowhere' });
    const stepless = await start('stepless');
    expect(stepless.status).toBe(400);
    expect(stepless.body.payload).toMatchObject({
      code: 'FLOW_INVALID',
      reason: 'the flow manifest has no `steps` list',
    });
    expect((await start('pipeline', member)).status).toBe(403);
    expect(
      (await http(stack.url, 'POST', '/api/flows/runs', { body: { source_id: src, flow_name: 'x' } })).status,
    ).toBe(401);
    const foreign = await start('pipeline', outsider);
    expect(foreign.status).toBe(404);
    expect(foreign.body.payload.code).toBe('FLOW_UNKNOWN');
    const [{ n }] = await query<{ n: string }>(
      stack.db.url,
      `select count(*) as n from flow_runs where flow_name in ('unpromoted', 'stepless')`,
    );
    expect(Number(n)).toBe(0);

    const mine = await http(stack.url, 'GET', `/api/flows/runs?source_id=${src}`, { token: developer });
    expect(mine.status).toBe(200);
    expect(mine.body.data.runs.map((r: { flow_name: string }) => r.flow_name)).toEqual([
      'hanging',
      'agentic',
      'refused',
      'pipeline',
    ]);
    const failed = await http(stack.url, 'GET', '/api/flows/runs?status=failed&limit=1', { token: developer });
    expect(failed.body.data).toMatchObject({ truncated: true, runs: [{ flow_name: 'agentic', status: 'failed' }] });
    const theirs = await http(stack.url, 'GET', '/api/flows/runs', { token: outsider });
    expect(theirs.body.data).toEqual({ runs: [], truncated: false });
    const runId = mine.body.data.runs[0].run_id as string;
    expect((await read(runId, outsider)).status).toBe(404);
    expect((await read(`frun_${'0'.repeat(32)}`)).status).toBe(404);
  });

  it('runs the manifest that was promoted, not a later sync of it', async () => {
    const next = repo.write({ 'flows/agentic/flow.yaml': stringify({ steps: [listIndices('now-a-tool')] }) });
    const { sync } = managedSources(() => env, {});
    const synced = await sync(src);
    expect(synced.status, synced.text).toBe(200);
    expect(synced.body.data).toMatchObject({ commit_sha: next, outcome: 'updated_awaiting_promotion' });
    const started = await start('agentic');
    expect(started.status, started.text).toBe(201);
    expect(started.body.data).toMatchObject({ commit_sha: promotedCommit });
    expect(started.body.data.steps.map((s: Step) => s.name)).toEqual(['think', 'extract']);
    expect((await ended(started.body.data.run_id)).status).toBe('failed');
  });
});
