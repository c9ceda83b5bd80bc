/**
 * The worker process running a job is SIGKILLed mid-run. Temporal notices through the run
 * activity's heartbeat timeout; the run must end `interrupted` (never run again: one attempt), and
 * the worker that takes over ends the job's stranded process group on this host.
 *
 * `CHAOS_KILLS` runs, each started on the worker of its turn and killed with it mid-run (1 here in
 * `npm test`; `npm run chaos` runs this file with more through tests/chaos/etl-kills.test.ts): a
 * run's heartbeat timeout and its `interrupted` marking fall on later workers, some of them killed
 * in turn.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { ensureSandboxUser, makeEtlFixture, type EtlFixture } from '../helpers/etl-fixtures.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { etlRunWorkflowId } from '../../workflows/etl-run-definitions.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import type { WorkerProcess } from '../helpers/worker-process.js';

let fixture: EtlFixture;
let stack: Stack;
const workers: WorkerProcess[] = [];
const KILLS = Number(process.env.CHAOS_KILLS ?? 1);

function workerProcess(): WorkerProcess {
  return spawnStackWorker(stack, workers, {
    ETL_JOBS_DIR: fixture.jobsDir,
    ETL_PROJECT_PATH: fixture.projectPath,
  });
}

const alive = (pid: number) =>
  existsSync(`/proc/${pid}/stat`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, tries = 240): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`gave up waiting for ${what}`);
}

beforeAll(async () => {
  ensureSandboxUser();
  fixture = makeEtlFixture();
  stack = await startStack({
    worker: false,
    env: { ETL_JOBS_DIR: fixture.jobsDir, ETL_PROJECT_PATH: fixture.projectPath },
  });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  fixture?.cleanup();
});

describe('a worker crash mid-run', () => {
  it(
    'marks the run interrupted, does not run it again, and ends the stranded job',
    { timeout: 120_000 + KILLS * 60_000 },
    async () => {
      const row = async (runId: string) =>
        (
          await query<{ status: string; output: string; process_id: number | null; error: string | null }>(
            stack.db.url,
            'select status, output, process_id, error from etl_runs where run_id = $1',
            [runId],
          )
        )[0]!;
      const runs: Array<{ runId: string; grandchild: number; group: number }> = [];
      let current = workerProcess();
      await current.ready;
      for (let k = 0; k < KILLS; k++) {
        const started = await http(stack.url, 'POST', '/api/tool_call', {
          body: { tool: 'run_etl_job', arguments: { job_name: 'Hang' } },
        });
        expect(started.status, started.text).toBe(200);
        const runId = started.body.data.result.run_id as string;
        const running = await waitFor('the job to run and report its grandchild', async () => {
          const r = await row(runId);
          return r.status === 'running' && r.process_id && /grandchild=\d+/.test(r.output) ? r : undefined;
        });
        const grandchild = Number(/grandchild=(\d+)/.exec(running.output)![1]);
        runs.push({ runId, grandchild, group: running.process_id! });

        expect((await current.kill()).signal).toBe('SIGKILL');
        // The job outlives its worker (its own process group) until someone ends it.
        expect(alive(grandchild)).toBe(true);
        current = workerProcess();
        await current.ready;
      }

      for (const { runId, grandchild, group } of runs) {
        const ended = await waitFor('the run to be marked interrupted', async () => {
          const r = await row(runId);
          return r.status === 'interrupted' ? r : undefined;
        });
        expect(ended.error).toContain('not restarted');
        // No run started twice: its job printed its start once.
        expect((ended.output.match(/Hang starting/g) ?? []).length).toBe(1);
        await waitFor('the stranded job to end', async () => (alive(grandchild) || alive(group) ? undefined : true));

        // Receipts: the outcome is answered by the tool and by the workflow.
        const polled = await http(stack.url, 'POST', '/api/tool_call', {
          body: { tool: 'get_etl_run', arguments: { run_id: runId } },
        });
        expect(polled.body.data.result).toMatchObject({ status: 'interrupted', run_id: runId });
        const handle = stack.api.deps.temporal.workflow.getHandle(etlRunWorkflowId(runId));
        expect(await handle.result()).toBe('interrupted');
        if (runId === runs[0]!.runId) await recordHistory('etl-run-worker-crash-interrupted', handle);
      }
      process.stderr.write(`[chaos] ETL: ${KILLS} run(s), each killed mid-run with its worker, all interrupted once\n`);
    },
  );
});
