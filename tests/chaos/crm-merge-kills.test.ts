/**
 * Chaos for CRM merges (issue 33, item 2): the worker process is SIGKILLed while the merge call is at
 * the CRM (the fake holds it unanswered), `CHAOS_KILLS` times (1 in `npm test`, more in `npm run
 * chaos`), a new worker started after each kill. A merge whose answer never came is an unknown
 * outcome: the proposal must end `reconciliation_required` (never a second field write or merge
 * call: the fake counts them), and the approval shows it. After the kills, a merge with a well-behaved CRM on the
 * last worker executes once and records its receipt (the merged record ids).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../action-review/support.js';
import { http } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import {
  APPROVALS,
  createJwtConnection,
  LOSER_A,
  LOSER_B,
  requestAndApprove,
  resetFakeCrm,
  startCrmStack,
  SURVIVOR,
  type CrmStack,
} from '../crm/support.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
const SECRETS_KEY = 'test-secrets-key-of-at-least-32-bytes';
const EFFECT_ENV = { ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: '2', ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS: '60' };

let s: CrmStack;
const workers: WorkerProcess[] = [];

const workerProcess = () => spawnStackWorker(s.r.stack, workers, { PLATFORM_SECRETS_KEY: SECRETS_KEY, ...EFFECT_ENV });

beforeAll(async () => {
  s = await startCrmStack({ PLATFORM_SECRETS_KEY: SECRETS_KEY, ...EFFECT_ENV });
  await createJwtConnection(s);
  // Workers are processes of their own from here on.
  await s.r.stack.worker?.stop();
  s.r.stack.worker = undefined;
}, 120_000);

afterAll(async () => {
  s?.crm.releaseHanging();
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await s?.close();
});

const execute = (id: string) =>
  http(s.r.stack.url, 'POST', `${APPROVALS}/${id}/execute`, {
    token: s.r.tokens.rita,
    body: { connection_name: 'crm_main' },
  });

describe('CRM merges while the worker is SIGKILLed mid-call', () => {
  it(
    'each killed merge ends reconciliation_required with one merge call; a later merge executes once',
    { timeout: 60_000 + KILLS * 60_000 },
    async () => {
      let worker = workerProcess();
      await worker.ready;
      const outcomes: string[] = [];
      for (let k = 0; k < KILLS; k++) {
        resetFakeCrm(s.crm);
        s.crm.soapMode = 'hang';
        const id = await requestAndApprove(s);
        const pending = execute(id);
        await waitFor(async () => s.crm.counts.soap === 1, 'the merge call to reach the CRM', 60_000);
        expect((await worker.kill()).signal).toBe('SIGKILL');
        s.crm.releaseHanging();
        worker = workerProcess();
        await worker.ready;
        const res = await pending;
        expect(res.status, res.text).toBe(200);
        expect(res.body, res.text).toMatchObject({ claimed: true, final_status: 'reconciliation_required' });
        outcomes.push(res.body.final_status as string);
        // Nothing retried: the survivor's fields written once, one merge call (held, so the losers stay).
        expect([s.crm.counts.patch, s.crm.counts.soap]).toEqual([1, 1]);
        expect([LOSER_A, LOSER_B].map((l) => s.crm.records.get(l)!.deleted)).toEqual([false, false]);
        await waitFor(async () => {
          const d = await http(s.r.stack.url, 'GET', `${APPROVALS}/${id}`, { token: s.r.tokens.rita });
          return d.body.data.approval.status === 'reconciliation_required';
        }, 'the approval to show reconciliation_required');
      }
      // The CRM behaves again: a merge on the worker that replaced the killed ones executes once.
      resetFakeCrm(s.crm);
      const id = await requestAndApprove(s);
      const done = await execute(id);
      expect(done.body, done.text).toMatchObject({ success: true, final_status: 'executed' });
      expect(done.body.execution_result).toMatchObject({ merged_record_ids: [LOSER_A, LOSER_B] });
      expect([s.crm.counts.patch, s.crm.counts.soap]).toEqual([1, 1]);
      expect(s.crm.records.get(SURVIVOR)!.fields).toMatchObject({ Email: 'ada@example.com', Phone: '222' });
      process.stderr.write(
        `[chaos] CRM merge: ${KILLS} kill(s) mid-call: ${JSON.stringify(outcomes)}, then executed\n`,
      );
    },
  );
});
