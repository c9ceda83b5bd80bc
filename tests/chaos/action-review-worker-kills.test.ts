/**
 * Chaos: a stream of Action Review executions against a slow issue tracker while the worker process
 * is SIGKILLed again and again (and started again each time, as `npm start`'s supervisor does).
 *
 * Whatever the kills hit (a create or approve Update in a workflow task, a claim, an effect waiting
 * for the tracker's answer, an outcome being recorded), every proposal must end `executed`,
 * `not_applied` or `reconciliation_required`; none may stay approved or executing, none may be lost,
 * and no effect may run twice: the tracker counts the issues it created per idempotency key (the
 * proposal id), and an `executed` proposal has exactly one.
 *
 * The API runs in this process without a worker; workers are processes of their own
 * (tests/helpers/worker-process.ts). Every wait is on state, bounded; nothing asserts on time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { path, startFakeTracker, ticket, waitFor, type FakeTracker } from '../action-review/support.js';

const PROPOSALS = 32;
const CONCURRENCY = 4;
/** 4 in `npm test`; `npm run chaos` sets CHAOS_KILLS (5 by default) for more. */
const KILLS = Math.max(4, Number(process.env.CHAOS_KILLS ?? 4));
const TRACKER_DELAY_MS = 600;
const FINAL = ['executed', 'not_applied', 'reconciliation_required'];

let stack: Stack;
let tracker: FakeTracker;
const workers: WorkerProcess[] = [];

/** `standby`: a spare, loaded while the stream runs, that polls only once activated after a kill. */
function workerProcess(standby = false): WorkerProcess {
  return spawnStackWorker(
    stack,
    workers,
    {
      TICKET_TRACKER_URL: tracker.url,
      ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: '2',
      ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS: '60',
    },
    { standby },
  );
}

beforeAll(async () => {
  tracker = await startFakeTracker({ delayMs: TRACKER_DELAY_MS });
  // A dead worker's effect is noticed by its 2 s heartbeat timeout, far before the overall timeout.
  stack = await startStack({
    worker: false,
    env: {
      TICKET_TRACKER_URL: tracker.url,
      ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: '2',
      ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS: '60',
    },
  });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  await tracker?.close();
});

/** One proposal through the API: created, approved, executed; answers its id and the execute answer. */
async function oneProposal(n: number): Promise<{ id: string; execute: Record<string, any> }> {
  const created = await http(stack.url, 'POST', '/api/action-review/proposals', { body: ticket(`chaos ${n}`) });
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.proposal_id as string;
  const approved = await http(stack.url, 'POST', path(id, '/approve'), { body: {} });
  expect(approved.status, approved.text).toBe(200);
  const executed = await http(stack.url, 'POST', path(id, '/execute'));
  expect(executed.status, executed.text).toBe(200);
  return { id, execute: executed.body };
}

describe('the worker is SIGKILLed several times under a stream of executions', () => {
  it(
    'every proposal ends executed, not_applied or reconciliation_required; no effect ran twice',
    { timeout: 110_000 + (KILLS - 4) * 25_000 },
    async () => {
      let worker = workerProcess();
      // The replacements load meanwhile, one after another (a process start is seconds of module loading
      // on 2 cores), and each polls only once activated after its kill, as `npm start`'s supervisor
      // would start one then.
      let spawning = true;
      const afterLoaded = async (previous: Promise<WorkerProcess | undefined>) => {
        await (await previous)?.loaded.catch(() => undefined);
        return spawning ? workerProcess(true) : undefined;
      };
      const spares: Array<Promise<WorkerProcess | undefined>> = [Promise.resolve(workerProcess(true))];
      while (spares.length < KILLS) spares.push(afterLoaded(spares.at(-1)!));
      await worker.ready;

      // The stream: PROPOSALS proposals, CONCURRENCY at a time.
      const results: Array<{ id: string; execute: Record<string, any> }> = [];
      let next = 0;
      const stream = Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < PROPOSALS) results.push(await oneProposal(next++));
        }),
      );
      let streamDone = false;
      void stream.then(
        () => (streamDone = true),
        () => (streamDone = true),
      );

      // The chaos: a kill each time the tracker has seen another share of the stream (so the kills are
      // spread over it and land while effects are in flight), then a new worker.
      const kills: Array<{ signal: NodeJS.Signals | null; seen: number }> = [];
      for (let k = 1; k <= KILLS; k++) {
        const threshold = Math.floor((k * PROPOSALS) / (KILLS + 1));
        await waitFor(
          async () => tracker.requests.length >= threshold || streamDone,
          `the tracker to see ${threshold} requests`,
          60_000,
        );
        if (streamDone) break;
        const killed = await worker.kill();
        kills.push({ signal: killed.signal, seen: tracker.requests.length });
        worker = (await spares[k - 1])!;
        await worker.activate();
      }
      spawning = false;
      await Promise.all(spares); // every spare started is in `workers`, for the teardown
      await stream;
      expect(kills.map((k) => k.signal)).toEqual(Array(KILLS).fill('SIGKILL'));

      // None lost: every proposal has an answer and a row, each in a final status (polled, bounded:
      // an answer of the execute call is final by construction, the row follows it).
      expect(results).toHaveLength(PROPOSALS);
      const ids = results.map((r) => r.id);
      expect(new Set(ids).size).toBe(PROPOSALS);
      for (const r of results) expect(FINAL, JSON.stringify(r.execute)).toContain(r.execute.final_status);
      const rows = await waitFor(
        async () => {
          const found = await query<{ proposal_id: string; status: string }>(
            stack.db.url,
            'select proposal_id, status from action_review_proposals where proposal_id = any($1)',
            [ids],
          );
          return found.length === PROPOSALS && found.every((row) => FINAL.includes(row.status)) && found;
        },
        'every proposal row to reach a final status',
        30_000,
      );
      const statusById = new Map(rows.map((row) => [row.proposal_id, row.status]));
      for (const r of results) expect(statusById.get(r.id), r.id).toBe(r.execute.final_status);

      // No effect twice; an executed proposal created exactly one issue, a not_applied one none.
      for (const r of results) {
        const created = tracker.created.get(r.id) ?? 0;
        expect(created, `${r.id} (${r.execute.final_status})`).toBeLessThanOrEqual(1);
        if (r.execute.final_status === 'executed') expect(created, r.id).toBe(1);
        if (r.execute.final_status === 'not_applied') expect(created, r.id).toBe(0);
      }
      expect([...tracker.created.keys()].every((key) => ids.includes(key))).toBe(true);
      // A kill strands only the effects in flight at that moment (at most CONCURRENCY), so at most
      // KILLS × CONCURRENCY proposals need reconciliation and the rest of the stream got through.
      // (Regression: "more than half executed" failed when all four kills each hit four effects.)
      expect(results.filter((r) => r.execute.final_status === 'reconciliation_required').length).toBeLessThanOrEqual(
        KILLS * CONCURRENCY,
      );
      // Figures for the report (not asserted: they depend on where the kills land).
      const tally = Object.fromEntries(
        FINAL.map((s) => [s, results.filter((r) => r.execute.final_status === s).length]),
      );
      process.stderr.write(
        `[chaos] ${PROPOSALS} proposals, ${kills.length} kills (after tracker request ${kills.map((k) => k.seen).join(', ')}): ${JSON.stringify(tally)}\n`,
      );
    },
  );
});
