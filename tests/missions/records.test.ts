/**
 * Project records over real HTTP: list and detail typed exactly as the spec lists, notes appended
 * through the `mission` tool (never edited), server records, visibility, the newest-100 limit, the
 * blueprint chain with and without a root thread, and the system-test-lite report escaping hostile
 * mission content.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { Stack } from '../helpers/stack.js';
import { startMissionStack, until, type MissionStack } from './support.js';

let s: MissionStack;
let stack: Stack;

beforeAll(async () => {
  s = await startMissionStack('records-test-');
  stack = s.stack;
});
afterAll(() => s?.close());

const api: MissionStack['api'] = (...args) => s.api(...args);
const tool = (who: string, args: unknown) => api('POST', '/api/tool_call', who, { tool: 'mission', arguments: args });

const HOSTILE = `<script>alert("x")</script> 'quoted' | [link](javascript:alert(1))`;

const phases = [
  {
    id: 'gather',
    name: 'Gather',
    goal: 'Collect churned accounts',
    agents: ['analyst'],
    prompts: [{ text: 'Query the churn table' }],
    questions: [{ id: 'threshold', content: `Which threshold? ${HOSTILE}`, priority: 'high' }],
  },
  {
    id: 'report',
    name: 'Report',
    goal: 'Write the report',
    goals: [{ id: 'report-written', name: HOSTILE, acceptance_criterion: 'one "section" per table' }],
    agents: ['writer'],
    prompts: [{ text: 'Write the report' }],
  },
];

const LIST_KEYS = [
  'closed_at',
  'created_at',
  'goal_total',
  'id',
  'last_note',
  'name',
  'opened_by',
  'plan_incomplete',
  'planned',
  'principal',
  'project_type',
  'status_counts',
  'thread_id',
].sort();
const DETAIL_KEYS = [
  ...LIST_KEYS,
  'assets',
  'closed_reason',
  'goals',
  'live_successor',
  'live_successor_looked_up',
  'live_successor_undetermined',
  'note_sequence',
  'notes',
  'parameter_words',
  'parameters',
  'phase_outcomes',
  'plan_banner',
  'scope',
].sort();
const NOTE_KEYS = [
  'actor',
  'asset',
  'at',
  'evidence',
  'finding',
  'goal',
  'id',
  'input_versions',
  'person_turn',
  'previous_status',
  'principal',
  'sequence',
  'server_check_result',
  'status',
  'verification',
  'verification_reason',
  'waive_reason',
].sort();
const GOAL_KEYS = [
  'acceptance_criterion',
  'asset_refs',
  'id',
  'input_versions',
  'name',
  'planned',
  'preconditions',
  'server_records',
  'skill_ref',
  'status',
  'status_qualifier',
].sort();

const keys = (o: object) => Object.keys(o).sort();

describe('project records over HTTP', () => {
  let id = '';
  let rootThread = '';

  it('lists a running mission with exactly the spec fields; thread_id and include_people filters', async () => {
    expect((await api('POST', '/api/blueprints/', 'olivia', { blueprint_name: 'churn', phases })).status).toBe(201);
    const started = await api('POST', '/api/projects', 'olivia', {
      blueprint_name: 'churn',
      name: 'Churn November',
      parameters: { month: 'November 2026', region: 'EMEA-north' },
    });
    expect(started.status).toBe(201);
    id = started.body.data.id;
    const waiting = await until(
      () => api('GET', '/api/projects/awaiting-input', 'olivia'),
      (r) => r.body.items.length === 1,
    );
    rootThread = waiting.body.items[0].root_thread_id;

    const list = await api('GET', '/api/projects/records', 'olivia');
    expect(list.status).toBe(200);
    expect(keys(list.body.data)).toEqual(['generated_at', 'items', 'people', 'truncated']);
    expect(list.body.data.truncated).toBe(false);
    expect(list.body.data.people).toEqual({});
    expect(Number.isNaN(Date.parse(list.body.data.generated_at))).toBe(false);
    const [item] = list.body.data.items;
    expect(keys(item)).toEqual(LIST_KEYS);
    expect(item).toMatchObject({
      id,
      name: 'Churn November',
      project_type: 'mission',
      principal: 'olivia',
      opened_by: 'olivia',
      thread_id: rootThread,
      closed_at: null,
      goal_total: 2,
      status_counts: { planned: 1, in_progress: 1, met: 0, waived: 0 },
      last_note: null,
      plan_incomplete: false,
      planned: { gather: { total: 0, done: 0 }, 'report-written': { total: 0, done: 0 } },
    });

    const byThread = await api('GET', `/api/projects/records?thread_id=${rootThread}`, 'olivia');
    expect(byThread.body.data.items.map((i: { id: string }) => i.id)).toEqual([id]);
    const other = await api('GET', '/api/projects/records?thread_id=mcp_nothing', 'olivia');
    expect(other.body.data.items).toEqual([]);
    const people = await api('GET', '/api/projects/records?include_people=true', 'olivia');
    expect(people.body.data.people).toEqual({ olivia: 'OLIVIA' });
    expect((await api('GET', '/api/projects/records?status=completed', 'olivia')).body.data.items).toEqual([]);
    expect((await api('GET', '/api/projects/records?status=exploded', 'olivia')).status).toBe(400);

    // Others see nothing of it; the detail answers 404 for them and for unknown ids.
    expect((await api('GET', '/api/projects/records', 'sam')).body.data.items).toEqual([]);
    expect((await api('GET', `/api/projects/records/${id}`, 'sam')).status).toBe(404);
    expect((await api('GET', `/api/projects/records/prj_${'0'.repeat(32)}`, 'olivia')).status).toBe(404);
    expect((await api('GET', '/api/projects/records/nope', 'olivia')).status).toBe(400);
    expect((await api('GET', '/api/projects/records', '')).status).toBe(401);
    expect((await api('GET', '/api/projects/records', 'root')).body.data.items).toHaveLength(1);
  });

  it('appends notes and server records through the mission tool; notes are never edited', async () => {
    const first = await tool('olivia', {
      action: 'RECORD_NOTE',
      project_id: id,
      goal: 'gather',
      status: 'in_progress',
      evidence: 'run-1',
      asset: 'tbl.churn',
      verification: 'inconclusive',
      verification_reason: 'no run yet',
      person_turn: true,
      input_versions: { 'tbl.churn': 'v3' },
    });
    expect(first.status).toBe(200);
    expect(keys(first.body.data.result)).toEqual(NOTE_KEYS);
    expect(first.body.data.result).toMatchObject({
      sequence: 1,
      goal: 'gather',
      actor: 'olivia',
      principal: 'olivia',
      previous_status: 'in_progress',
      status: 'in_progress',
      server_check_result: 'not_found',
      person_turn: true,
    });
    const record = await tool('olivia', {
      action: 'RECORD_SERVER_RECORD',
      project_id: id,
      goal: 'gather',
      kind: 'databricks_run',
      evidence_id: 'run-1',
      target_table: 'analytics.churn',
      state: 'running',
    });
    expect(record.status).toBe(200);
    expect(record.body.data.result).toMatchObject({ kind: 'databricks_run', state: 'running', attempts: 1 });
    const second = await tool('olivia', {
      action: 'RECORD_NOTE',
      project_id: id,
      goal: 'gather',
      status: 'in_progress',
      evidence: 'run-1',
      verification: 'passed',
    });
    expect(second.body.data.result).toMatchObject({ sequence: 2, server_check_result: 'matched' });
    // The first note is unchanged: a second note is a new row with the next sequence.
    expect(
      await query(stack.db.url, 'select sequence, verification from project_notes where project_id = $1 order by 1', [
        id,
      ]),
    ).toEqual([
      { sequence: 1, verification: 'inconclusive' },
      { sequence: 2, verification: 'passed' },
    ]);
    const events = await query(
      stack.db.url,
      `select kind from project_events where project_id = $1 and kind in ('note_recorded', 'server_record') order by seq`,
      [id],
    );
    expect(events.map((e) => e.kind)).toEqual(['note_recorded', 'server_record', 'note_recorded']);

    // Refusals write nothing.
    const base = { action: 'RECORD_NOTE', project_id: id, goal: 'gather' };
    expect((await tool('olivia', { ...base, goal: 'nope', status: 'met' })).status).toBe(404);
    expect((await tool('olivia', { ...base, status: 'waived' })).status).toBe(400);
    expect((await tool('olivia', { ...base, status: 'met', waive_reason: 'x' })).status).toBe(400);
    expect((await tool('olivia', { ...base, status: 'met', verification_reason: 'x' })).status).toBe(400);
    expect((await tool('olivia', { ...base, status: 'done' })).status).toBe(400);
    expect((await tool('sam', { ...base, status: 'met' })).status).toBe(404);
    expect(
      (
        await tool('olivia', {
          action: 'RECORD_SERVER_RECORD',
          project_id: id,
          goal: 'gather',
          kind: 'ftp_upload',
          evidence_id: 'x',
          state: 'running',
        })
      ).status,
    ).toBe(400);
    expect(await query(stack.db.url, 'select count(*)::int as n from project_notes')).toEqual([{ n: 2 }]);
    expect(await query(stack.db.url, 'select count(*)::int as n from project_server_records')).toEqual([{ n: 1 }]);

    // A repeated server report counts an attempt.
    const again = await tool('olivia', {
      action: 'RECORD_SERVER_RECORD',
      project_id: id,
      goal: 'gather',
      kind: 'databricks_run',
      evidence_id: 'run-1',
      target_table: 'analytics.churn',
      state: 'failed',
      reason: 'cluster gone',
    });
    expect(again.body.data.result).toMatchObject({ state: 'failed', attempts: 2, reason: 'cluster gone' });
  });

  it('answers the detail with every field; the blueprint chain with its root thread', async () => {
    const detail = await api('GET', `/api/projects/records/${id}`, 'olivia');
    expect(detail.status).toBe(200);
    const d = detail.body.data;
    expect(keys(d)).toEqual(DETAIL_KEYS);
    expect(d).toMatchObject({
      parameters: { month: 'November 2026', region: 'EMEA-north' },
      note_sequence: 2,
      assets: ['tbl.churn'],
      parameter_words: ['2026', 'emea', 'north', 'november'],
      scope: { blueprint_name: 'churn', phases: ['gather', 'report'] },
      plan_incomplete: true,
      plan_banner: '0 of 1 planned server records done',
      closed_reason: null,
      live_successor: null,
      live_successor_undetermined: false,
      live_successor_looked_up: false,
      last_note: { goal: 'gather', actor: 'olivia', kind: 'verification', verification: 'passed', person_turn: false },
    });
    expect(d.notes.map((n: { sequence: number }) => n.sequence)).toEqual([1, 2]);
    for (const n of d.notes) expect(keys(n)).toEqual(NOTE_KEYS);
    const [gather, report] = d.goals;
    for (const g of d.goals) expect(keys(g)).toEqual(GOAL_KEYS);
    expect(gather).toMatchObject({
      id: 'gather',
      status: 'in_progress',
      skill_ref: 'churn#gather',
      preconditions: [],
      asset_refs: ['tbl.churn'],
      input_versions: { 'tbl.churn': 'v3' },
      status_qualifier: { planned_scope: 'partial' },
      planned: { total: 1, done: 0 },
    });
    expect(gather.server_records).toHaveLength(1);
    expect(keys(gather.server_records[0])).toEqual(
      [
        'asset_id',
        'attempts',
        'created_at',
        'evidence_id',
        'kind',
        'reason',
        'state',
        'target_table',
        'updated_at',
      ].sort(),
    );
    expect(report).toMatchObject({ id: 'report-written', status: 'planned', preconditions: ['gather'] });

    const chain = await api('GET', `/api/projects/${id}/blueprint-chain`, 'olivia');
    expect(chain.status).toBe(200);
    expect(chain.body.data).toEqual({
      project_id: id,
      nodes: [{ phase: 'gather', agent_id: 'analyst', thread_id: rootThread, root: true, status: 'active' }],
    });
    expect((await api('GET', `/api/projects/${id}/blueprint-chain`, 'sam')).status).toBe(404);
  });

  it('records a note per goal when phases complete; an ended mission takes no notes; live successor', async () => {
    const [q] = await query(stack.db.url, 'select question_set_id from project_questions where project_id = $1', [id]);
    const answered = await api('POST', `/api/projects/${id}/questions/${q!.question_set_id}/answers`, 'olivia', {
      answers: [{ question_id: 'threshold', answer: `30 days ${HOSTILE}` }],
    });
    expect(answered.status).toBe(200);
    const done = await until(
      () => api('GET', `/api/projects/records/${id}`, 'olivia'),
      (r) => r.body.data.closed_at !== null,
    );
    const notes = done.body.data.notes as Array<Record<string, unknown>>;
    expect(notes.map((n) => [n.sequence, n.goal, n.actor, n.previous_status, n.status])).toEqual([
      [1, 'gather', 'olivia', 'in_progress', 'in_progress'],
      [2, 'gather', 'olivia', 'in_progress', 'in_progress'],
      [3, 'gather', 'mission', 'in_progress', 'met'],
      [4, 'report-written', 'mission', 'in_progress', 'met'],
    ]);
    expect(done.body.data.status_counts).toEqual({ planned: 0, in_progress: 0, met: 2, waived: 0 });
    expect(done.body.data.live_successor_looked_up).toBe(true);
    expect(done.body.data.live_successor).toBeNull();

    const late = await tool('olivia', {
      action: 'RECORD_NOTE',
      project_id: id,
      goal: 'gather',
      status: 'waived',
      waive_reason: 'x',
    });
    expect(late.status).toBe(409);
    expect(late.body.payload.code).toBe('mission_ended');

    const chain = await api('GET', `/api/projects/${id}/blueprint-chain`, 'olivia');
    expect(chain.body.data.nodes).toEqual([
      { phase: 'gather', agent_id: 'analyst', thread_id: rootThread, root: true, status: 'completed' },
      { phase: 'report', agent_id: 'writer', thread_id: expect.any(String), root: false, status: 'completed' },
    ]);

    const next = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'churn', name: 'Churn December' });
    const succ = await api('GET', `/api/projects/records/${id}`, 'olivia');
    expect(succ.body.data).toMatchObject({
      live_successor: { id: next.body.data.id, name: 'Churn December' },
      live_successor_undetermined: false,
      live_successor_looked_up: true,
    });
    expect((await api('GET', '/api/projects/records?status=completed', 'olivia')).body.data.items).toHaveLength(1);
  });

  it('builds the system-test-lite report with hostile content escaped', async () => {
    const r = await api('GET', `/api/projects/${id}/reports/system-test-lite`, 'olivia');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const rep = r.body.data;
    expect(rep).toMatchObject({
      project_id: id,
      report: 'system-test-lite',
      format: 'markdown',
      summary: { goals_total: 2, goals_met_or_waived: 2, notes: 4, questions: 1 },
    });
    const md = rep.markdown as string;
    expect(md).not.toContain('<script>');
    expect(md).not.toContain('"x"');
    expect(md).not.toContain("'quoted'");
    expect(md).not.toContain('](javascript');
    expect(md).toContain('&#60;script&#62;alert\\(&#34;x&#34;\\)&#60;/script&#62;');
    expect(md).toContain('&#39;quoted&#39; \\| \\[link\\]\\(javascript:alert\\(1\\)\\)');
    expect(md).toContain('one &#34;section&#34; per table');
    expect(md).toContain('# System test (lite): Churn November');
    expect((await api('GET', `/api/projects/${id}/reports/system-test-lite`, 'sam')).status).toBe(404);
  });

  it('answers an empty chain for a mission without a root thread', async () => {
    const asks = [{ id: 'ask', name: 'Ask', goal: 'Agree the scope', questions: [{ id: 'scope', content: 'Which?' }] }];
    expect((await api('POST', '/api/blueprints/', 'sam', { blueprint_name: 'asks-only', phases: asks })).status).toBe(
      201,
    );
    const r = await api('POST', '/api/projects', 'sam', { blueprint_name: 'asks-only' });
    expect(r.status).toBe(201);
    const chain = await api('GET', `/api/projects/${r.body.data.id}/blueprint-chain`, 'sam');
    expect(chain.status).toBe(200);
    expect(chain.body.data).toEqual({ project_id: r.body.data.id, nodes: [] });
  });

  it('lists the newest 100 visible records and says truncated when there are more', async () => {
    await query(
      stack.db.url,
      `insert into projects (id, tenant, name, blueprint_name, blueprint_id, blueprint_commit, status, requested_by,
         phases_total, started_at)
       select 'prj_' || lpad(to_hex(n), 32, '0'), 'default', 'bulk ' || n, 'churn', 'bp', 'c', 'closed', 'olivia', 1,
         now() + (n || ' seconds')::interval
       from generate_series(1, 105) n`,
    );
    const list = await api('GET', '/api/projects/records', 'olivia');
    expect(list.body.data.truncated).toBe(true);
    expect(list.body.data.items).toHaveLength(100);
    expect(list.body.data.items[0].name).toBe('bulk 105');
    expect(list.body.data.items[99].name).toBe('bulk 6');
    expect((await api('GET', '/api/projects/records', 'sam')).body.data.truncated).toBe(false);
  });
});
