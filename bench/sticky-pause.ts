/**
 * `npm run bench:sticky`: the pause a workflow sees when the worker that cached it goes away (issue 33).
 *
 * Two worker processes (A and B) on one task queue, the API in this process. `STICKY_PROPOSALS` Action
 * Review proposals are created; each workflow is then cached on whichever worker ran its first task
 * (read from its history), and its next task goes first to that worker's sticky queue. Worker A is then
 * SIGKILLed (a crash) or SIGTERMed (a deploy: the SDK's graceful shutdown), and every proposal is
 * approved at once. The approve answers when the workflow ran its Update task: proposals cached on B
 * are the unkilled path, those cached on A show the pause. Each case runs with the sticky
 * schedule-to-start timeout at the SDK's 10 s and at the platform's 1 s (`TEMPORAL_WORKER_STICKY_TIMEOUT_MS`).
 * Figures only, no assertion.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawnWorkerProcess, type WorkerProcess } from '../tests/helpers/worker-process.js';
import { proposalWorkflowId } from '../workflows/action-review-definitions.js';
import { writeWorkflowBundle } from './lib/bundle.js';
import { startBenchStack, type BenchStack } from './lib/stack.js';
import { post } from './lib/post.js';

const PROPOSALS = Number(process.env.STICKY_PROPOSALS ?? 12);
const ACTION_TYPE = 'prover.request_finding_evidence.v1';
type Exit = 'SIGTERM' | 'SIGKILL';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Which worker process (pid) ran the workflow's last workflow task. */
async function cachedOn(stack: BenchStack, proposalId: string): Promise<number> {
  const history = await stack.bareClient.workflow.getHandle(proposalWorkflowId(proposalId)).fetchHistory();
  const done = (history.events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes);
  const identity = done[done.length - 1]?.workflowTaskCompletedEventAttributes?.identity ?? '';
  return Number(identity.split('@')[0]);
}

interface CaseTimes {
  onKilled: number[];
  onSurvivor: number[];
}

/** One case: proposals cached on A or B, A ended as `exit`, every proposal approved; answers the approve times (ms). */
async function oneCase(stack: BenchStack, bundlePath: string, stickyMs: number, exit: Exit): Promise<CaseTimes> {
  const env = {
    DATABASE_URL: stack.config.databaseUrl!,
    TEMPORAL_ADDRESS: stack.config.temporal.address,
    TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: bundlePath,
    TEMPORAL_WORKER_STICKY_TIMEOUT_MS: String(stickyMs),
  };
  const workers = [spawnWorkerProcess(env), spawnWorkerProcess(env)];
  try {
    await Promise.all(workers.map((w) => w.ready));
    const [a] = workers as [WorkerProcess, WorkerProcess];
    const base = `${stack.api.url}/api/action-review/proposals`;
    const ids = await Promise.all(
      Array.from({ length: PROPOSALS }, async (_, i) => {
        const created = await post(base, {
          action_type: ACTION_TYPE,
          payload: { finding_id: `sticky-${stickyMs}-${exit}-${i}`, evidence_request: 'Attach the query output.' },
          expected_effect: 'The finding gets an evidence request.',
        });
        return created.data.proposal_id as string;
      }),
    );
    const owners = await Promise.all(ids.map((id) => cachedOn(stack, id)));
    if (exit === 'SIGKILL') await a.kill();
    else await a.stop(30_000);
    const times = await Promise.all(
      ids.map(async (id) => {
        const t0 = performance.now();
        await post(`${base}/${id}/approve`, {});
        return performance.now() - t0;
      }),
    );
    const onKilled = times.filter((_, i) => owners[i] === a.child.pid);
    return { onKilled, onSurvivor: times.filter((_, i) => owners[i] !== a.child.pid) };
  } finally {
    await Promise.all(workers.map((w) => w.stop(5_000)));
  }
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-sticky-'));
const stack = await startBenchStack({}, { worker: false });
try {
  const bundlePath = await writeWorkflowBundle(dir);
  const lines = [
    `### Sticky pause: approve of a proposal cached on a worker that went away (${PROPOSALS} proposals per case, ${os.cpus().length} cores)`,
    '',
    '| sticky timeout | worker A | cached on A (n): median, max | cached on B (n): median, max | max ratio A / B |',
    '|-|-|-|-|-|',
  ];
  const cell = (xs: number[]) =>
    xs.length ? `(${xs.length}) ${median(xs).toFixed(0)} ms, ${Math.max(...xs).toFixed(0)} ms` : '(0)';
  for (const stickyMs of [10_000, 1_000]) {
    for (const exit of ['SIGKILL', 'SIGTERM'] as const) {
      const t = await oneCase(stack, bundlePath, stickyMs, exit);
      const ratio =
        t.onKilled.length && t.onSurvivor.length ? Math.max(...t.onKilled) / Math.max(...t.onSurvivor) : NaN;
      lines.push(
        `| ${stickyMs / 1000} s | ${exit} | ${cell(t.onKilled)} | ${cell(t.onSurvivor)} | ${ratio.toFixed(1)}x |`,
      );
      process.stderr.write(lines[lines.length - 1] + '\n');
    }
  }
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  await stack.close();
  await rm(dir, { recursive: true, force: true });
}
