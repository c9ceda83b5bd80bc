/**
 * The agent-CLI backend in desktop mode without CODE_AGENT_CLI_COMMAND: a coding CLI on the laptop's
 * PATH (a fake node script named `claude`) detected and imported through `POST /api/desktop/local-cli/*`
 * becomes the command; nothing imported is CODING_AGENT_UNSUPPORTED naming CODE_AGENT_CLI_COMMAND; of
 * several imported, the most recently imported one runs. Real Git smart-HTTP server and fake Git host on loopback.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { candidateId } from '../../shared/desktop/local-cli.js';
import { startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { startGitServer, type GitRepo, type GitServer } from '../helpers/git-server.js';
import { http } from '../helpers/stack.js';

/** A fake coding CLI: answers --version; otherwise reads the prompt and edits the README unless told "nothing". */
const fakeCli = (name: string) => `#!${process.execPath}
if (process.argv.includes('--version')) {
  console.log('${name} 1.0 (fake)');
  process.exit(0);
}
const fs = require('node:fs');
let prompt = '';
process.stdin.on('data', (c) => (prompt += c));
process.stdin.on('end', () => {
  console.log('ran=${name} key_ok=' + (process.env.CODE_AGENT_API_KEY === 'model-key'));
  if (prompt.includes('nothing')) return;
  fs.writeFileSync('README.md', '${name} edited: ' + prompt.trim() + '\\n');
});
`;

let s: CrmStack;
let gitServer: GitServer;
let repo: GitRepo;
let forge: { url: string; calls: number; server: Server };
let dir: string;
let bin: string;
let worktreeRoot: string;

const call = (method: string, p: string, body?: unknown) => http(s.r.stack.url, method, p, { token: s.admin, body });
const tool = (args: Record<string, unknown>) =>
  call('POST', '/api/tool_call', { tool: 'enhancement_action', arguments: args });
const runCount = async () =>
  (await query(s.r.stack.db.url, 'select count(*)::int as n from code_agent_runs'))[0]!.n as number;
const terminal = (r: Record<string, any>) =>
  ['finished', 'failed', 'expired', 'cancelled', 'timed_out', 'interrupted'].includes(r.status);

async function runToEnd(prompt: string) {
  const res = await tool({ action: 'START_CODE_AGENT', prompt });
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.result.success, res.text).toBe(true);
  const runId = res.body.data.result.run.run_id as string;
  for (let i = 0; i < 480; i++) {
    const st = await tool({ action: 'GET_CODE_AGENT_STATUS', run_id: runId });
    expect(st.status, st.text).toBe(200);
    const run = st.body.data.result.run;
    if (terminal(run)) return run as Record<string, any>;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`run ${runId} never ended`);
}
const startedDetail = (run: Record<string, any>) =>
  (run.steps as Array<{ step: string; detail?: string }>).find((x) => x.step === 'agent_cli_started')?.detail;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-cli-imported-'));
  bin = path.join(dir, 'bin');
  worktreeRoot = path.join(dir, 'worktrees');
  mkdirSync(bin);
  for (const name of ['claude', 'codex']) {
    writeFileSync(path.join(bin, name), fakeCli(name));
    chmodSync(path.join(bin, name), 0o755);
  }
  gitServer = await startGitServer({ username: 'x-access-token', password: 'forge-token' });
  repo = gitServer.repo('acme/widgets');
  repo.write({ 'README.md': 'widgets\n' });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/repos/acme/widgets/pulls') {
        forge.calls += 1;
        res.statusCode = 201;
        return void res.end(
          JSON.stringify({ html_url: `https://forge.test/pull/${forge.calls}`, number: forge.calls }),
        );
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  forge = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: 0, server };
  s = await startCrmStack({ PLATFORM_DESKTOP_MODE: 'true', PLATFORM_DESKTOP_CLI_PATH: bin });
  for (const [name, key] of [
    ['model', 'model-key'],
    ['forge', 'forge-token'],
  ])
    expect(
      (
        await call('POST', '/api/connections', {
          name,
          type: 'api_key',
          auth_mode: 'api_key',
          config: { api_key: key, api_base_url: 'http://127.0.0.1:9' },
        })
      ).status,
    ).toBe(201);
  const applied = await call('POST', '/api/config/setup/apply-partial', {
    content: `enhancements:\n  code_agent:\n    run_timeout_seconds: 60\n  coding_agent:\n    backend: agent_cli\n    agent_cli:\n      enabled: true\n      target_repo_url: ${repo.url}\n      target_base_ref: main\n      connection_name: model\n      git_connection_name: forge\n      worktree_root: ${worktreeRoot}\n      forge_api_url: ${forge.url}\n`,
  });
  expect(applied.status, applied.text).toBe(200);
});
afterAll(async () => {
  await s?.close();
  await gitServer?.close();
  await new Promise<void>((r) => (forge ? forge.server.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

describe('imported local CLI as the agent-CLI command (desktop mode, CODE_AGENT_CLI_COMMAND unset)', () => {
  it('refuses with CODING_AGENT_UNSUPPORTED naming CODE_AGENT_CLI_COMMAND while nothing is imported, writing nothing', async () => {
    const detect = await call('POST', '/api/desktop/local-cli/detect');
    expect(detect.status, detect.text).toBe(200);
    expect(detect.body.data.candidates.map((c: { name: string; state: string }) => [c.name, c.state])).toEqual([
      ['claude', 'new'],
      ['codex', 'new'],
    ]);
    const res = await tool({ action: 'START_CODE_AGENT', prompt: 'change the readme' });
    expect([res.status, res.body.error_type]).toEqual([501, 'not_available_here']);
    expect(res.body.payload).toMatchObject({ code: 'CODING_AGENT_UNSUPPORTED', missing: ['CODE_AGENT_CLI_COMMAND'] });
    expect(await runCount()).toBe(0);
    expect(existsSync(worktreeRoot) ? execFileSync('ls', [worktreeRoot]).toString() : '').toBe('');
  });

  it('runs the imported CLI, records which command ran, and pushes its change as a pull request', async () => {
    const claude = path.join(bin, 'claude');
    const imported = await call('POST', '/api/desktop/local-cli/import', {
      candidate_ids: [candidateId('claude', claude)],
    });
    expect(imported.status, imported.text).toBe(200);
    const run = await runToEnd('make the readme friendlier');
    expect(run, JSON.stringify(run)).toMatchObject({
      adapter: 'agent_cli',
      status: 'finished',
      outcome: 'pull_request',
      pr_url: 'https://forge.test/pull/1',
      exit_code: 0,
    });
    expect(run.output.text).toContain('ran=claude key_ok=true');
    expect(startedDetail(run)).toBe(
      `code-agent/${run.run_id}; ${claude} from imported local CLI claude (${candidateId('claude', claude)})`,
    );
    const show = execFileSync('git', [
      '--git-dir',
      path.join(gitServer.root, 'acme/widgets.git'),
      'show',
      `refs/heads/code-agent/${run.run_id}:README.md`,
    ]).toString();
    expect(show).toBe('claude edited: make the readme friendlier\n');
    expect(forge.calls).toBe(1);
  });

  it('uses the most recently imported CLI when several are imported', async () => {
    const codex = path.join(bin, 'codex');
    const imported = await call('POST', '/api/desktop/local-cli/import', {
      candidate_ids: [candidateId('codex', codex)],
    });
    expect(imported.status, imported.text).toBe(200);
    const run = await runToEnd('do nothing at all');
    expect(run).toMatchObject({ status: 'finished', outcome: 'no_changes', exit_code: 0 });
    expect(run.output.text).toContain('ran=codex');
    expect(startedDetail(run)).toContain(`${codex} from imported local CLI codex`);
    expect(forge.calls).toBe(1);
  });
});
