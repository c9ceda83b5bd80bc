/**
 * The local runner (CODE_AGENT_RUNNER_COMMAND): a child process without a shell, a scrubbed
 * environment, the prompt on stdin, output captured, the PR URL line recorded, and the whole
 * process group killed at enhancements.code_agent.run_timeout_seconds.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { recordHistory } from '../helpers/histories.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

const RUNNER = `#!/bin/sh
prompt=$(cat)
echo "prompt: $prompt"
echo "args: $*"
env | sed 's/^/env: /'
case "$prompt" in
  *hang*) sleep 300 & echo "grandchild=$!"; wait ;;
  *fail*) echo "cannot do it" >&2; exit 3 ;;
  *) echo "CODE_AGENT_PR_URL=https://git.example/acme/app/pull/77" ;;
esac
`;
/** What the runner may see: its own variables plus what sh sets. */
const ALLOWED_ENV = /^(PATH|LANG|HOME|PWD|OLDPWD|SHLVL|_|CODE_AGENT_[A-Z_]+)$/;

let dir: string;
let stack: Stack;
const tool = (args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { body: { tool: 'enhancement_action', arguments: args } });

async function runToEnd(prompt: string) {
  const started = await tool({ action: 'START_CODE_AGENT', prompt });
  expect(started.status, started.text).toBe(200);
  expect(started.body.data.result.run).toMatchObject({ adapter: 'local', status: 'queued' });
  const runId = started.body.data.result.run.run_id as string;
  for (let i = 0; i < 240; i++) {
    const res = await tool({ action: 'GET_CODE_AGENT_STATUS', run_id: runId });
    const run = res.body.data.result.run;
    if (!['queued', 'running'].includes(run.status)) return run;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`run ${runId} did not end`);
}

const gone = (pid: number) =>
  !existsSync(`/proc/${pid}/stat`) || /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'code-agent-runner-'));
  const script = path.join(dir, 'runner.sh');
  writeFileSync(script, RUNNER);
  chmodSync(script, 0o755);
  process.env.CODE_AGENT_TEST_SERVER_SECRET = 'server-only-secret';
  stack = await startStack({ env: { CODE_AGENT_RUNNER_COMMAND: `${script} --mode  test` } });
  const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
    body: { content: 'enhancements:\n  code_agent:\n    run_timeout_seconds: 2\n' },
  });
  expect(applied.status, applied.text).toBe(200);
});
afterAll(async () => {
  delete process.env.CODE_AGENT_TEST_SERVER_SECRET;
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('local runner', () => {
  it('runs the command without a shell, prompt on stdin, scrubbed environment, and records the PR URL', async () => {
    const run = await runToEnd('fix the export; $(touch /tmp/never) `id`');
    expect(run).toMatchObject({
      status: 'finished',
      exit_code: 0,
      pr_url: 'https://git.example/acme/app/pull/77',
      error: null,
    });
    const text = run.output.text as string;
    // The prompt reached the runner as data, never interpreted by a shell.
    expect(text).toContain('prompt: fix the export; $(touch /tmp/never) `id`');
    expect(text).toContain('args: --mode test');
    const names = [...text.matchAll(/^env: ([^=]+)=/gm)].map((m) => m[1]!);
    expect(names).toContain('CODE_AGENT_RUN_ID');
    expect(names.filter((n) => !ALLOWED_ENV.test(n))).toEqual([]);
    expect(text).not.toContain('server-only-secret');
    expect(run.steps.map((x: { step: string }) => x.step)).toEqual(['requested', 'runner_started', 'finished']);
  });

  it('records a failing runner as failed with its exit code', async () => {
    const run = await runToEnd('this will fail');
    expect(run).toMatchObject({ status: 'failed', exit_code: 3, pr_url: null });
    expect(run.error).toContain('code 3');
    expect(run.output.text).toContain('cannot do it');
  });

  it('kills the runner and everything it started at the timeout', async () => {
    const run = await runToEnd('hang forever');
    expect(run.status).toBe('timed_out');
    expect(run.error).toContain('run_timeout_seconds');
    const grandchild = Number(/grandchild=(\d+)/.exec(run.output.text as string)![1]);
    for (let i = 0; i < 40 && !gone(grandchild); i++) await new Promise((r) => setTimeout(r, 250));
    expect(gone(grandchild)).toBe(true);
    const handle = stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(run.run_id));
    expect(await handle.result()).toBe('timed_out');
    await recordHistory('code-agent-local-timed-out', handle);
  });
});
