/**
 * The worker process is SIGKILLed while it creates the remote run: the provider created it but its
 * answer never arrived. The worker that takes over retries the create with the same idempotency
 * key, gets the same run back, and follows it to the end: exactly one remote run exists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { startFakeProvider, type FakeProvider } from './fake-provider.js';

const SECRETS_KEY = 'test-secrets-key-of-at-least-32-bytes';
let stack: Stack;
let fake: FakeProvider;
const workers: WorkerProcess[] = [];

function workerProcess(): WorkerProcess {
  return spawnStackWorker(stack, workers, {
    PLATFORM_SECRETS_KEY: SECRETS_KEY,
    PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
    CRM_ALLOW_INSECURE_LOOPBACK: 'true',
  });
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, tries = 480): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`gave up waiting for ${what}`);
}

beforeAll(async () => {
  fake = await startFakeProvider();
  stack = await startStack({ worker: false, env: { PLATFORM_SECRETS_KEY: SECRETS_KEY } });
  const conn = await http(stack.url, 'POST', '/api/connections', {
    body: {
      name: 'agent_cloud',
      type: 'api_key',
      auth_mode: 'api_key',
      config: { api_key: 'good-key', api_base_url: fake.url },
    },
  });
  expect(conn.status, conn.text).toBe(201);
  const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
    body: {
      content:
        'enhancements:\n  code_agent:\n    connection_name: agent_cloud\n    target_repo_url: https://git.example/acme/app\n    poll_interval_seconds: 1\n',
    },
  });
  expect(applied.status, applied.text).toBe(200);
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  await fake?.close();
});

describe('a worker crash while the remote run is created', () => {
  it('creates exactly one remote run and follows it to the end on the next worker', { timeout: 180_000 }, async () => {
    fake.swallowFirstCreate = true;
    const first = workerProcess();
    await first.ready;
    const started = await http(stack.url, 'POST', '/api/tool_call', {
      body: { tool: 'enhancement_action', arguments: { action: 'START_CODE_AGENT', prompt: 'finish after a crash' } },
    });
    expect(started.status, started.text).toBe(200);
    const runId = started.body.data.result.run.run_id as string;
    const key = `code-agent-${runId}`;
    await waitFor('the provider to create the run', async () =>
      fake.runs.some((r) => r.key === key) ? true : undefined,
    );

    await first.kill();
    const second = workerProcess();
    await second.ready;

    const row = await waitFor('the run to finish', async () => {
      const r = (
        await query<{ status: string; pr_url: string | null; remote_run_id: string | null }>(
          stack.db.url,
          'select status, pr_url, remote_run_id from code_agent_runs where run_id = $1',
          [runId],
        )
      )[0]!;
      return r.status === 'finished' ? r : undefined;
    });
    const remote = fake.runs.filter((r) => r.key === key);
    expect(remote).toHaveLength(1);
    expect(fake.creates.filter((k) => k === key).length).toBeGreaterThanOrEqual(2);
    expect(row).toMatchObject({ remote_run_id: remote[0]!.runId, pr_url: expect.stringContaining('/pull/') });
    const handle = stack.api.deps.temporal.workflow.getHandle(codeAgentWorkflowId(runId));
    expect(await handle.result()).toBe('finished');
    await recordHistory('code-agent-cloud-worker-crash', handle);
  });
});
