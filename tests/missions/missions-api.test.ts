/**
 * Missions over real HTTP: a mission from a test blueprint through two phases against the fake
 * model, its question answered through the route; status steering; visibility; awaiting-input.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managedAgentId } from '../../shared/managed-sources/hydrate.js';
import { query } from '../helpers/db.js';
import { insertImportedAgent } from '../helpers/managed-agents.js';
import type { FakeLlm } from '../helpers/fake-llm.js';
import type { Stack } from '../helpers/stack.js';
import { startMissionStack, until, type MissionStack } from './support.js';

let s: MissionStack;
let llm: FakeLlm;
let stack: Stack;

beforeAll(async () => {
  s = await startMissionStack('mission-test-', {
    // A worker cache of 2: missions that wait are evicted and replay when answered or steered.
    TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS: '2',
  });
  ({ stack, llm } = s);
});
afterAll(() => s?.close());

const api: MissionStack['api'] = (...args) => s.api(...args);

const phases = [
  {
    id: 'gather',
    name: 'Gather',
    goal: 'Collect churned accounts',
    agents: ['analyst'],
    prompts: [{ text: 'Query the churn table' }],
    questions: [
      {
        id: 'threshold',
        content: 'Which <b>threshold</b>?',
        priority: 'high',
        category: 'scope',
        expected_response_type: 'choice',
        options: ['30 days', '60 days'],
        recommended: '30 days',
      },
    ],
  },
  {
    id: 'report',
    name: 'Report',
    goal: 'Write the report',
    goals: [
      { id: 'report-written', name: 'Report written', acceptance_criterion: 'one section per table' },
      { id: 'report-shared', name: 'Report shared' },
    ],
    agents: ['writer'],
    prompts: [{ text: 'Write the report' }],
  },
];

const projectOf = async (who: string, id: string) =>
  ((await api('GET', '/api/projects', who)).body.data.items as Array<Record<string, any>>).find((p) => p.id === id);

describe('missions over HTTP', () => {
  let projectId = '';

  it('refuses a start that would be bad input, writing nothing', async () => {
    expect((await api('POST', '/api/blueprints/', 'olivia', { blueprint_name: 'churn', phases })).status).toBe(201);
    expect((await api('POST', '/api/projects', 'olivia', { blueprint_name: 'no-such' })).status).toBe(404);
    // Sam may not view Olivia's blueprint: it does not exist for him.
    expect((await api('POST', '/api/projects', 'sam', { blueprint_name: 'churn' })).status).toBe(404);
    expect((await api('POST', '/api/projects', 'olivia', { blueprint_name: 'churn', extra: 1 })).status).toBe(422);
    const ghost = await api('POST', '/api/blueprints/', 'olivia', {
      blueprint_name: 'ghost',
      phases: [{ id: 'p', name: 'P', goal: 'g', agents: ['nobody'] }],
    });
    expect(ghost.status).toBe(201);
    const refused = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'ghost' });
    expect(refused.status).toBe(409);
    expect(refused.body.payload).toMatchObject({ code: 'unknown_agents', agents: ['nobody'] });
    expect(await query(stack.db.url, 'select count(*)::int as n from projects')).toEqual([{ n: 0 }]);
  });

  it('runs a mission through two phases; its question waits until answered through the route', async () => {
    const started = await api('POST', '/api/projects', 'olivia', {
      blueprint_name: 'churn',
      name: 'Churn November',
      parameters: { month: '2026-11' },
    });
    expect(started.status).toBe(201);
    projectId = started.body.data.id;
    expect(projectId).toMatch(/^prj_[0-9a-f]{32}$/);
    expect(started.body.data).toMatchObject({
      name: 'Churn November',
      blueprint_name: 'churn',
      status: 'running',
      requested_by: 'olivia',
      requested_by_display_name: 'OLIVIA',
      requested_by_email: 'olivia@example.test',
      progress: 0,
      stats: { phases_total: 2, phases_done: 0, goals_total: 3, goals_met: 0 },
    });
    expect(started.body.data.blueprint_commit).toMatch(/^[0-9a-f]{40}$/);

    const awaiting = await until(
      () => api('GET', '/api/projects/awaiting-input', 'olivia'),
      (r) => r.body.items.length === 1,
    );
    expect(awaiting.status).toBe(200);
    expect(awaiting.body.success).toBe(true);
    expect(awaiting.body.truncated).toBe(false);
    const item = awaiting.body.items[0];
    expect(item).toMatchObject({
      id: projectId,
      waiting_state: 'IN_PROGRESS_NEEDING_INPUT',
      blueprint_phase: 'gather',
      agents: ['analyst'],
    });
    const setId = item.questions[0].question_set_id;
    expect(item.questions).toEqual([
      {
        question_set_id: setId,
        question_id: 'threshold',
        phase: 'gather',
        priority: 'high',
        category: 'scope',
        content: 'Which <b>threshold</b>?',
        expected_response_type: 'choice',
        options: ['30 days', '60 days'],
        recommended: '30 days',
      },
    ]);
    // The phase prompt reached the analyst's thread (the root thread) and the model answered it.
    expect(item.root_thread_id).toMatch(/^mcp_[0-9a-f]{32}$/);
    const messages = await query(
      stack.db.url,
      'select role, content from conversation_messages where thread_id = $1 order by created_at',
      [item.root_thread_id],
    );
    expect(messages).toEqual([
      { role: 'user', content: 'Query the churn table' },
      { role: 'assistant', content: 'phase work done' },
    ]);
    // Others do not see it.
    expect((await api('GET', '/api/projects/awaiting-input', 'sam')).body.items).toEqual([]);
    expect(await projectOf('sam', projectId)).toBeUndefined();
    expect(await projectOf('root', projectId)).toBeDefined();

    // Refusals: unknown set 404, unknown question 400, someone who cannot see the mission 404.
    const base = `/api/projects/${projectId}/questions`;
    const noSet = await api('POST', `${base}/qs_${'0'.repeat(32)}_gather/answers`, 'olivia', {
      answers: [{ question_id: 'threshold', answer: 'x' }],
    });
    expect(noSet.status).toBe(404);
    const badQ = await api('POST', `${base}/${setId}/answers`, 'olivia', {
      answers: [{ question_id: 'nope', answer: 'x' }],
    });
    expect(badQ.status).toBe(400);
    expect(
      (await api('POST', `${base}/${setId}/answers`, 'sam', { answers: [{ question_id: 'threshold', answer: 'x' }] }))
        .status,
    ).toBe(404);

    const answered = await api('POST', `${base}/${setId}/answers`, 'olivia', {
      answers: [{ question_id: 'threshold', answer: '30 days' }],
    });
    expect(answered.status).toBe(200);
    expect(answered.body.data).toEqual({
      project_id: projectId,
      question_set_id: setId,
      answered: ['threshold'],
      remaining: 0,
      resumed: true,
    });
    const again = await api('POST', `${base}/${setId}/answers`, 'olivia', {
      answers: [{ question_id: 'threshold', answer: '60 days' }],
    });
    expect(again.status).toBe(409);

    const done = await until(
      () => projectOf('olivia', projectId),
      (p) => p?.status === 'completed',
    );
    expect(done).toMatchObject({
      progress: 1,
      waiting_state: 'NONE',
      agents: ['analyst', 'writer'],
      blueprint_phase: 'report',
      stats: { phases_total: 2, phases_done: 2, goals_total: 3, goals_met: 3, questions_open: 0 },
    });
    expect(done!.closed_at).not.toBeNull();
    expect(await query(stack.db.url, 'select id, status from project_goals order by position')).toEqual([
      { id: 'gather', status: 'met' },
      { id: 'report-written', status: 'met' },
      { id: 'report-shared', status: 'met' },
    ]);
    expect(
      await query(stack.db.url, 'select status, answer, answered_by from project_questions where project_id = $1', [
        projectId,
      ]),
    ).toEqual([{ status: 'answered', answer: '30 days', answered_by: 'olivia' }]);
    const kinds = await query(stack.db.url, 'select kind from project_events where project_id = $1 order by seq', [
      projectId,
    ]);
    expect(kinds.map((k) => k.kind)).toEqual([
      'created',
      'phase_started',
      'thread_opened',
      'questions_opened',
      'waiting_state',
      'questions_answered',
      'waiting_state',
      'phase_completed',
      'phase_started',
      'thread_opened',
      'phase_completed',
      'completed',
    ]);
    expect((await api('GET', '/api/projects/awaiting-input', 'olivia')).body.items).toEqual([]);
    // A completed mission cannot be steered.
    const late = await api('PUT', `/api/projects/${projectId}/status`, 'olivia', { action: 'pause' });
    expect(late.status).toBe(409);
    expect(late.body.payload.code).toBe('invalid_transition');
  });

  it('pauses, resumes and cancels through PUT status; invalid transitions answer 409', async () => {
    const started = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'churn' });
    const id = started.body.data.id as string;
    await until(
      () => projectOf('olivia', id),
      (p) => p?.waiting_state === 'IN_PROGRESS_NEEDING_INPUT',
    );
    const put = (who: string, body: unknown) => api('PUT', `/api/projects/${id}/status`, who, body);
    expect((await put('olivia', { action: 'resume' })).status).toBe(409);
    expect((await put('sam', { action: 'pause' })).status).toBe(404);
    const paused = await put('olivia', { action: 'pause' });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ project_id: id, previous_status: 'running', status: 'paused' });
    expect(paused.body.data.project.status).toBe('paused');
    expect((await put('olivia', { action: 'pause' })).status).toBe(409);
    expect((await put('olivia', { action: 'resume' })).body.data.status).toBe('running');
    const cancelled = await put('root', { action: 'cancel', reason: 'wrong month' });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.project).toMatchObject({
      status: 'cancelled',
      closed_reason: 'wrong month',
      waiting_state: 'NONE',
    });
    const after = await put('olivia', { action: 'resume' });
    expect(after.status).toBe(409);
    expect(after.body.error_type).toBe('conflict');
    expect((await put('olivia', { action: 'explode' })).status).toBe(400);
    const events = await query(
      stack.db.url,
      `select payload->>'status' as status from project_events where project_id = $1 and kind = 'status_changed' order by seq`,
      [id],
    );
    expect(events.map((e) => e.status)).toEqual(['paused', 'running', 'cancelled']);
    // A question of a cancelled mission cannot be answered.
    const q = await query(stack.db.url, 'select question_set_id from project_questions where project_id = $1', [id]);
    const answer = await api('POST', `/api/projects/${id}/questions/${q[0]!.question_set_id}/answers`, 'olivia', {
      answers: [{ question_id: 'threshold', answer: '30 days' }],
    });
    expect(answer.status).toBe(409);
  });

  it('offers the same through the mission tool (START, STATUS, ANSWER, SET_STATUS)', async () => {
    const call = (args: unknown) => api('POST', '/api/tool_call', 'olivia', { tool: 'mission', arguments: args });
    const started = await call({ action: 'START', blueprint_name: 'churn', name: 'By tool' });
    expect(started.status).toBe(200);
    const id = started.body.data.result.id as string;
    expect(started.body.data.result).toMatchObject({ name: 'By tool', status: 'running', requested_by: 'olivia' });
    const waiting = await until(
      () => call({ action: 'STATUS', project_id: id }),
      (r) => r.body.data.result.waiting_state === 'IN_PROGRESS_NEEDING_INPUT',
    );
    expect(waiting.body.data.result.stats.questions_open).toBe(1);
    const [q] = await query(stack.db.url, 'select question_set_id from project_questions where project_id = $1', [id]);
    const answered = await call({
      action: 'ANSWER',
      project_id: id,
      question_set_id: q!.question_set_id,
      answers: [{ question_id: 'threshold', answer: '60 days' }],
    });
    expect(answered.body.data.result).toMatchObject({ remaining: 0, resumed: true });
    await until(
      () => call({ action: 'STATUS', project_id: id }),
      (r) => r.body.data.result.status === 'completed',
    );
    const refused = await call({ action: 'SET_STATUS', project_id: id, status_action: 'close' });
    expect(refused.status).toBe(409);
    expect(
      (await api('POST', '/api/tool_call', 'sam', { tool: 'mission', arguments: { action: 'STATUS', project_id: id } }))
        .status,
    ).toBe(404);
  });

  it('starts a hidden built-in by name; it runs with the built-in agent', async () => {
    const r = await api('POST', '/api/projects', 'sam', { blueprint_name: 'platform-self-check' });
    expect(r.status).toBe(201);
    expect(r.body.data.blueprint_commit).toMatch(/^builtin-[0-9a-f]{40}$/);
    const done = await until(
      () => projectOf('sam', r.body.data.id),
      (p) => p?.status === 'completed',
    );
    expect(done).toMatchObject({ progress: 1, agents: ['eve'], stats: { goals_total: 1, goals_met: 1 } });
    expect(done!.root_thread_id).toMatch(/^mcp_[0-9a-f]{32}$/);
  });

  it('runs a built-in blueprint with the model: each goal is met on the reply it records as evidence', async () => {
    const calls = llm.requests.length;
    const r = await api('POST', '/api/projects', 'sam', { blueprint_name: 'data-quality-audit' });
    expect(r.status).toBe(201);
    const id = r.body.data.id as string;
    const done = await until(
      () => projectOf('sam', id),
      (p) => p?.status === 'completed',
    );
    expect(done).toMatchObject({ agents: ['eve'], stats: { phases_done: 2, goals_total: 2, goals_met: 2 } });
    // One model call per phase prompt (two phases, one prompt each, no tool calls).
    expect(llm.requests.length - calls).toBe(2);
    const replies = await query(
      stack.db.url,
      `select id::text as id from conversation_messages where thread_id = $1 and role = 'assistant' order by created_at`,
      [done!.root_thread_id],
    );
    expect(replies).toHaveLength(2);
    const detail = (await api('GET', `/api/projects/records/${id}`, 'sam')).body.data;
    expect(
      detail.notes.map((n: Record<string, unknown>) => [n.goal, n.status, n.evidence, n.server_check_result]),
    ).toEqual([
      ['profile', 'met', replies[0]!.id, 'matched'],
      ['report', 'met', replies[1]!.id, 'matched'],
    ]);
    expect(detail.phase_outcomes.map((o: { status: string }) => o.status)).toEqual(['completed', 'completed']);
  });

  it('resolves a phase agent named by an imported manifest id; two sources with that id refuse the start', async () => {
    const one = `src_${'c'.repeat(16)}`;
    await insertImportedAgent(stack.db.url, one, 'auditor', 'Auditor one');
    const audit = [{ id: 'audit', name: 'Audit', goal: 'Audit it', agents: ['auditor'], prompts: [{ text: 'Audit' }] }];
    expect((await api('POST', '/api/blueprints/', 'olivia', { blueprint_name: 'audit', phases: audit })).status).toBe(
      201,
    );
    const started = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'audit' });
    expect(started.status).toBe(201);
    const done = await until(
      () => projectOf('olivia', started.body.data.id),
      (p) => p?.status === 'completed',
    );
    expect(done).toMatchObject({ agents: [managedAgentId(one, 'auditor')], stats: { goals_met: 1 } });

    await insertImportedAgent(stack.db.url, `src_${'d'.repeat(16)}`, 'auditor', 'Auditor two');
    const before = await query(stack.db.url, 'select count(*)::int as n from projects');
    const refused = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'audit' });
    expect(refused.status).toBe(409);
    expect(refused.body.payload).toEqual({
      code: 'ambiguous_agents',
      agents: [
        {
          name: 'auditor',
          candidates: expect.arrayContaining([
            managedAgentId(one, 'auditor'),
            managedAgentId(`src_${'d'.repeat(16)}`, 'auditor'),
          ]),
        },
      ],
    });
    expect(await query(stack.db.url, 'select count(*)::int as n from projects')).toEqual(before);
  });

  it('does not meet goals when the model answers nothing: the phase says no_output', async () => {
    llm.respond = () => ({ content: '' });
    try {
      const r = await api('POST', '/api/projects', 'sam', { blueprint_name: 'pipeline-incident-triage' });
      const done = await until(
        () => projectOf('sam', r.body.data.id),
        (p) => p?.status === 'failed',
      );
      expect(done).toMatchObject({ agents: ['adam'], stats: { goals_met: 0 } });
      expect(done!.closed_reason).toMatch(/agent adam answered nothing/);
    } finally {
      llm.respond = () => ({ content: 'phase work done' });
    }
  });
});
