/**
 * Chaos for code-agent runs (issue 33, item 2), each adapter in turn on one stack: `CHAOS_KILLS` runs
 * (1 in `npm test`, more in `npm run chaos`), the worker process SIGKILLed in each right after the
 * run's effect was made and before its answer arrived, a new worker started after each kill. Effects
 * are counted at the fakes (no doubled launch or pull request) and the receipt must be on the run.
 *
 * - cloud: the provider created the remote run but its answer never came. The next worker retries the
 *   create with the same idempotency key, gets the same run back and follows it to `finished`: one
 *   remote run, its pull request URL recorded.
 * - local: the runner opened its pull request and keeps working. The run ends `interrupted` (never run
 *   again), with the pull request found on the Git host by its head branch; no second one is opened.
 * - agent CLI: the platform pushed the branch and opened the pull request, whose answer never came. The
 *   run ends `interrupted` with that pull request found by head branch, the branch pushed once, the
 *   per-run worktree removed by the next worker.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODE_AGENT_TERMINAL } from '../../shared/code-agent/runs.js';
import { codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { startFakeForge, type FakeForge } from '../code-agent/fake-forge.js';
import { startFakeProvider, type FakeProvider } from '../code-agent/fake-provider.js';
import { query } from '../helpers/db.js';
import { startGitServer, type GitRepo, type GitServer } from '../helpers/git-server.js';
import { recordHistory } from '../helpers/histories.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import { waitFor } from '../helpers/worker-env.js';
import type { WorkerProcess } from '../helpers/worker-process.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
/** An agent-CLI run's steps up to its push. */
const UP_TO_PUSH = 'requested worktree_cloning agent_cli_started agent_cli_finished committed pushed'.split(' ');
const SECRETS_KEY = 'test-secrets-key-of-at-least-32-bytes';

/** The local runner: opens a pull request for its head branch on the Git host, says so, then keeps working. */
const RUNNER = `
const forge = process.argv[2];
let prompt = '';
process.stdin.on('data', (c) => (prompt += c));
process.stdin.on('end', async () => {
  const res = await fetch(forge + '/api/v3/repos/acme/widgets/pulls', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ title: prompt.trim(), head: process.env.CODE_AGENT_BRANCH, base: process.env.CODE_AGENT_TARGET_BASE_REF }),
  });
  console.log('opened ' + (await res.json()).number);
  setInterval(() => undefined, 1000);
});
`;
/** The agent CLI: writes one file; the platform commits, pushes and opens the pull request. */
const CLI = `
let prompt = '';
process.stdin.on('data', (c) => (prompt += c));
process.stdin.on('end', () => require('node:fs').writeFileSync('CHANGE.md', prompt));
`;

let stack: Stack;
let provider: FakeProvider;
let forge: FakeForge;
let gitServer: GitServer;
let repo: GitRepo;
let dir: string;
const workers: WorkerProcess[] = [];
let worker: WorkerProcess;

const commands = () => ({
  CODE_AGENT_RUNNER_COMMAND: `${process.execPath} ${path.join(dir, 'runner.cjs')} ${forge.url}`,
  CODE_AGENT_CLI_COMMAND: `${process.execPath} ${path.join(dir, 'cli.cjs')}`,
});
const workerProcess = () =>
  spawnStackWorker(stack, workers, {
    PLATFORM_SECRETS_KEY: SECRETS_KEY,
    PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
    CRM_ALLOW_INSECURE_LOOPBACK: 'true',
    ...commands(),
  });
const worktreeRoot = () => path.join(dir, 'worktrees');

const post = async (p: string, body: unknown, status: number) => {
  const res = await http(stack.url, 'POST', p, { body });
  expect(res.status, res.text).toBe(status);
  return res;
};
const apply = (content: string) => post('/api/config/setup/apply-partial', { content }, 200);
const agent = (args: Record<string, unknown>) =>
  post('/api/tool_call', { tool: 'enhancement_action', arguments: args }, 200);
const connection = (name: string, apiKey: string, base?: string) =>
  post(
    '/api/connections',
    {
      name,
      type: 'api_key',
      auth_mode: 'api_key',
      config: { api_key: apiKey, ...(base ? { api_base_url: base } : {}) },
    },
    201,
  );

async function start(prompt: string, adapter: string): Promise<string> {
  const started = await agent({ action: 'START_CODE_AGENT', prompt });
  expect(started.body.data.result.run).toMatchObject({ adapter });
  return started.body.data.result.run.run_id as string;
}

interface RunRow {
  status: string;
  pr_url: string | null;
  outcome: string | null;
  branch: string | null;
  remote_run_id: string | null;
  steps: Array<{ step: string; detail?: string }>;
}
/** The run's row once it ended. */
const ended = (runId: string) =>
  waitFor(`run ${runId} to end`, async () => {
    const [r] = await query<RunRow>(
      stack.db.url,
      'select status, pr_url, outcome, branch, remote_run_id, steps from code_agent_runs where run_id = $1',
      [runId],
    );
    return r && (CODE_AGENT_TERMINAL as readonly string[]).includes(r.status) ? r : undefined;
  });
const handleOf = (runId: string) => stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(runId));

/** Once `effectMade` holds, SIGKILL the worker and start the next one (a run that ended first fails, saying how). */
async function killAfter(what: string, effectMade: () => boolean, runId: string): Promise<void> {
  await waitFor(
    what,
    async () => {
      if (effectMade()) return true;
      const [r] = await query<{ status: string }>(
        stack.db.url,
        'select status, error, steps from code_agent_runs where run_id = $1',
        [runId],
      );
      if (r && (CODE_AGENT_TERMINAL as readonly string[]).includes(r.status))
        throw new Error(`run ${runId} ended before ${what}: ${JSON.stringify(r)}`);
      return undefined;
    },
    960,
  );
  expect((await worker.kill()).signal).toBe('SIGKILL');
  worker = workerProcess();
  await worker.ready;
}

/**
 * A local or agent-CLI run whose worker is SIGKILLed once its pull request is at the Git host: ends
 * `interrupted` with that pull request recorded (found by head branch); answers the run and its row.
 */
async function killedAfterPullRequest(prompt: string, adapter: string, what: string) {
  const runId = await start(prompt, adapter);
  const branch = `code-agent/${runId}`;
  await killAfter(what, () => forge.pulls.some((p) => p.head.ref === branch), runId);
  const pull = forge.pulls.find((p) => p.head.ref === branch)!;
  const row = await ended(runId);
  expect(row).toMatchObject({ status: 'interrupted', pr_url: pull.html_url, outcome: 'pull_request', branch });
  expect(forge.pulls.filter((p) => p.head.ref === branch)).toHaveLength(1);
  expect(await handleOf(runId).result()).toBe('interrupted');
  return { runId, branch, pull, row };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'chaos-code-agent-'));
  writeFileSync(path.join(dir, 'runner.cjs'), RUNNER);
  writeFileSync(path.join(dir, 'cli.cjs'), CLI);
  [provider, forge, gitServer] = await Promise.all([
    startFakeProvider(),
    startFakeForge(),
    startGitServer({ username: 'x-access-token', password: 'forge-token' }),
  ]);
  repo = gitServer.repo('acme/widgets');
  repo.write({ 'README.md': 'widgets\n' });
  stack = await startStack({ worker: false, env: { PLATFORM_SECRETS_KEY: SECRETS_KEY, ...commands() } });
  await connection('agent_cloud', 'good-key', provider.url);
  await connection('model', 'model-key', 'http://127.0.0.1:9');
  await connection('forge', 'forge-token');
  worker = workerProcess();
  await worker.ready;
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  await Promise.all([provider?.close(), forge?.close(), gitServer?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const RUN_TIMEOUT = { timeout: 60_000 + KILLS * 120_000 };

describe('cloud runs whose worker is SIGKILLed while the remote run is created', () => {
  it('each creates exactly one remote run and is followed to the end on the next worker', RUN_TIMEOUT, async () => {
    await apply(
      'enhancements:\n  code_agent:\n    adapter: cloud\n    connection_name: agent_cloud\n    target_repo_url: https://git.example/acme/app\n    poll_interval_seconds: 1\n',
    );
    provider.swallowFirstCreate = true;
    for (let k = 0; k < KILLS; k++) {
      const runId = await start(`finish after crash ${k}`, 'cloud');
      const key = `code-agent-${runId}`;
      await killAfter('the provider to create the run', () => provider.runs.some((r) => r.key === key), runId);
      const row = await ended(runId);
      const remote = provider.runs.filter((r) => r.key === key);
      expect(remote).toHaveLength(1);
      expect(provider.creates.filter((c) => c === key).length).toBeGreaterThanOrEqual(2);
      expect(row).toMatchObject({
        status: 'finished',
        remote_run_id: remote[0]!.runId,
        pr_url: expect.stringContaining('/pull/'),
      });
      const handle = handleOf(runId);
      expect(await handle.result()).toBe('finished');
      if (k === 0) await recordHistory('code-agent-cloud-worker-crash', handle);
    }
    expect(provider.runs).toHaveLength(KILLS);
    process.stderr.write(
      `[chaos] code agent, cloud: ${KILLS} kill(s) mid-create, ${provider.runs.length} remote runs\n`,
    );
  });
});

describe('local runs whose worker is SIGKILLed after the runner opened its pull request', () => {
  it(
    'each ends interrupted with the pull request found by head branch and opens no second one',
    RUN_TIMEOUT,
    async () => {
      await apply(`enhancements:\n  code_agent:\n    adapter: local\n    target_repo_url: ${forge.url}/acme/widgets\n`);
      const opened = forge.pulls.length;
      for (let k = 0; k < KILLS; k++) {
        const { runId, branch, pull, row } = await killedAfterPullRequest(
          `improve the docs ${k}`,
          'local',
          'the runner to open its pull request',
        );
        expect(row.steps.map((x) => x.step)).toEqual([
          'requested',
          'runner_started',
          'interrupted',
          'pull_request_recovered',
        ]);
        expect(row.steps.at(-1)!.detail).toContain(`head branch ${branch}`);
        // Found by its head branch (one pull request for it, checked above); the status route shows it.
        expect(forge.searches.map((q) => new URLSearchParams(q).get('head'))).toContain(`acme:${branch}`);
        const status = await agent({ action: 'GET_CODE_AGENT_STATUS', run_id: runId });
        expect(status.body.data.result.run).toMatchObject({ status: 'interrupted', pr_url: pull.html_url });
      }
      expect(forge.pulls.length - opened).toBe(KILLS);
      process.stderr.write(`[chaos] code agent, local: ${KILLS} kill(s) after the pull request, each recovered\n`);
    },
  );
});

describe('agent-CLI runs whose worker is SIGKILLed while the pull request is opened', () => {
  const serverBranches = () =>
    execFileSync('git', [
      '--git-dir',
      path.join(gitServer.root, 'acme/widgets.git'),
      'for-each-ref',
      '--format=%(refname)',
    ])
      .toString()
      .trim()
      .split('\n');

  it(
    'each ends interrupted with its pull request recorded, pushed and opened once, worktree removed',
    RUN_TIMEOUT,
    async () => {
      await apply(
        `enhancements:\n  coding_agent:\n    backend: agent_cli\n    agent_cli:\n      enabled: true\n      target_repo_url: ${repo.url}\n      target_base_ref: main\n      connection_name: model\n      git_connection_name: forge\n      worktree_root: ${worktreeRoot()}\n      forge_api_url: ${forge.apiUrl}\n`,
      );
      forge.holdOpens = true;
      const opened = forge.pulls.length;
      for (let k = 0; k < KILLS; k++) {
        const { runId, branch, row } = await killedAfterPullRequest(
          `write the change ${k}`,
          'agent_cli',
          'the pull request to be opened',
        );
        const steps = row.steps.map((x) => x.step);
        expect(steps.slice(0, UP_TO_PUSH.length)).toEqual(UP_TO_PUSH);
        expect(steps).toContain('pull_request_recovered');
        // The next worker removed the dead one's worktree (same host); the branch is on the server once.
        expect(existsSync(path.join(worktreeRoot(), runId))).toBe(false);
        expect(serverBranches().filter((b) => b === `refs/heads/${branch}`)).toHaveLength(1);
      }
      expect(forge.pulls.length - opened).toBe(KILLS);
      expect(forge.openAuth.slice(opened)).toEqual(Array(KILLS).fill('Bearer forge-token'));
      process.stderr.write(`[chaos] code agent, agent CLI: ${KILLS} kill(s) at the pull request, each recovered\n`);
    },
  );
});
