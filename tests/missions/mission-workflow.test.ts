/** The mission workflow in virtual time (time-skipping server) with stub activities. */
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  answerQuestionsUpdate,
  missionStateQuery,
  missionWorkflowId,
  questionSetId,
  setStatusUpdate,
  type MissionEventInput,
  type MissionInput,
  type MissionPhase,
  type MissionStateView,
} from '../../workflows/mission-definitions.js';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';
import { recordHistory } from '../helpers/histories.js';
import { startTimeSkipping, uniqueTaskQueue } from '../helpers/temporal.js';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

const DAY = 86_400;

const phases: MissionPhase[] = [
  {
    id: 'gather',
    name: 'Gather',
    agents: ['analyst'],
    goals: [{ id: 'list', name: 'List churned accounts', acceptance_criterion: 'one row per account' }],
    prompts: ['Query the churn table'],
    questions: [
      {
        id: 'threshold',
        content: 'Which threshold?',
        priority: 'high',
        category: 'scope',
        expected_response_type: 'choice',
        options: ['30 days', '60 days'],
        recommended: '30 days',
      },
      {
        id: 'owner',
        content: 'Who signs off?',
        priority: 'normal',
        category: null,
        expected_response_type: null,
        options: null,
        recommended: null,
      },
    ],
  },
  {
    id: 'report',
    name: 'Report',
    agents: ['analyst', 'writer'],
    goals: [{ id: 'report', name: 'Report written', acceptance_criterion: null }],
    prompts: ['Write the report'],
    questions: [],
  },
];

function harness() {
  const events: MissionEventInput[] = [];
  const prompts: Array<{ threadId: string; messageId: string; content: string }> = [];
  const activities = {
    missionProject: async ({ event }: { event: MissionEventInput }) => void events.push(event),
    missionOpenThread: async ({ agentId }: { agentId: string }) => ({ threadId: `thr_${agentId}` }),
    missionPostPrompt: async (p: { threadId: string; messageId: string; content: string }) => (
      prompts.push({ threadId: p.threadId, messageId: p.messageId, content: p.content }),
      { ok: true, messageId: `reply:${p.messageId}`, empty: false }
    ),
  };
  return { events, prompts, activities };
}

async function start(projectHex: string, stuckAfterSeconds: number, taskQueue: string, ps = phases) {
  const projectId = `prj_${projectHex.padEnd(32, '0')}`;
  const input: MissionInput = {
    projectId,
    tenant: 't1',
    requestedBy: 'u1',
    blueprintName: 'churn',
    blueprintCommit: 'c0ffee',
    startedAtMs: await env.currentTimeMs(),
    phases: ps,
    stuckAfterSeconds,
  };
  const handle = await env.client.workflow.start('missionWorkflow', {
    taskQueue,
    workflowId: missionWorkflowId(projectId),
    args: [input],
  });
  return { projectId, handle };
}

/** Polls the `state` query until `ok` holds (workflow progress, not wall-clock assertions). */
async function until(handle: WorkflowHandle, ok: (s: MissionStateView) => boolean): Promise<MissionStateView> {
  for (;;) {
    const s = await handle.query(missionStateQuery);
    if (ok(s)) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The smallest workflow cache the SDK allows: waiting missions are evicted and replay on their next
// task, as they do in production once more missions wait than TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS.
const worker = (taskQueue: string, activities: object) =>
  Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities,
    maxCachedWorkflows: 2,
    maxConcurrentWorkflowTaskExecutions: 2,
  });

describe('missionWorkflow', () => {
  it('walks two phases; a question set waits days until answered, then goals are met', async () => {
    const h = harness();
    const taskQueue = uniqueTaskQueue();
    const w = await worker(taskQueue, h.activities);
    await w.runUntil(async () => {
      const { projectId, handle } = await start('a1', 30 * DAY, taskQueue);
      const waiting = await until(handle, (s) => s.waiting_state === 'IN_PROGRESS_NEEDING_INPUT');
      expect(waiting).toMatchObject({
        status: 'running',
        blueprint_phase: 'gather',
        progress: 0,
        agents: ['analyst'],
        root_thread_id: 'thr_analyst',
        stats: { phases_total: 2, phases_done: 0, goals_total: 2, goals_met: 0, questions_open: 2 },
      });
      // Days pass in virtual time: still waiting, nothing moved on.
      await env.sleep(3 * DAY * 1000);
      const later = await handle.query(missionStateQuery);
      expect(later).toMatchObject({ waiting_state: 'IN_PROGRESS_NEEDING_INPUT', blueprint_phase: 'gather' });
      expect(h.events.filter((e) => e.kind === 'phase_completed')).toHaveLength(0);

      const setId = questionSetId(projectId, 'gather');
      const first = await handle.executeUpdate(answerQuestionsUpdate, {
        args: [{ question_set_id: setId, answers: [{ question_id: 'threshold', answer: '30 days' }], by: 'u1' }],
      });
      expect(first).toEqual({ question_set_id: setId, answered: ['threshold'], remaining: 1, resumed: false });
      // An answered question cannot be answered again; an unknown set is refused.
      const again = await handle
        .executeUpdate(answerQuestionsUpdate, {
          args: [{ question_set_id: setId, answers: [{ question_id: 'threshold', answer: 'x' }], by: 'u1' }],
        })
        .catch((e: unknown) => e);
      expect(again).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(((again as WorkflowUpdateFailedError).cause as ApplicationFailure).details).toEqual([
        'question_set_answered',
      ]);
      const unknown = await handle
        .executeUpdate(answerQuestionsUpdate, {
          args: [{ question_set_id: 'qs_nope', answers: [{ question_id: 'owner', answer: 'x' }], by: 'u1' }],
        })
        .catch((e: unknown) => e);
      expect(((unknown as WorkflowUpdateFailedError).cause as ApplicationFailure).details).toEqual([
        'unknown_question_set',
      ]);

      const second = await handle.executeUpdate(answerQuestionsUpdate, {
        args: [{ question_set_id: setId, answers: [{ question_id: 'owner', answer: 'Dana' }], by: 'u2' }],
      });
      expect(second.resumed).toBe(true);
      await handle.result();
      const done = await handle.query(missionStateQuery);
      expect(done).toMatchObject({
        status: 'completed',
        waiting_state: 'NONE',
        progress: 1,
        agents: ['analyst', 'writer'],
        stats: { phases_done: 2, goals_met: 2, questions_open: 0 },
      });
      expect(h.events.map((e) => e.kind)).toEqual([
        'phase_started',
        'thread_opened',
        'questions_opened',
        'waiting_state',
        'questions_answered',
        'questions_answered',
        'waiting_state',
        'phase_completed',
        'phase_started',
        'thread_opened',
        'phase_completed',
        'completed',
      ]);
      expect(h.events.filter((e) => e.kind === 'thread_opened')).toEqual([
        { kind: 'thread_opened', agent_id: 'analyst', thread_id: 'thr_analyst', root: true },
        { kind: 'thread_opened', agent_id: 'writer', thread_id: 'thr_writer', root: false },
      ]);
      expect(h.prompts.map((p) => [p.threadId, p.content])).toEqual([
        ['thr_analyst', 'Query the churn table'],
        ['thr_analyst', 'Write the report'],
        ['thr_writer', 'Write the report'],
      ]);
      const sa = (await handle.describe()).typedSearchAttributes;
      expect(sa.get(SearchAttributes.missionStatus)).toBe('completed');
      await recordHistory('mission-two-phases-question-answered', handle);
    });
  });

  it('is STUCK after stuck_after_seconds without progress (a durable timer), cleared when answered', async () => {
    const h = harness();
    const taskQueue = uniqueTaskQueue();
    const w = await worker(taskQueue, h.activities);
    await w.runUntil(async () => {
      const { projectId, handle } = await start('b2', 3600, taskQueue, [phases[0]!]);
      await until(handle, (s) => s.waiting_state === 'IN_PROGRESS_NEEDING_INPUT');
      await env.sleep(2 * 3600 * 1000);
      await until(handle, (s) => s.waiting_state === 'STUCK');
      expect(h.events.filter((e) => e.kind === 'waiting_state')).toEqual([
        { kind: 'waiting_state', state: 'IN_PROGRESS_NEEDING_INPUT' },
        { kind: 'waiting_state', state: 'STUCK' },
      ]);
      const sa = (await handle.describe()).typedSearchAttributes;
      expect(sa.get(SearchAttributes.missionWaitingState)).toBe('STUCK');
      // One answer is progress: STUCK clears back to needing input (one question still open).
      await handle.executeUpdate(answerQuestionsUpdate, {
        args: [
          {
            question_set_id: questionSetId(projectId, 'gather'),
            answers: [{ question_id: 'threshold', answer: '60 days' }],
            by: 'u1',
          },
        ],
      });
      await until(handle, (s) => s.waiting_state === 'IN_PROGRESS_NEEDING_INPUT');
      await handle.executeUpdate(answerQuestionsUpdate, {
        args: [
          {
            question_set_id: questionSetId(projectId, 'gather'),
            answers: [{ question_id: 'owner', answer: 'Dana' }],
            by: 'u1',
          },
        ],
      });
      await handle.result();
      expect(h.events.filter((e) => e.kind === 'waiting_state').map((e) => (e as { state: string }).state)).toEqual([
        'IN_PROGRESS_NEEDING_INPUT',
        'STUCK',
        'IN_PROGRESS_NEEDING_INPUT',
        'NONE',
      ]);
      await recordHistory('mission-stuck-then-answered', handle);
    });
  });

  it('pauses, resumes and cancels through setStatus; an invalid transition is refused', async () => {
    const h = harness();
    const taskQueue = uniqueTaskQueue();
    const w = await worker(taskQueue, h.activities);
    await w.runUntil(async () => {
      const { handle } = await start('c3', DAY, taskQueue);
      await until(handle, (s) => s.waiting_state === 'IN_PROGRESS_NEEDING_INPUT');
      const refusedResume = await handle
        .executeUpdate(setStatusUpdate, { args: [{ action: 'resume', by: 'u1' }] })
        .catch((e: unknown) => e);
      expect(((refusedResume as WorkflowUpdateFailedError).cause as ApplicationFailure).details).toEqual([
        'invalid_transition',
      ]);
      expect(await handle.executeUpdate(setStatusUpdate, { args: [{ action: 'pause', by: 'u1' }] })).toEqual({
        previous_status: 'running',
        status: 'paused',
        reason: null,
      });
      // Paused missions are never STUCK: days pass without a STUCK.
      await env.sleep(5 * DAY * 1000);
      expect((await handle.query(missionStateQuery)).waiting_state).toBe('IN_PROGRESS_NEEDING_INPUT');
      expect(await handle.executeUpdate(setStatusUpdate, { args: [{ action: 'resume', by: 'u1' }] })).toMatchObject({
        status: 'running',
      });
      expect(
        await handle.executeUpdate(setStatusUpdate, { args: [{ action: 'cancel', reason: 'not needed', by: 'u1' }] }),
      ).toEqual({ previous_status: 'running', status: 'cancelled', reason: 'not needed' });
      await handle.result();
      expect((await handle.query(missionStateQuery)).status).toBe('cancelled');
      expect(h.events.at(-1)).toEqual({ kind: 'waiting_state', state: 'NONE' });
      expect(h.events.some((e) => e.kind === 'completed')).toBe(false);
      expect(h.events.filter((e) => e.kind === 'status_changed')).toEqual([
        { kind: 'status_changed', status: 'paused', previous_status: 'running', reason: null, by: 'u1' },
        { kind: 'status_changed', status: 'running', previous_status: 'paused', reason: null, by: 'u1' },
        { kind: 'status_changed', status: 'cancelled', previous_status: 'running', reason: 'not needed', by: 'u1' },
      ]);
      await recordHistory('mission-pause-resume-cancel', handle);
    });
  });

  it('refuses answers outside the open set, then closes while waiting: no phase completes after the close', async () => {
    const h = harness();
    const taskQueue = uniqueTaskQueue();
    const w = await worker(taskQueue, h.activities);
    await w.runUntil(async () => {
      const { projectId, handle } = await start('c5', DAY, taskQueue);
      await until(handle, (s) => s.waiting_state === 'IN_PROGRESS_NEEDING_INPUT');
      const answer = (answers: Array<{ question_id: string; answer: string }>) =>
        handle
          .executeUpdate(answerQuestionsUpdate, {
            args: [{ question_set_id: questionSetId(projectId, 'gather'), answers, by: 'u2' }],
          })
          .catch((e: unknown) => ((e as WorkflowUpdateFailedError).cause as ApplicationFailure).details);
      expect(await answer([{ question_id: 'nope', answer: 'x' }])).toEqual(['bad_answers']);
      expect(
        await answer([
          { question_id: 'owner', answer: 'Ann' },
          { question_id: 'owner', answer: 'Bob' },
        ]),
      ).toEqual(['bad_answers']);
      expect((await handle.query(missionStateQuery)).stats.questions_open).toBe(2);
      expect(
        await handle.executeUpdate(setStatusUpdate, {
          args: [{ action: 'close', reason: 'done elsewhere', by: 'u1' }],
        }),
      ).toEqual({ previous_status: 'running', status: 'closed', reason: 'done elsewhere' });
      await handle.result();
      const final = await handle.query(missionStateQuery);
      expect(final).toMatchObject({ status: 'closed', waiting_state: 'NONE', stats: { phases_done: 0 } });
      expect(h.events.filter((e) => e.kind === 'questions_answered')).toEqual([]);
      expect(h.events.some((e) => e.kind === 'phase_completed' || e.kind === 'completed')).toBe(false);
      expect(h.events.slice(-2)).toEqual([
        { kind: 'status_changed', status: 'closed', previous_status: 'running', reason: 'done elsewhere', by: 'u1' },
        { kind: 'waiting_state', state: 'NONE' },
      ]);
      expect((await handle.describe()).typedSearchAttributes.get(SearchAttributes.missionStatus)).toBe('closed');
      await recordHistory('mission-close-while-waiting', handle);
    });
  });

  it('meets goals only on the replies it recorded as evidence', async () => {
    const h = harness();
    const taskQueue = uniqueTaskQueue();
    const w = await worker(taskQueue, h.activities);
    await w.runUntil(async () => {
      const { handle } = await start('d4', DAY, taskQueue, [phases[1]!]);
      await handle.result();
      expect(h.events.filter((e) => e.kind === 'phase_completed')).toEqual([
        {
          kind: 'phase_completed',
          phase: 'report',
          phases_done: 1,
          progress: 1,
          replies: [
            { agent_id: 'analyst', thread_id: 'thr_analyst', message_id: 'reply:' + h.prompts[0]!.messageId },
            { agent_id: 'writer', thread_id: 'thr_writer', message_id: 'reply:' + h.prompts[1]!.messageId },
          ],
          question_set_id: null,
        },
      ]);
    });
  });

  it('fails a phase that cannot run, saying why, and meets none of its goals', async () => {
    const noAgent: MissionPhase = { ...phases[1]!, id: 'lonely', agents: [], questions: [] };
    const cases: Array<{
      name: string;
      phases: MissionPhase[];
      activities?: Record<string, unknown>;
      code: string;
      message: RegExp;
      prompts: number;
    }> = [
      { name: 'no agent', phases: [noAgent, phases[1]!], code: 'no_agent', message: /names no agent/, prompts: 0 },
      {
        name: 'no prompt',
        phases: [{ ...phases[1]!, prompts: [] }],
        code: 'no_prompt',
        message: /no prompt/,
        prompts: 0,
      },
      {
        name: 'no model provider',
        phases: [phases[1]!],
        activities: {
          missionPostPrompt: async () => ({
            ok: false,
            failure: { kind: 'not_configured', message: 'No language-model provider is configured.' },
          }),
        },
        code: 'no_model_provider',
        message: /no language-model provider is configured/,
        prompts: 0,
      },
      {
        name: 'agent gone',
        phases: [phases[1]!],
        activities: {
          missionOpenThread: async () => {
            throw ApplicationFailure.nonRetryable('Agent analyst does not exist.', 'MissionAgentGone');
          },
        },
        code: 'agent_not_found',
        message: /agent analyst no longer exists/,
        prompts: 0,
      },
    ];
    for (const [i, c] of cases.entries()) {
      const h = harness();
      const taskQueue = uniqueTaskQueue();
      const w = await worker(taskQueue, { ...h.activities, ...c.activities });
      await w.runUntil(async () => {
        const { handle } = await start(`e${i}`, DAY, taskQueue, c.phases);
        await handle.result();
        const failed = h.events.find((e) => e.kind === 'phase_failed');
        expect(failed, c.name).toMatchObject({ phase: c.phases[0]!.id, reason_code: c.code });
        expect((failed as { message: string }).message).toMatch(c.message);
        expect(
          h.events.some((e) => e.kind === 'phase_completed' || e.kind === 'completed'),
          c.name,
        ).toBe(false);
        expect(h.prompts, c.name).toHaveLength(c.prompts);
        expect(await handle.query(missionStateQuery), c.name).toMatchObject({
          status: 'failed',
          stats: { phases_done: 0, goals_met: 0 },
        });
        expect((await handle.describe()).typedSearchAttributes.get(SearchAttributes.missionStatus)).toBe('failed');
        if (c.code === 'no_model_provider') await recordHistory('mission-phase-failed-no-provider', handle);
      });
    }
  });
});
