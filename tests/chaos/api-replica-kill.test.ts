/**
 * Chaos for the API tier (issue 33, item 2): the replicas topology (two API and two worker processes
 * on one database and one Temporal, `tests/replicas/support.ts`) under a stream of Action Review
 * approvals and executions through API A against a slow issue tracker; A is SIGKILLed once with
 * requests in flight. Each client creates its proposals in the stream too, each create with its own
 * `Idempotency-Key`, and retries each failed request on B: a create with the same key (one proposal per
 * key, even when A had started it), an approval and an execution with the same proposal id, the key the
 * execution is idempotent on (and the tracker's idempotency key). Every proposal ends `executed`, with
 * exactly one issue at the tracker and its receipt (the issue id) on the proposal; none is lost, none is
 * proposed twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { path, startFakeTracker, ticket, waitFor, type FakeTracker } from '../action-review/support.js';
import { query } from '../helpers/db.js';
import { http, type HttpResult } from '../helpers/stack.js';
import { initialAdmin, startReplicas, type Replicas } from '../replicas/support.js';
import { REPLICAS_CHAOS_NAMESPACE } from '../setup/global-setup.js';

const PROPOSALS = 16;
const CONCURRENCY = 4;
const TRACKER_DELAY_MS = 600;

let tracker: FakeTracker;
let r: Replicas;
let alice: string;
/** Where the clients send requests: A until it is found dead, then B. */
let apiUrls: string[];

beforeAll(async () => {
  tracker = await startFakeTracker({ delayMs: TRACKER_DELAY_MS });
  r = await startReplicas({ TICKET_TRACKER_URL: tracker.url }, REPLICAS_CHAOS_NAMESPACE);
  apiUrls = r.apis.map((api) => api.url);
  alice = await initialAdmin(r, apiUrls[0]!);
}, 300_000);

afterAll(async () => {
  await r?.close();
  await tracker?.close();
});

/** Requests a client had to send again on B after A died under them, and the creates among them. */
let retried = 0;
let createsRetried = 0;

/** A call through the first live API; a connection that fails (A killed) is retried on the next one. */
async function call(
  method: string,
  p: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResult<Record<string, any>>> {
  for (;;) {
    const base = apiUrls[0]!;
    try {
      return await http(base, method, p, { token: alice, headers, ...(body !== undefined ? { body } : {}) });
    } catch (err) {
      // The last replica failing is a failure; A failing (once seen by any client) moves everyone to B.
      if (base === apiUrls.at(-1)) throw err;
      if (apiUrls[0] === base) apiUrls.shift();
      retried++;
      if (method === 'POST' && p === '/api/action-review/proposals') createsRetried++;
    }
  }
}

/** Approve (a retry may find it approved already) and execute; answers the execute answer. */
async function approveAndExecute(id: string): Promise<Record<string, any>> {
  const approved = await call('POST', path(id, '/approve'), {});
  if (approved.status !== 200) {
    const detail = await call('GET', path(id));
    expect(['approved', 'executing', 'executed'], approved.text).toContain(detail.body.data.status);
  }
  const executed = await call('POST', path(id, '/execute'));
  expect(executed.status, executed.text).toBe(200);
  return executed.body;
}

describe('an API replica SIGKILLed under a stream of approvals and executions', () => {
  it(
    'every proposal is created and executed once through the other replica; none lost',
    { timeout: 240_000 },
    async () => {
      const ids: string[] = [];
      const answers = new Map<string, Record<string, any>>();
      let next = 0;
      const stream = Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < PROPOSALS) {
            const n = next++;
            const created = await call('POST', '/api/action-review/proposals', ticket(`replica chaos ${n}`), {
              'idempotency-key': `replica-chaos-${n}`,
            });
            expect(created.status, created.text).toBe(201);
            const id = created.body.data.proposal_id as string;
            ids.push(id);
            answers.set(id, await approveAndExecute(id));
          }
        }),
      );
      // Beside the stream, a client that only creates, back to back, each with its own key, until A has died
      // and the stream ended: the one most likely to have a create in flight at the kill.
      let creating = true;
      const extra = new Map<string, string>();
      const creator = (async () => {
        for (let m = 0; creating; m++) {
          const created = await call('POST', '/api/action-review/proposals', ticket(`replica chaos extra ${m}`), {
            'idempotency-key': `replica-chaos-extra-${m}`,
          });
          expect(created.status, created.text).toBe(201);
          extra.set(`replica-chaos-extra-${m}`, created.body.data.proposal_id as string);
        }
      })();
      creator.catch(() => undefined); // awaited below; a failure meanwhile is not an unhandled rejection
      // Mid-stream, with executions waiting on the tracker through A: SIGKILL A.
      await waitFor(
        async () => tracker.requests.length >= PROPOSALS / 2,
        'half the stream to reach the tracker',
        120_000,
      );
      const inFlight = PROPOSALS - answers.size;
      await r.apis[0].kill();
      await stream;
      creating = false;
      await creator;

      expect(answers.size).toBe(PROPOSALS);
      for (const [id, answer] of answers) expect(answer, id).toMatchObject({ final_status: 'executed' });
      const rows = await query<{ proposal_id: string; status: string; execution_receipt: Record<string, any> | null }>(
        r.db.url,
        'select proposal_id, status, execution_receipt from action_review_proposals where proposal_id = any($1)',
        [ids],
      );
      expect(rows).toHaveLength(PROPOSALS);
      // One proposal per key: a create retried on B found the one A had made, or made it.
      const [all] = await query<{ n: string }>(r.db.url, 'select count(*)::text as n from action_review_proposals');
      expect(new Set(extra.values()).size).toBe(extra.size);
      expect(Number(all!.n)).toBe(PROPOSALS + extra.size);
      for (const row of rows) {
        expect(row.status, row.proposal_id).toBe('executed');
        // The receipt: the issue the tracker made for it.
        expect(JSON.stringify(row.execution_receipt), row.proposal_id).toMatch(/ISSUE-\d+/);
        expect(tracker.created.get(row.proposal_id), row.proposal_id).toBe(1);
      }
      expect([...tracker.created.keys()].sort()).toEqual([...ids].sort());
      expect(retried).toBeGreaterThan(0);
      process.stderr.write(
        `[chaos] API replica: ${PROPOSALS} proposals, A killed with ${inFlight} not yet answered, ${retried} request(s) retried on B (${createsRetried} of them creates, of ${PROPOSALS + extra.size}), one proposal per key, all executed once\n`,
      );
    },
  );
});
