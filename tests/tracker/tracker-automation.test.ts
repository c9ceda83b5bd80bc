/**
 * Tracker automation over real HTTP with a fake tracker and a fake code-agent provider on loopback:
 * poll-now (setup refusal, skip rule, explicit lookback), the ledger (recorded, metadata_changed and
 * provider_status_observed once each), an eligible ticket starting one code-agent run that a title
 * change does not redispatch, the steady-state window with an injected clock, the signed service-desk
 * webhook (401 writing nothing, idempotent replay) and the pollers' Schedules following `enabled`.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTrackerPoll } from '../../shared/tracker/automation.js';
import { jqlDate } from '../../shared/tracker/policy.js';
import { trackerPollScheduleId } from '../../workflows/tracker-poll-definitions.js';
import { startFakeProvider, type FakeProvider } from '../code-agent/fake-provider.js';
import { startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { http } from '../helpers/stack.js';
import { startFakeTracker, type FakeTracker } from './fake-tracker.js';

let s: CrmStack;
let tracker: FakeTracker;
let provider: FakeProvider;
const SECRET = 'webhook-shared-secret';

const api = (method: string, path: string, body?: unknown, token = s.admin) =>
  http(s.r.stack.url, method, path, { token, body });
const apply = async (content: string) => {
  const res = await api('POST', '/api/config/setup/apply-partial', { content });
  expect(res.status, res.text).toBe(200);
};
const pollNow = (body: Record<string, unknown>) => api('POST', '/api/config/tracker-automation/poll-now', body);
const sql = (text: string, params: unknown[] = []) => query(s.r.stack.db.url, text, params);
const eventCount = async (kind?: string) =>
  (
    await sql(
      `select count(*)::int as n from tracker_ledger_events${kind ? ' where kind = $1' : ''}`,
      kind ? [kind] : [],
    )
  )[0]!.n as number;
const runCount = async () => (await sql('select count(*)::int as n from code_agent_runs'))[0]!.n as number;
const scheduleIds = () =>
  (['issue_tracker', 'service_desk'] as const).map((p) =>
    trackerPollScheduleId(p, s.r.stack.config.temporal.taskQueue),
  );
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

beforeAll(async () => {
  tracker = await startFakeTracker();
  provider = await startFakeProvider();
  s = await startCrmStack();
  for (const [name, key, base] of [
    ['tracker', 'tracker-token', tracker.url],
    ['agent_cloud', 'good-key', provider.url],
  ] as const) {
    const res = await api('POST', '/api/connections', {
      name,
      type: 'api_key',
      auth_mode: 'api_key',
      config: { api_key: key, api_base_url: base },
    });
    expect(res.status, res.text).toBe(201);
  }
});
afterAll(async () => {
  for (const id of scheduleIds())
    await s?.r.stack.api.deps.temporal.schedule
      .getHandle(id)
      .delete()
      .catch(() => undefined);
  await s?.close();
  await tracker?.close();
  await provider?.close();
});

describe('poll-now', () => {
  it('needs access_config_panel', async () => {
    const res = await http(s.r.stack.url, 'POST', '/api/config/tracker-automation/poll-now', {
      token: s.r.tokens.member,
      body: { poller: 'issue_tracker' },
    });
    expect(res.status, res.text).toBe(403);
    expect((await sql('select count(*)::int as n from tracker_poll_state'))[0]!.n).toBe(0);
  });

  it('answers TICKETING_SETUP_REQUIRED without a connection, then skips a poll-now before the interval', async () => {
    const first = await pollNow({ poller: 'service_desk' });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({
      skipped: false,
      result: { ok: false, error: { code: 'TICKETING_SETUP_REQUIRED' }, seen: 0 },
    });
    const again = await pollNow({ poller: 'service_desk' });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.skipped).toBe(true);
    expect(again.body.data.result).toBeNull();
    expect(again.body.data.next_poll_seconds).toBeGreaterThan(0);
    expect(again.body.data.next_poll_seconds).toBeLessThanOrEqual(300);
    const status = await api('GET', '/api/config/tracker-automation');
    expect(status.status, status.text).toBe(200);
    const sd = status.body.data.pollers.find((p: { poller: string }) => p.poller === 'service_desk');
    expect(sd.last_poll_started_at).not.toBeNull();
    expect(sd.poller_last_run_at).not.toBeNull();
    expect(sd.last_successful_poll_at).toBeNull();
    expect(sd.last_error).toMatch(/TICKETING_SETUP_REQUIRED/);
    expect(sd.schedule_id).toBe(`tracker-poll-service-desk@${s.r.stack.config.temporal.taskQueue}`);
  });

  it('refuses undeclared fields and unknown pollers, running nothing', async () => {
    const before = await sql('select count(*)::int as n from tracker_poll_state');
    expect((await pollNow({ poller: 'issue_tracker', extra: 1 })).status).toBe(422);
    expect((await pollNow({ poller: 'mailbox' })).status).toBe(400);
    expect((await pollNow({ poller: 'issue_tracker', lookback_minutes: 0 })).status).toBe(400);
    expect(await sql('select count(*)::int as n from tracker_poll_state')).toEqual(before);
  });
});

describe('ledger and dispatch', () => {
  it('records new tickets, starts one code-agent run for the eligible one, and reads the window', async () => {
    await apply(
      [
        'enhancements:',
        '  tracker_automation:',
        '    enabled: true',
        '    connection_name: tracker',
        '  code_agent:',
        '    enabled: true',
        '    connection_name: agent_cloud',
        '    target_repo_url: https://git.example/acme/app',
        '',
      ].join('\n'),
    );
    tracker.issues = [
      { key: 'APP-1', summary: 'Fix the export', status: 'To Do', updated: minutesAgo(5), labels: ['ai-agent'] },
      { key: 'APP-2', summary: 'Write the manual', status: 'To Do', updated: minutesAgo(5) },
      { key: 'APP-3', summary: 'Too old for the window', status: 'To Do', updated: minutesAgo(200) },
    ];
    const res = await pollNow({ poller: 'issue_tracker', lookback_minutes: 60 });
    expect(res.status, res.text).toBe(200);
    const result = res.body.data.result;
    expect(result).toMatchObject({
      ok: true,
      error: null,
      seen: 2,
      dispatched: 1,
      events: { recorded: 2, dispatched: 1 },
    });
    expect(Date.parse(result.started_at) - Date.parse(result.window_start)).toBe(60 * 60_000);
    expect(tracker.searches.at(-1)).toBe(`updated >= "${jqlDate(new Date(result.window_start))}" ORDER BY updated ASC`);
    const runs = await sql('select ticket_key, requested_by, prompt from code_agent_runs');
    expect(runs).toEqual([
      { ticket_key: 'APP-1', requested_by: 'system:tracker-automation', prompt: 'Resolve APP-1: Fix the export' },
    ]);
    const [row] = await sql(
      "select work_state, dispatched_run_id from tracker_requests where source = 'issue_tracker' and issue_key = 'APP-1'",
    );
    expect(row).toMatchObject({ work_state: 'dispatched', dispatched_run_id: expect.stringMatching(/^car_/) });
    // The poll starts the run's workflow; its remote create follows on the worker, after the poll answered.
    await expect.poll(() => provider.runs.length).toBe(1);
    const wfId = `tracker-poll-now/issue_tracker/${res.headers.get('x-request-id')}`;
    await recordHistory('tracker-poll-issue-tracker', s.r.stack.api.deps.temporal.workflow.getHandle(wfId));
  });

  it('records metadata_changed and provider_status_observed once each; a title change does not redispatch', async () => {
    tracker.issues[0] = { ...tracker.issues[0]!, summary: 'Fix the CSV export', updated: minutesAgo(1) };
    tracker.issues[1] = { ...tracker.issues[1]!, status: 'Done', updated: minutesAgo(1) };
    const res = await pollNow({ poller: 'issue_tracker', lookback_minutes: 60 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toMatchObject({
      ok: true,
      seen: 2,
      dispatched: 0,
      events: { metadata_changed: 1, provider_status_observed: 1 },
    });
    expect(await runCount()).toBe(1);
    const [app1] = await sql("select summary, work_state from tracker_requests where issue_key = 'APP-1'");
    expect(app1).toEqual({ summary: 'Fix the CSV export', work_state: 'dispatched' });
    const [app2] = await sql("select provider_status, work_state from tracker_requests where issue_key = 'APP-2'");
    expect(app2).toEqual({ provider_status: 'Done', work_state: 'done' });
    const [changed] = await sql("select detail from tracker_ledger_events where kind = 'metadata_changed'");
    expect(changed!.detail).toEqual({ from: 'Fix the export', to: 'Fix the CSV export' });
    const [observed] = await sql("select detail from tracker_ledger_events where kind = 'provider_status_observed'");
    expect(observed!.detail).toEqual({ provider_status: 'Done', from: 'new', to: 'done' });

    // The same tickets again: nothing new.
    const total = await eventCount();
    const again = await pollNow({ poller: 'issue_tracker', lookback_minutes: 60 });
    expect(again.body.data.result).toMatchObject({ ok: true, seen: 2, dispatched: 0, events: {} });
    expect(await eventCount()).toBe(total);
    expect(await eventCount('metadata_changed')).toBe(1);
    expect(await eventCount('provider_status_observed')).toBe(1);
    expect(await runCount()).toBe(1);
  });

  it('steady state: the window starts 600 s before the last successful poll (injected clock)', async () => {
    const deps = s.r.stack.api.deps;
    const [state] = await sql("select last_successful_poll_at from tracker_poll_state where poller = 'issue_tracker'");
    const last = new Date(state!.last_successful_poll_at as string);
    const clock = new Date(last.getTime() + 3 * 3600_000);
    const result = await runTrackerPoll(
      { orm: deps.orm, settings: deps.settings, config: deps.config, temporal: deps.temporal },
      { poller: 'issue_tracker', trigger: 'schedule' },
      () => clock,
    );
    expect(result.ok).toBe(true);
    expect(result.window_start).toBe(new Date(last.getTime() - 600_000).toISOString());
    expect(tracker.searches.at(-1)).toContain(`updated >= "${jqlDate(new Date(last.getTime() - 600_000))}"`);
    const [after] = await sql(
      "select last_successful_poll_at, poller_last_run_at from tracker_poll_state where poller = 'issue_tracker'",
    );
    expect(new Date(after!.last_successful_poll_at as string).toISOString()).toBe(clock.toISOString());
    expect(new Date(after!.poller_last_run_at as string).toISOString()).toBe(clock.toISOString());
  });

  it('a tracker failure is the poll outcome and keeps last_successful_poll_at', async () => {
    const [before] = await sql("select last_successful_poll_at from tracker_poll_state where poller = 'issue_tracker'");
    tracker.failWith = 503;
    try {
      const res = await pollNow({ poller: 'issue_tracker', lookback_minutes: 5 });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.result).toMatchObject({ ok: false, error: { code: 'tracker_refused' } });
    } finally {
      tracker.failWith = null;
    }
    const [after] = await sql(
      "select last_successful_poll_at, last_error from tracker_poll_state where poller = 'issue_tracker'",
    );
    expect(after!.last_successful_poll_at).toEqual(before!.last_successful_poll_at);
    expect(after!.last_error).toMatch(/tracker_refused/);
  });
});

describe('service-desk webhook', () => {
  const path = '/api/config/tracker-automation/service-desk/webhook';
  const payload = (status: string, updated: string) =>
    JSON.stringify({
      webhookEvent: 'jira:issue_updated',
      issue: { key: 'SD-7', fields: { summary: 'Printer on fire', status: { name: status }, updated } },
    });
  const sign = (raw: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
  const send = (raw: string, signature?: string) =>
    http(s.r.stack.url, 'POST', path, {
      raw,
      headers: { 'content-type': 'application/json', ...(signature ? { 'x-webhook-signature': signature } : {}) },
    });
  const sdRows = async () =>
    (await sql("select count(*)::int as n from tracker_requests where source = 'service_desk'"))[0]!.n as number;

  it('answers 401 while no secret is configured, writing nothing', async () => {
    const raw = payload('Open', '2026-11-23T10:00:00.000+0000');
    const res = await send(raw, sign(raw));
    expect(res.status, res.text).toBe(401);
    expect(res.body.error_type).toBe('authentication');
    expect(await sdRows()).toBe(0);
  });

  it('refuses a missing or wrong signature (401, nothing written) and records a signed payload once', async () => {
    await apply(`enhancements:\n  tracker_automation:\n    service_desk_webhook_secret: ${SECRET}\n`);
    const events = await eventCount();
    const raw = payload('Open', '2026-11-23T10:00:00.000+0000');
    for (const sig of [undefined, sign(raw, 'another-secret'), 'sha256=zz', sign(`${raw} `)]) {
      const res = await send(raw, sig);
      expect(res.status, res.text).toBe(401);
      expect(res.body.error_type).toBe('authentication');
    }
    expect(await sdRows()).toBe(0);
    expect(await eventCount()).toBe(events);

    const ok = await send(raw, sign(raw));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toEqual({ issue_key: 'SD-7', events: ['recorded'], dispatched: false });
    const replay = await send(raw, sign(raw));
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body.data).toEqual({ issue_key: 'SD-7', events: [], dispatched: false });
    expect(await sdRows()).toBe(1);
    expect(await eventCount()).toBe(events + 1);

    const waiting = payload('Waiting for customer', '2026-11-23T11:00:00.000+0000');
    for (let i = 0; i < 2; i++) {
      const res = await send(waiting, sign(waiting));
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.events).toEqual(i === 0 ? ['provider_status_observed'] : []);
    }
    // A late replay of the older payload changes nothing.
    expect((await send(raw, sign(raw))).body.data.events).toEqual([]);
    const [row] = await sql("select provider_status, work_state from tracker_requests where issue_key = 'SD-7'");
    expect(row).toEqual({ provider_status: 'Waiting for customer', work_state: 'needs_info' });
    const observed = await sql(
      "select count(*)::int as n from tracker_ledger_events where issue_key = 'SD-7' and kind = 'provider_status_observed'",
    );
    expect(observed[0]!.n).toBe(1);
  });

  it('the status read shows the state and events, never the secret', async () => {
    const res = await api('GET', '/api/config/tracker-automation');
    expect(res.status, res.text).toBe(200);
    expect(res.text).not.toContain(SECRET);
    expect(res.body.data.settings).toMatchObject({
      enabled: true,
      connection_name: 'tracker',
      webhook_secret_configured: true,
      eligible_labels: ['ai-agent'],
    });
    const kinds = res.body.data.recent_events.map((e: { kind: string }) => e.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(['recorded', 'dispatched', 'metadata_changed', 'provider_status_observed']),
    );
  });
});

describe('poller schedules', () => {
  it('exist per poller at the interval, paused when automation is disabled, and follow the interval', async () => {
    const client = s.r.stack.api.deps.temporal;
    const describe = (id: string) => client.schedule.getHandle(id).describe();
    // Enabled earlier in this file: both running at the default 300 s.
    for (const id of scheduleIds()) {
      const d = await describe(id);
      expect(d.state.paused).toBe(false);
      expect(d.spec.intervals?.[0]?.every).toBe(300_000);
      expect(d.action).toMatchObject({ type: 'startWorkflow', workflowType: 'trackerPollWorkflow' });
    }
    await apply('enhancements:\n  tracker_automation:\n    enabled: false\n    poll_interval_seconds: 120\n');
    for (const id of scheduleIds()) {
      const d = await describe(id);
      expect(d.state.paused).toBe(true);
      expect(d.spec.intervals?.[0]?.every).toBe(120_000);
    }
    const flag = await api('GET', '/api/config/frontend');
    expect(flag.body.data.jira_automation_enabled).toBe(false);
    await apply('enhancements:\n  tracker_automation:\n    enabled: true\n');
    for (const id of scheduleIds()) expect((await describe(id)).state.paused).toBe(false);
    expect((await api('GET', '/api/config/frontend')).body.data.jira_automation_enabled).toBe(true);
  });
});
