/**
 * The agent-CLI code-agent backend (enhancements.coding_agent.backend = agent_cli) against a real Git
 * smart-HTTP server and a fake Git host API on loopback, with a fake agent CLI (a node script): per-run
 * worktree cloned with the git connection's token, the CLI run in it with the model credential, the
 * branch pushed, the pull request opened and recorded, `no_changes`, the worktree removed after
 * success, failure, timeout and cancel; CANCEL_CODE_AGENT for CLI and cloud runs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { startGitServer, type GitRepo, type GitServer } from '../helpers/git-server.js';
import { recordHistory } from '../helpers/histories.js';
import { http } from '../helpers/stack.js';
import { startFakeProvider, type FakeProvider } from './fake-provider.js';

/** The fake agent CLI: reads the prompt from stdin and acts on words in it. */
const CLI = `
const fs = require('node:fs');
let prompt = '';
process.stdin.on('data', (c) => (prompt += c));
process.stdin.on('end', () => {
  console.log('cwd=' + process.cwd());
  console.log('branch=' + process.env.CODE_AGENT_BRANCH);
  console.log('model_key_ok=' + (process.env.CODE_AGENT_API_KEY === 'model-key'));
  console.log('model_base=' + process.env.CODE_AGENT_API_BASE_URL);
  console.log('server_secret=' + (process.env.CODE_AGENT_TEST_SERVER_SECRET ?? 'absent'));
  if (prompt.includes('nothing')) return;
  if (prompt.includes('fail')) {
    fs.writeFileSync('README.md', 'half done\\n');
    console.error('the agent gave up');
    process.exit(4);
  }
  if (prompt.includes('hang')) {
    console.log('pid=' + process.pid);
    setInterval(() => undefined, 1000);
    return;
  }
  fs.writeFileSync('README.md', 'Edited by the agent: ' + prompt.trim() + '\\n');
  fs.mkdirSync('src', { recursive: true });
  fs.writeFileSync('src/added.txt', 'new file\\n');
  fs.rmSync('OLD.md');
});
`;

interface PullRequestCall {
  url: string;
  auth: string | undefined;
  body: { title: string; head: string; base: string; body: string };
}

let s: CrmStack;
let gitServer: GitServer;
let repo: GitRepo;
let forge: { url: string; calls: PullRequestCall[]; server: Server };
let provider: FakeProvider;
let dir: string;
let worktreeRoot: string;

const tool = (args: Record<string, unknown>) =>
  http(s.r.stack.url, 'POST', '/api/tool_call', {
    token: s.admin,
    body: { tool: 'enhancement_action', arguments: args },
  });
const apply = async (content: string) => {
  const res = await http(s.r.stack.url, 'POST', '/api/config/setup/apply-partial', {
    token: s.admin,
    body: { content },
  });
  expect(res.status, res.text).toBe(200);
};
const runCount = async () =>
  (await query(s.r.stack.db.url, 'select count(*)::int as n from code_agent_runs'))[0]!.n as number;
const terminal = (r: Record<string, any>) =>
  ['finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted'].includes(r.status);

async function waitStatus(runId: string, done: (run: Record<string, any>) => boolean) {
  for (let i = 0; i < 480; i++) {
    const res = await tool({ action: 'GET_CODE_AGENT_STATUS', run_id: runId });
    expect(res.status, res.text).toBe(200);
    const run = res.body.data.result.run;
    if (done(run)) return run;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`run ${runId} never reached the expected state`);
}

async function start(prompt: string, ticket?: string) {
  const res = await tool({ action: 'START_CODE_AGENT', prompt, ...(ticket ? { ticket_key: ticket } : {}) });
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.result.success, res.text).toBe(true);
  return res.body.data.result.run.run_id as string;
}

const serverGit = (...args: string[]) =>
  execFileSync('git', ['--git-dir', path.join(gitServer.root, 'acme/widgets.git'), ...args])
    .toString()
    .trim();
const remoteBranches = () => serverGit('for-each-ref', '--format=%(refname)', 'refs/heads/').split('\n');
const handleOf = (runId: string) => s.r.stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(runId));
const gone = (pid: number) =>
  !existsSync(`/proc/${pid}/stat`) || /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

async function startForge() {
  const calls: PullRequestCall[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/repos/acme/widgets/pulls') {
        calls.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(raw) });
        res.statusCode = 201;
        return void res.end(
          JSON.stringify({ html_url: `https://forge.test/acme/widgets/pull/${calls.length}`, number: calls.length }),
        );
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, server };
}

const connection = (name: string, apiKey: string, base?: string) =>
  http(s.r.stack.url, 'POST', '/api/connections', {
    token: s.admin,
    body: {
      name,
      type: 'api_key',
      auth_mode: 'api_key',
      config: { api_key: apiKey, ...(base ? { api_base_url: base } : {}) },
    },
  });

const cliSettings = (extra = '') =>
  `enhancements:\n  coding_agent:\n    backend: agent_cli\n    agent_cli:\n      enabled: true\n      target_repo_url: ${repo.url}\n      target_base_ref: main\n      connection_name: model\n      git_connection_name: forge\n      worktree_root: ${worktreeRoot}\n      forge_api_url: ${forge.url}\n${extra}`;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-cli-'));
  worktreeRoot = path.join(dir, 'worktrees');
  const script = path.join(dir, 'fake-cli.cjs');
  writeFileSync(script, CLI);
  gitServer = await startGitServer({ username: 'x-access-token', password: 'forge-token' });
  repo = gitServer.repo('acme/widgets');
  repo.write({ 'README.md': 'widgets\n', 'OLD.md': 'to be removed\n' });
  forge = await startForge();
  provider = await startFakeProvider();
  process.env.CODE_AGENT_TEST_SERVER_SECRET = 'server-only-secret';
  s = await startCrmStack({ CODE_AGENT_CLI_COMMAND: `${process.execPath} ${script}` });
  expect((await connection('model', 'model-key', 'http://127.0.0.1:9')).status).toBe(201);
  expect((await connection('forge', 'forge-token')).status).toBe(201);
  expect((await connection('agent_cloud', 'good-key', provider.url)).status).toBe(201);
});
afterAll(async () => {
  delete process.env.CODE_AGENT_TEST_SERVER_SECRET;
  await s?.close();
  await gitServer?.close();
  await provider?.close();
  await new Promise<void>((r) => (forge ? forge.server.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

describe('agent-CLI backend settings', () => {
  it('refuses START_CODE_AGENT with 501 CODING_AGENT_UNSUPPORTED naming what is missing, writing nothing', async () => {
    await apply('enhancements:\n  coding_agent:\n    backend: agent_cli\n');
    const off = await tool({ action: 'START_CODE_AGENT', prompt: 'change the readme' });
    expect([off.status, off.body.error_type]).toEqual([501, 'not_available_here']);
    expect(off.body.payload).toMatchObject({
      code: 'CODING_AGENT_UNSUPPORTED',
      missing: [
        'enhancements.coding_agent.agent_cli.enabled',
        'enhancements.coding_agent.agent_cli.target_repo_url',
        'enhancements.coding_agent.agent_cli.connection_name',
        'enhancements.coding_agent.agent_cli.git_connection_name',
      ],
    });
    // Every setting present but the git connection names nothing saved.
    await apply(cliSettings().replace('git_connection_name: forge', 'git_connection_name: nobody'));
    const noConn = await tool({ action: 'START_CODE_AGENT', prompt: 'change the readme' });
    expect([noConn.status, noConn.body.error_type]).toEqual([501, 'not_available_here']);
    expect(noConn.body.payload).toMatchObject({
      code: 'CODING_AGENT_UNSUPPORTED',
      missing: ['enhancements.coding_agent.agent_cli.git_connection_name'],
    });
    expect(await runCount()).toBe(0);
    expect(existsSync(worktreeRoot) ? execFileSync('ls', [worktreeRoot]).toString() : '').toBe('');
  });
});

describe('agent-CLI runs', () => {
  beforeAll(async () => {
    await apply(cliSettings('  code_agent:\n    run_timeout_seconds: 60\n'));
  });

  it('clones into a per-run worktree, runs the CLI, pushes the branch, opens the PR and removes the worktree', async () => {
    const base = repo.head();
    const runId = await start('make the readme friendlier', 'WID-7');
    const run = await waitStatus(runId, terminal);
    expect(run, JSON.stringify(run)).toMatchObject({
      adapter: 'agent_cli',
      status: 'finished',
      outcome: 'pull_request',
      pr_url: 'https://forge.test/acme/widgets/pull/1',
      branch: `code-agent/${runId}`,
      exit_code: 0,
      error: null,
      target_repo_url: repo.url,
    });
    const text = run.output.text as string;
    expect(text).toContain(`cwd=${path.join(worktreeRoot, runId)}`);
    expect(text).toContain(`branch=code-agent/${runId}`);
    expect(text).toContain('model_key_ok=true');
    expect(text).toContain('model_base=http://127.0.0.1:9');
    expect(text).toContain('server_secret=absent');
    expect(run.steps.map((x: { step: string }) => x.step)).toEqual([
      'requested',
      'worktree_cloning',
      'agent_cli_started',
      'agent_cli_finished',
      'committed',
      'pushed',
      'worktree_removed',
      'pull_request',
    ]);
    // The branch is on the server, one commit on top of the base, by the platform bot.
    expect(remoteBranches()).toContain(`refs/heads/code-agent/${runId}`);
    const ref = `refs/heads/code-agent/${runId}`;
    expect(serverGit('rev-parse', `${ref}^`)).toBe(base);
    expect(serverGit('show', `${ref}:README.md`)).toBe('Edited by the agent: make the readme friendlier');
    expect(serverGit('show', `${ref}:src/added.txt`)).toBe('new file');
    expect(serverGit('ls-tree', '--name-only', ref).split('\n')).not.toContain('OLD.md');
    expect(serverGit('log', '-1', '--format=%an <%ae>|%s', ref)).toBe(
      'Platform Code Agent <code-agent@platform.invalid>|Code agent: WID-7',
    );
    expect(serverGit('rev-parse', 'refs/heads/main')).toBe(base);
    // The pull request: head and base, with the git connection's token.
    expect(forge.calls).toHaveLength(1);
    expect(forge.calls[0]).toMatchObject({
      auth: 'Bearer forge-token',
      body: { head: `code-agent/${runId}`, base: 'main', title: 'Code agent: WID-7' },
    });
    expect(forge.calls[0]!.body.body).toContain('make the readme friendlier');
    expect(existsSync(path.join(worktreeRoot, runId))).toBe(false);
    const handle = handleOf(runId);
    expect(await handle.result()).toBe('finished');
    await recordHistory('code-agent-cli-pull-request', handle);
  });

  it('ends no_changes without a push or a pull request when the CLI changes nothing', async () => {
    const before = remoteBranches();
    const runId = await start('do nothing at all');
    const run = await waitStatus(runId, terminal);
    expect(run).toMatchObject({ status: 'finished', outcome: 'no_changes', pr_url: null, exit_code: 0 });
    expect(run.steps.map((x: { step: string }) => x.step)).toContain('no_changes');
    expect(remoteBranches()).toEqual(before);
    expect(forge.calls).toHaveLength(1);
    expect(existsSync(path.join(worktreeRoot, runId))).toBe(false);
  });

  it('records a failing CLI as failed, pushes nothing and removes the worktree', async () => {
    const before = remoteBranches();
    const runId = await start('this will fail');
    const run = await waitStatus(runId, terminal);
    expect(run).toMatchObject({ status: 'failed', exit_code: 4, outcome: null, pr_url: null });
    expect(run.error).toContain('code 4');
    expect(run.output.text).toContain('the agent gave up');
    expect(remoteBranches()).toEqual(before);
    expect(forge.calls).toHaveLength(1);
    expect(existsSync(path.join(worktreeRoot, runId))).toBe(false);
    expect(await handleOf(runId).result()).toBe('failed');
  });

  it('cancels a running CLI run: the process is killed, the run ends cancelled, the worktree is removed', async () => {
    const runId = await start('hang until cancelled');
    const running = await waitStatus(runId, (r) => /pid=\d+/.test(r.output?.text ?? ''));
    const pid = Number(/pid=(\d+)/.exec(running.output.text as string)![1]);
    expect(gone(pid)).toBe(false);
    expect(existsSync(path.join(worktreeRoot, runId))).toBe(true);
    const cancel = await tool({ action: 'CANCEL_CODE_AGENT', run_id: runId });
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body.data.result).toMatchObject({ success: true, cancel_requested: true });
    const run = await waitStatus(runId, terminal);
    expect(run).toMatchObject({ status: 'cancelled', pr_url: null });
    expect(run.error).toContain('Cancelled on request');
    for (let i = 0; i < 40 && !gone(pid); i++) await new Promise((r) => setTimeout(r, 250));
    expect(gone(pid)).toBe(true);
    const handle = handleOf(runId);
    expect(await handle.result()).toBe('cancelled');
    expect(existsSync(path.join(worktreeRoot, runId))).toBe(false);
    await recordHistory('code-agent-cli-cancelled', handle);
    // An ended run cannot be cancelled; an unknown one is not found.
    const again = await tool({ action: 'CANCEL_CODE_AGENT', run_id: runId });
    expect(again.status).toBe(409);
    expect(again.body.error_type).toBe('conflict');
    expect(again.body.payload).toMatchObject({ reason: 'code_agent_run_not_cancellable', status: 'cancelled' });
    const unknown = await tool({ action: 'CANCEL_CODE_AGENT', run_id: 'car_000000000000000000000000' });
    expect(unknown.status).toBe(404);
  });

  it('kills the CLI at the run timeout and removes the worktree', async () => {
    await apply('enhancements:\n  code_agent:\n    run_timeout_seconds: 2\n');
    const runId = await start('hang past the timeout');
    const run = await waitStatus(runId, terminal);
    expect(run.status).toBe('timed_out');
    expect(run.error).toContain('run_timeout_seconds');
    const pid = Number(/pid=(\d+)/.exec(run.output.text as string)![1]);
    for (let i = 0; i < 40 && !gone(pid); i++) await new Promise((r) => setTimeout(r, 250));
    expect(gone(pid)).toBe(true);
    expect(existsSync(path.join(worktreeRoot, runId))).toBe(false);
    expect(await handleOf(runId).result()).toBe('timed_out');
  });
});

describe('cancelling cloud runs', () => {
  beforeAll(async () => {
    await apply(
      `enhancements:\n  coding_agent:\n    backend: code_agent\n  code_agent:\n    adapter: cloud\n    connection_name: agent_cloud\n    target_repo_url: https://git.example/acme/app\n    poll_interval_seconds: 1\n    run_timeout_seconds: 600\n`,
    );
  });

  it('cancels the remote run and ends cancelled', async () => {
    const runId = await start('hold until cancelled');
    await waitStatus(runId, (r) => r.status === 'running' && r.remote_run_id);
    const cancel = await tool({ action: 'CANCEL_CODE_AGENT', run_id: runId });
    expect(cancel.status, cancel.text).toBe(200);
    const run = await waitStatus(runId, terminal);
    expect(run).toMatchObject({ status: 'cancelled', adapter: 'cloud' });
    expect(provider.cancels).toEqual([run.remote_run_id]);
    expect(provider.runs.find((r) => r.runId === run.remote_run_id)!.cancelled).toBe(true);
    const handle = handleOf(runId);
    expect(await handle.result()).toBe('cancelled');
    await recordHistory('code-agent-cloud-cancelled', handle);
  });

  it('records a 409 run_not_cancellable and follows the run to its own end', async () => {
    provider.refuseCancel = true;
    try {
      const runId = await start('hold until released');
      const running = await waitStatus(runId, (r) => r.status === 'running' && r.remote_run_id);
      expect((await tool({ action: 'CANCEL_CODE_AGENT', run_id: runId })).status).toBe(200);
      await waitStatus(runId, (r) => r.steps.some((x: { step: string }) => x.step === 'cancel_refused'));
      provider.release(running.remote_run_id);
      const run = await waitStatus(runId, terminal);
      expect(run).toMatchObject({ status: 'finished', pr_url: expect.stringContaining('/pull/') });
      const refused = run.steps.find((x: { step: string }) => x.step === 'cancel_refused');
      expect(refused.detail).toBe('run_not_cancellable');
      expect(provider.cancels).toContain(running.remote_run_id);
    } finally {
      provider.refuseCancel = false;
    }
  });
});
