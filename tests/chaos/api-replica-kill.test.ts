/**
 * Chaos for the API tier (issue 33, item 2): the replicas topology (two API and two worker processes
 * on one database and one Temporal, `tests/replicas/support.ts`) under a stream of Action Review
 * approvals and executions through API A against a slow issue tracker; A is SIGKILLed once with
 * requests in flight. The clients retry each failed request on B with the same proposal id, the key
 * the execution is idempotent on (and the tracker's idempotency key): every proposal ends `executed`,
 * with exactly one issue at the tracker and its receipt (the issue id) on the proposal; none is lost.
 *
 * The proposals are created through A before the stream: a create has no idempotency key, so a
 * create in flight at the kill could not be retried without risking a second proposal.
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

/** Requests a client had to send again on B after A died under them. */
let retried = 0;

/** A call through the first live API; a connection that fails (A killed) is retried on the next one. */
async function call(method: string, p: string, body?: unknown): Promise<HttpResult<Record<string, any>>> {
  for (;;) {
    const base = apiUrls[0]!;
    try {
      return await http(base, method, p, { token: alice, ...(body !== undefined ? { body } : {}) });
    } catch (err) {
      // The last replica failing is a failure; A failing (once seen by any client) moves everyone to B.
      if (base === apiUrls.at(-1)) throw err;
      if (apiUrls[0] === base) apiUrls.shift();
      retried++;
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
  it('every proposal executes once through the other replica; none lost', { timeout: 240_000 }, async () => {
    const ids: string[] = [];
    for (let n = 0; n < PROPOSALS; n++) {
      const created = await call('POST', '/api/action-review/proposals', ticket(`replica chaos ${n}`));
      expect(created.status, created.text).toBe(201);
      ids.push(created.body.data.proposal_id as string);
    }
    const answers = new Map<string, Record<string, any>>();
    let next = 0;
    const stream = Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < PROPOSALS) {
          const id = ids[next++]!;
          answers.set(id, await approveAndExecute(id));
        }
      }),
    );
    // Mid-stream, with executions waiting on the tracker through A: SIGKILL A.
    await waitFor(
      async () => tracker.requests.length >= PROPOSALS / 2,
      'half the stream to reach the tracker',
      120_000,
    );
    const inFlight = PROPOSALS - answers.size;
    await r.apis[0].kill();
    await stream;

    expect(answers.size).toBe(PROPOSALS);
    for (const [id, answer] of answers) expect(answer, id).toMatchObject({ final_status: 'executed' });
    const rows = await query<{ proposal_id: string; status: string; execution_receipt: Record<string, any> | null }>(
      r.db.url,
      'select proposal_id, status, execution_receipt from action_review_proposals where proposal_id = any($1)',
      [ids],
    );
    expect(rows).toHaveLength(PROPOSALS);
    for (const row of rows) {
      expect(row.status, row.proposal_id).toBe('executed');
      // The receipt: the issue the tracker made for it.
      expect(JSON.stringify(row.execution_receipt), row.proposal_id).toMatch(/ISSUE-\d+/);
      expect(tracker.created.get(row.proposal_id), row.proposal_id).toBe(1);
    }
    expect([...tracker.created.keys()].sort()).toEqual([...ids].sort());
    expect(retried).toBeGreaterThan(0);
    process.stderr.write(
      `[chaos] API replica: ${PROPOSALS} proposals, A killed with ${inFlight} not yet answered, ${retried} request(s) retried on B, all executed once\n`,
    );
  });
});
