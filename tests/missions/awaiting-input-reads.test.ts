/**
 * `GET /api/projects/awaiting-input` over real projections: the set-based reads (candidates per waiting
 * status off the partial index, then the described missions with counts and requester, then their
 * open questions) answer the spec's limits, order, counts and questions, and skip ended missions and
 * other tenants. Rows are inserted directly (no workflows): this tests the reads, not the mission.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;

const hex = (n: number) => n.toString(16).padStart(32, '0');
const pid = (n: number) => `prj_${hex(n)}`;

/** Inserts projects `from`..`from+count-1`; a higher n is changed earlier (so lower n is newer). */
async function insertProjects(
  from: number,
  count: number,
  p: { state: string; status?: string; tenant?: string; requestedBy?: string },
) {
  await query(
    stack.db.url,
    `insert into projects (id, tenant, name, blueprint_name, blueprint_id, blueprint_commit, status, waiting_state,
       requested_by, phases_total, blueprint_phase, started_at, updated_at)
     select 'prj_' || lpad(to_hex(n), 32, '0'), $3, 'm' || n, 'bp', 'bp_1', 'c', $4, $5, $6, 2, 'ask',
       now() - interval '10 days', timestamptz '2026-01-01' - n * interval '1 second'
     from generate_series($1::int, $1::int + $2::int - 1) as n`,
    [from, count, p.tenant ?? 'default', p.status ?? 'running', p.state, p.requestedBy ?? 'someone'],
  );
}

beforeAll(async () => {
  stack = await startStack({ worker: false });
  await query(
    stack.db.url,
    `insert into users (id, tenant, display_name, email, first_seen_at, last_sign_in_at)
     values ('someone', 'default', 'Some One', 'some@example.test', now(), now())`,
  );
});
afterAll(async () => {
  await stack?.close();
});

describe('awaiting-input reads', () => {
  it('describes the newest waiting missions with counts, requester and open questions; ended and foreign ones never', async () => {
    await insertProjects(0, 3, { state: 'IN_PROGRESS_NEEDING_INPUT' });
    await insertProjects(10, 2, { state: 'STUCK', status: 'paused' });
    await insertProjects(20, 2, { state: 'IN_PROGRESS_NEEDING_INPUT', status: 'cancelled' });
    await insertProjects(30, 2, { state: 'IN_PROGRESS_NEEDING_INPUT', tenant: 'other' });
    await insertProjects(40, 2, { state: 'NONE' });
    await query(
      stack.db.url,
      `insert into project_goals (project_id, id, phase, name, status, position) values
         ($1, 'g1', 'ask', 'G1', 'met', 0), ($1, 'g2', 'ask', 'G2', 'in_progress', 1)`,
      [pid(1)],
    );
    await query(
      stack.db.url,
      `insert into project_questions (project_id, question_set_id, question_id, phase, position, priority, content, options, status, answer)
       values ($1, $2, 'q1', 'ask', 0, 'high', 'Which region?', '["eu","us"]', 'open', null),
              ($1, $2, 'q0', 'ask', 1, 'low', 'Done already', null, 'answered', 'yes')`,
      [pid(1), `qs_${hex(1)}_ask`],
    );
    const res = await http(stack.url, 'GET', '/api/projects/awaiting-input');
    expect(res.status).toBe(200);
    expect(res.body.truncated).toBe(false);
    const items = res.body.items as Array<Record<string, any>>;
    expect(items.map((i) => i.id)).toEqual([pid(0), pid(1), pid(2), pid(10), pid(11)]);
    const one = items[1]!;
    expect(one).toMatchObject({
      waiting_state: 'IN_PROGRESS_NEEDING_INPUT',
      requested_by: 'someone',
      requested_by_display_name: 'Some One',
      requested_by_email: 'some@example.test',
      stats: { phases_total: 2, phases_done: 0, goals_total: 2, goals_met: 1, questions_open: 1 },
    });
    expect(one.questions).toEqual([
      {
        question_set_id: `qs_${hex(1)}_ask`,
        question_id: 'q1',
        phase: 'ask',
        priority: 'high',
        category: null,
        content: 'Which region?',
        options: ['eu', 'us'],
        recommended: null,
      },
    ]);
    expect(items[0]!.questions).toEqual([]);
    expect(items[3]).toMatchObject({ status: 'paused', waiting_state: 'STUCK' });
  });

  it('answers 50 missions, truncated, when more than 500 wait in one status', async () => {
    await insertProjects(1000, 520, { state: 'IN_PROGRESS_NEEDING_INPUT' });
    const res = await http(stack.url, 'GET', '/api/projects/awaiting-input');
    expect(res.status).toBe(200);
    expect(res.body.truncated).toBe(true);
    const items = res.body.items as Array<{ id: string; updated_at: string }>;
    expect(items).toHaveLength(50);
    const updated = items.map((i) => Date.parse(i.updated_at));
    expect([...updated].sort((a, b) => b - a)).toEqual(updated);
    expect(items[0]!.id).toBe(pid(0));
  });
});
