/**
 * Cloud code-agent runs (workflow code-agent/<run_id>) against a fake provider on loopback: the
 * launcher settings, CODING_AGENT_UNSUPPORTED, status transitions with the PR URL, failure and
 * expiry, status readable while it runs, and an agent's start going through Action Review.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { path } from '../action-review/support.js';
import { startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { http } from '../helpers/stack.js';
import { startFakeProvider, type FakeProvider } from './fake-provider.js';

let s: CrmStack;
let fake: FakeProvider;
const REPO = 'https://git.example/acme/app';

const tool = (args: Record<string, unknown>, token = s.admin) =>
  http(s.r.stack.url, 'POST', '/api/tool_call', { token, body: { tool: 'enhancement_action', arguments: args } });
const apply = (content: string) =>
  http(s.r.stack.url, 'POST', '/api/config/setup/apply-partial', { token: s.admin, body: { content } });
const runCount = async () =>
  (await query(s.r.stack.db.url, 'select count(*)::int as n from code_agent_runs'))[0]!.n as number;

async function waitStatus(runId: string, done: (run: Record<string, any>) => boolean) {
  for (let i = 0; i < 240; i++) {
    const res = await tool({ action: 'GET_CODE_AGENT_STATUS', run_id: runId });
    expect(res.status, res.text).toBe(200);
    const run = res.body.data.result.run;
    if (done(run)) return run;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`run ${runId} never reached the expected state`);
}
const terminal = (r: Record<string, any>) =>
  ['finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted'].includes(r.status);

async function start(prompt: string) {
  const res = await tool({ action: 'START_CODE_AGENT', prompt, ticket_key: 'APP-1' });
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.result.success).toBe(true);
  return res.body.data.result.run.run_id as string;
}

beforeAll(async () => {
  fake = await startFakeProvider();
  s = await startCrmStack();
  const conn = await http(s.r.stack.url, 'POST', '/api/connections', {
    token: s.admin,
    body: {
      name: 'agent_cloud',
      type: 'api_key',
      auth_mode: 'api_key',
      config: { api_key: 'good-key', api_base_url: fake.url },
    },
  });
  expect(conn.status, conn.text).toBe(201);
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});

describe('code-agent launcher settings', () => {
  it('refuses START_CODE_AGENT with 501 CODING_AGENT_UNSUPPORTED without a usable adapter, writing nothing', async () => {
    const none = await tool({ action: 'START_CODE_AGENT', prompt: 'finish the export' });
    expect([none.status, none.body.error_type]).toEqual([501, 'not_available_here']);
    expect(none.body.payload).toMatchObject({
      code: 'CODING_AGENT_UNSUPPORTED',
      missing: expect.arrayContaining(['CODE_AGENT_RUNNER_COMMAND']),
    });
    // Cloud chosen (connection_name set) but no target repository: still unsupported, naming it.
    expect((await apply('enhancements:\n  code_agent:\n    connection_name: agent_cloud\n')).status).toBe(200);
    const noRepo = await tool({ action: 'START_CODE_AGENT', prompt: 'finish the export' });
    expect([noRepo.status, noRepo.body.error_type]).toEqual([501, 'not_available_here']);
    expect(noRepo.body.payload).toMatchObject({
      code: 'CODING_AGENT_UNSUPPORTED',
      missing: ['enhancements.code_agent.target_repo_url'],
    });
    // Explicit local without CODE_AGENT_RUNNER_COMMAND.
    expect((await apply('enhancements:\n  code_agent:\n    adapter: local\n')).status).toBe(200);
    const noRunner = await tool({ action: 'START_CODE_AGENT', prompt: 'finish the export' });
    expect(noRunner.body.payload).toMatchObject({
      code: 'CODING_AGENT_UNSUPPORTED',
      missing: ['CODE_AGENT_RUNNER_COMMAND'],
    });
    expect(await runCount()).toBe(0);
    expect(fake.creates).toEqual([]);
    const unknown = await tool({ action: 'GET_CODE_AGENT_STATUS', run_id: 'car_000000000000000000000000' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_type).toBe('not_found');
    const bad = await tool({ action: 'START_CODE_AGENT', prompt: '' });
    expect(bad.status).toBe(400);
  });
});

describe('cloud runs', () => {
  beforeAll(async () => {
    const res = await apply(
      `enhancements:\n  code_agent:\n    adapter: auto\n    connection_name: agent_cloud\n    target_repo_url: ${REPO}\n    target_base_ref: develop\n    poll_interval_seconds: 1\n`,
    );
    expect(res.status, res.text).toBe(200);
  });

  it('creates one remote run with the idempotency key, follows it to FINISHED and records the PR URL', async () => {
    const runId = await start('please finish the export header');
    const run = await waitStatus(runId, terminal);
    expect(run).toMatchObject({
      status: 'finished',
      adapter: 'cloud',
      remote_status: 'FINISHED',
      pr_url: expect.stringMatching(/^https:\/\/git\.example\/acme\/app\/pull\//),
      branch: expect.stringMatching(/^agent\//),
      summary: 'Changed the export header.',
      target_base_ref: 'develop',
      ticket_key: 'APP-1',
      error: null,
    });
    expect(run.steps.map((x: { step: string }) => x.step)).toEqual([
      'requested',
      'remote_run_created',
      'status:RUNNING',
      'status:FINISHED',
      'pull_request',
    ]);
    const mine = fake.runs.filter((r) => r.key === `code-agent-${runId}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toMatchObject({
      prompt: { text: 'please finish the export header' },
      repos: [{ url: REPO, startingRef: 'develop' }],
      autoCreatePR: true,
    });
    const handle = s.r.stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(runId));
    expect(await handle.result()).toBe('finished');
    await recordHistory('code-agent-cloud-finished', handle);
  });

  it('shows status and steps while the run goes on (row and workflow query), then the outcome', async () => {
    const runId = await start('hold until released');
    // The row is written by the poll activity, the query by the workflow once the poll answers: wait for both.
    const running = await waitStatus(
      runId,
      (r) => r.status === 'running' && r.live?.polls >= 1 && r.live?.status === 'running',
    );
    expect(running).toMatchObject({ remote_status: 'RUNNING', pr_url: null, finished_at: null });
    expect(running.live).toMatchObject({ status: 'running', remote_status: 'RUNNING' });
    fake.release(fake.runs.find((r) => r.key === `code-agent-${runId}`)!.runId);
    const done = await waitStatus(runId, terminal);
    expect(done).toMatchObject({ status: 'finished', pr_url: expect.any(String), live: null });
  });

  it('ends failed when the provider reports ERROR, and expired when it reports EXPIRED', async () => {
    const failed = await waitStatus(await start('this one will fail'), terminal);
    expect(failed).toMatchObject({ status: 'failed', remote_status: 'ERROR', pr_url: null });
    expect(failed.error).toContain('ERROR');
    const expiredId = await start('this one will expire');
    const expired = await waitStatus(expiredId, terminal);
    expect(expired).toMatchObject({ status: 'expired', remote_status: 'EXPIRED' });
    const handle = s.r.stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(expiredId));
    expect(await handle.result()).toBe('expired');
    await recordHistory('code-agent-cloud-expired', handle);
  });

  it('ends failed when the provider refuses the key, without retrying the create', async () => {
    const patched = await http(s.r.stack.url, 'PATCH', '/api/connections/agent_cloud', {
      token: s.admin,
      body: { config: { api_key: 'revoked-key' } },
    });
    expect(patched.status).toBe(200);
    const before = fake.creates.length;
    const run = await waitStatus(await start('finish with a revoked key'), terminal);
    expect(run.status).toBe('failed');
    expect(run.error).toContain('401');
    expect(fake.creates.length - before).toBe(0); // refused at the door: nothing created
    await http(s.r.stack.url, 'PATCH', '/api/connections/agent_cloud', {
      token: s.admin,
      body: { config: { api_key: 'good-key' } },
    });
  });

  it('an approved code_agent.start.v1 proposal starts the run when executed, once', async () => {
    const created = await http(s.r.stack.url, 'POST', '/api/action-review/proposals', {
      token: s.r.tokens.rita,
      body: {
        action_type: 'code_agent.start.v1',
        payload: { prompt: 'finish from a proposal', ticket_key: 'APP-2' },
        expected_effect: 'A coding agent opens a pull request.',
      },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.proposal_id as string;
    expect((await http(s.r.stack.url, 'POST', path(id, '/approve'), { token: s.r.tokens.ravi, body: {} })).status).toBe(
      200,
    );
    const before = await runCount();
    const first = await http(s.r.stack.url, 'POST', path(id, '/execute'), { token: s.r.tokens.ravi });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ final_status: 'executed' });
    const runId = first.body.execution_result.run_id as string;
    expect(first.body.execution_result).toMatchObject({ adapter: 'cloud', status: 'queued' });
    const again = await http(s.r.stack.url, 'POST', path(id, '/execute'), { token: s.r.tokens.ravi });
    expect(again.body).toMatchObject({ final_status: 'executed', replayed: true });
    expect(await runCount()).toBe(before + 1);
    expect(await waitStatus(runId, terminal)).toMatchObject({ status: 'finished', ticket_key: 'APP-2' });
  });

  it("an agent's start raises an Action Review proposal instead of starting a run", async () => {
    const agent = await s.r.agent('bot-code', 'thread-code');
    const before = await runCount();
    const res = await tool({ action: 'START_CODE_AGENT', prompt: 'finish as an agent' }, agent);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toMatchObject({
      success: true,
      status: 'pending_review',
      proposal: { action_type: 'code_agent.start.v1', status: 'requested' },
    });
    expect(await runCount()).toBe(before);
  });
});
