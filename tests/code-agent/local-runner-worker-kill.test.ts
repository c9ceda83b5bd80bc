/**
 * The worker process is SIGKILLed after the local runner opened its pull request and before the run's
 * end was recorded. The run ends `interrupted`, as before, but nothing it did is lost: the worker that
 * takes over finds the pull request on the Git host by the run's head branch (`code-agent/<run_id>`,
 * handed to the runner as CODE_AGENT_BRANCH) and records it; no second pull request is opened.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { stackWorkerEnv, waitFor } from '../helpers/worker-env.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

/** The runner: opens a pull request for its head branch on the Git host, says so, then keeps working. */
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

interface ForgePull {
  number: number;
  html_url: string;
  head: { ref: string };
}

let stack: Stack;
let dir: string;
let forge: { url: string; server: Server; pulls: ForgePull[]; searches: string[] };
const workers: WorkerProcess[] = [];

async function startForge() {
  const pulls: ForgePull[] = [];
  const searches: string[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://forge');
      res.setHeader('content-type', 'application/json');
      if (url.pathname !== '/api/v3/repos/acme/widgets/pulls') return void res.writeHead(404).end('{}');
      if (req.method === 'POST') {
        const body = JSON.parse(raw) as { head: string };
        const n = pulls.length + 1;
        pulls.push({ number: n, html_url: `https://forge.test/acme/widgets/pull/${n}`, head: { ref: body.head } });
        return void res.writeHead(201).end(JSON.stringify(pulls.at(-1)));
      }
      searches.push(url.search);
      const head = url.searchParams.get('head')?.replace(/^acme:/, '');
      res.end(JSON.stringify(pulls.filter((p) => p.head.ref === head)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, pulls, searches };
}

const runnerCommand = () => `${process.execPath} ${path.join(dir, 'runner.cjs')} ${forge.url}`;

function workerProcess(runner: string): WorkerProcess {
  const w = spawnWorkerProcess({ ...stackWorkerEnv(stack), CODE_AGENT_RUNNER_COMMAND: runner });
  workers.push(w);
  return w;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'code-agent-kill-'));
  const script = path.join(dir, 'runner.cjs');
  writeFileSync(script, RUNNER);
  chmodSync(script, 0o755);
  forge = await startForge();
  stack = await startStack({ worker: false, env: { CODE_AGENT_RUNNER_COMMAND: runnerCommand() } });
  const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
    body: { content: `enhancements:\n  code_agent:\n    target_repo_url: ${forge.url}/acme/widgets\n` },
  });
  expect(applied.status, applied.text).toBe(200);
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  await new Promise<void>((r) => (forge ? forge.server.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a local run whose worker is killed after its runner opened a pull request', () => {
  it('records the pull request found by head branch and opens no second one', { timeout: 180_000 }, async () => {
    const first = workerProcess(runnerCommand());
    await first.ready;
    const started = await http(stack.url, 'POST', '/api/tool_call', {
      body: { tool: 'enhancement_action', arguments: { action: 'START_CODE_AGENT', prompt: 'improve the docs' } },
    });
    expect(started.status, started.text).toBe(200);
    expect(started.body.data.result.run).toMatchObject({ adapter: 'local' });
    const runId = started.body.data.result.run.run_id as string;
    const branch = `code-agent/${runId}`;
    await waitFor('the runner to open its pull request', async () =>
      forge.pulls.some((p) => p.head.ref === branch) ? true : undefined,
    );

    await first.kill();
    const second = workerProcess(runnerCommand());
    await second.ready;

    const row = await waitFor('the run to end', async () => {
      const r = (
        await query<{
          status: string;
          pr_url: string | null;
          outcome: string | null;
          branch: string | null;
          steps: Array<{ step: string; detail?: string }>;
        }>(stack.db.url, 'select status, pr_url, outcome, branch, steps from code_agent_runs where run_id = $1', [
          runId,
        ])
      )[0]!;
      return r.status !== 'queued' && r.status !== 'running' ? r : undefined;
    });
    expect(row).toMatchObject({
      status: 'interrupted',
      pr_url: 'https://forge.test/acme/widgets/pull/1',
      outcome: 'pull_request',
      branch,
    });
    expect(row.steps.map((x) => x.step)).toEqual([
      'requested',
      'runner_started',
      'interrupted',
      'pull_request_recovered',
    ]);
    expect(row.steps.at(-1)!.detail).toContain(`head branch ${branch}`);
    // One pull request exists, found by its head branch; the status route shows it.
    expect(forge.pulls).toHaveLength(1);
    expect(forge.searches.map((q) => new URLSearchParams(q).get('head'))).toContain(`acme:${branch}`);
    const status = await http(stack.url, 'POST', '/api/tool_call', {
      body: { tool: 'enhancement_action', arguments: { action: 'GET_CODE_AGENT_STATUS', run_id: runId } },
    });
    expect(status.body.data.result.run).toMatchObject({
      status: 'interrupted',
      pr_url: 'https://forge.test/acme/widgets/pull/1',
    });
  });
});
