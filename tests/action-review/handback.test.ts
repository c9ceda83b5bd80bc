import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handbackSweepSchedule } from '../../shared/action-review/sweep-schedule.js';
import { ensureIntervalSchedule } from '../../shared/temporal/interval-schedule.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { learning, path, recordHistory, startReviewStack, tool, waitFor, type ReviewStack } from './support.js';

let r: ReviewStack;
let patient: ReviewStack;
const scheduleId = `action-review-handback-sweep-test-${Date.now()}`;

/** Makes the stack's conversation store fail while an outage row exists (what a down store looks like to the writer). */
async function withOutageSwitch(s: ReviewStack): Promise<void> {
  await query(s.stack.db.url, `create table handback_outage (on_since timestamptz)`);
  await query(
    s.stack.db.url,
    `create function fail_during_outage() returns trigger language plpgsql as $$
     begin
       if exists (select 1 from handback_outage) then raise exception 'conversation store unavailable'; end if;
       return new;
     end $$`,
  );
  await query(
    s.stack.db.url,
    `create trigger conversation_outage before insert on conversation_messages for each row execute function fail_during_outage()`,
  );
}

beforeAll(async () => {
  // Two delivery attempts per hand-back workflow, so an outage leaves work for the sweep.
  r = await startReviewStack({ ACTION_REVIEW_HANDBACK_MAX_ATTEMPTS: '2' });
  // The default attempt budget: delivery keeps retrying until the store recovers.
  patient = await startReviewStack();
  await withOutageSwitch(r);
  await withOutageSwitch(patient);
});
afterAll(async () => {
  await patient?.close();
  await r?.stack.api.deps.temporal.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await r?.close();
});

const handback = async (id: string, s = r) =>
  (
    await query<{ status: string; attempts: number; last_error: string | null }>(
      s.stack.db.url,
      'select status, attempts, last_error from action_review_handbacks where proposal_id = $1',
      [id],
    )
  )[0];
const threadMessages = (threadId: string, s = r) =>
  query(s.stack.db.url, 'select id from conversation_messages where thread_id = $1', [threadId]);

async function agentProposal(threadId: string, n: number, s = r): Promise<string> {
  const agent = await s.agent('bot-hb', threadId);
  const created = await tool(s.stack.url, agent, {
    action: 'CREATE_PROPOSAL',
    ...learning(n),
    action_type: 'ticket.write.v1',
    payload: { title: `hb ${n}` },
  });
  expect(created.status).toBe(200);
  return created.body.data.result.proposal.proposal_id as string;
}

describe('decision hand-back', () => {
  it('retries with backoff while the conversation store fails and delivers once it recovers', async () => {
    const s = patient;
    const id = await agentProposal('thread-hb1', 1, s);
    await query(s.stack.db.url, `insert into handback_outage values (now())`);
    expect(
      (await http(s.stack.url, 'POST', path(id, '/approve'), { token: s.tokens.rita, body: { reason: 'go' } })).status,
    ).toBe(200);
    const failing = await waitFor(async () => {
      const h = await handback(id, s);
      return h && h.attempts >= 2 && h;
    }, 'two failed delivery attempts');
    expect(failing).toMatchObject({
      status: 'pending',
      last_error: expect.stringContaining('conversation store unavailable'),
    });
    await query(s.stack.db.url, `delete from handback_outage`);
    const result = await s.stack.api.deps.temporal.workflow.getHandle(`handback/${id}`).result();
    expect(result).toMatchObject({ delivered: true });
    expect(await handback(id, s)).toMatchObject({ status: 'delivered', last_error: null });
    expect(await threadMessages('thread-hb1', s)).toHaveLength(1);
    await recordHistory(s.stack.api.deps.temporal, `handback/${id}`, 'handback-retry-then-delivered');
  });

  it('leaves an undeliverable hand-back pending, and the scheduled sweep delivers it', async () => {
    const id = await agentProposal('thread-hb2', 2);
    await query(r.stack.db.url, `insert into handback_outage values (now())`);
    await http(r.stack.url, 'POST', path(id, '/reject'), { token: r.tokens.rita, body: { reason: 'not now' } });
    const gaveUp = await r.stack.api.deps.temporal.workflow.getHandle(`handback/${id}`).result();
    expect(gaveUp).toMatchObject({ delivered: false });
    expect(await handback(id)).toMatchObject({ status: 'pending', attempts: 2 });
    await query(r.stack.db.url, `delete from handback_outage`);

    const client = r.stack.api.deps.temporal;
    const sweep = handbackSweepSchedule(r.stack.config.actionReview.sweepIntervalSeconds, scheduleId);
    expect(await ensureIntervalSchedule(client, r.stack.config, sweep)).toBe('created');
    expect(await ensureIntervalSchedule(client, r.stack.config, sweep)).toBe('updated');
    const schedule = client.schedule.getHandle(scheduleId);
    const described = await schedule.describe();
    expect(described.spec.intervals).toMatchObject([{ every: 600_000 }]);
    expect(described.action).toMatchObject({
      workflowType: 'actionReviewHandbackSweepWorkflow',
      taskQueue: r.stack.config.temporal.taskQueue,
    });

    await schedule.trigger();
    await waitFor(async () => (await handback(id))?.status === 'delivered', 'the sweep to deliver the hand-back');
    expect(await threadMessages('thread-hb2')).toHaveLength(1);
    const runs = (await schedule.describe()).info.recentActions;
    const run = runs.at(-1)!.action;
    const sweepResult = await client.workflow
      .getHandle(run.workflow.workflowId, run.workflow.firstExecutionRunId)
      .result();
    expect(sweepResult).toMatchObject({ delivered: 1, failed: 0 });
    await recordHistory(client, run.workflow.workflowId, 'handback-sweep');
  });
});
