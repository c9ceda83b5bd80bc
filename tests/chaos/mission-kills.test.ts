/**
 * Chaos for missions (issue 33, item 2): a mission of `CHAOS_KILLS` prompt phases (1 in `npm test`,
 * more in `npm run chaos`) and a last phase with a question, the worker process SIGKILLed in each
 * prompt phase while the phase prompt's model call is in flight (the fake model holds the first call
 * of each phase), a new worker started after each kill. The mission goes on on the next worker each
 * time: it reaches the question (waiting for input, every prompt phase done), and once answered ends
 * `completed`, each phase prompt and its reply stored once in the thread, each phase's model call
 * answered once (the held one died with its worker).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missionStateQuery, missionWorkflowId, questionSetId } from '../../workflows/mission-definitions.js';
import { query } from '../helpers/db.js';
import type { ChatRequest } from '../helpers/fake-llm.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import { waitFor } from '../helpers/worker-env.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { startMissionStack, type MissionStack } from '../missions/support.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
const promptOf = (k: number) => `Phase ${k} work`;

let s: MissionStack;
const workers: WorkerProcess[] = [];
/** The phases whose model call was held (once each). */
const held = new Set<number>();
/** Model calls answered, by phase. */
const answeredCalls = new Map<number, number>();

const workerProcess = () =>
  spawnStackWorker(s.stack, workers, {
    PLATFORM_DATA_DIR: s.dataDir,
    PLATFORM_BLUEPRINTS_DIR: s.root,
    PLATFORM_LLM_BASE_URL: s.llm.baseUrl,
    PLATFORM_LLM_MODEL: 'fake-model',
  });

/** The phase whose prompt a model call answers: the last user message. */
const phaseOf = (req: ChatRequest) => {
  const last = req.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
  return Number(/^Phase (\d+) work$/.exec(last)?.[1] ?? -1);
};

beforeAll(async () => {
  s = await startMissionStack('chaos-mission-');
  // Workers are processes of their own from here on.
  await s.stack.worker?.stop();
  s.stack.worker = undefined;
  s.llm.respond = (req) => {
    const k = phaseOf(req);
    if (!held.has(k)) {
      held.add(k);
      return { hang: true };
    }
    answeredCalls.set(k, (answeredCalls.get(k) ?? 0) + 1);
    return { content: `phase ${k} done` };
  };
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await s?.close();
});

describe('a mission whose worker is SIGKILLed in every phase, mid-prompt', () => {
  it('completes every phase with each prompt and reply stored once', { timeout: 60_000 + KILLS * 90_000 }, async () => {
    const t0 = Date.now();
    let worker = workerProcess();
    await worker.ready;
    const phases = Array.from({ length: KILLS }, (_, k) => ({
      id: `p${k}`,
      name: `Phase ${k}`,
      goal: `goal ${k}`,
      agents: ['analyst'],
      prompts: [{ text: promptOf(k) }],
    }));
    const ask = { id: 'ask', name: 'Ask', goal: 'confirm', questions: [{ id: 'ok', content: 'Looks right?' }] };
    const bp = await s.api('POST', '/api/blueprints/', 'root', { blueprint_name: 'chaos', phases: [...phases, ask] });
    expect(bp.status, bp.text).toBe(201);
    const started = await s.api('POST', '/api/projects', 'root', { blueprint_name: 'chaos' });
    expect(started.status, started.text).toBe(201);
    const id = started.body.data.id as string;

    const lap: number[] = [];
    for (let k = 0; k < KILLS; k++) {
      // Phase k's model call is held: the prompt activity is in flight on this worker.
      await waitFor(`the model call of phase ${k} to be held`, async () => (held.has(k) ? true : undefined), 720);
      expect((await worker.kill()).signal).toBe('SIGKILL');
      worker = workerProcess();
      await worker.ready;
      lap.push(Date.now());
    }
    const handle = s.stack.api.deps.temporal.workflow.getHandle(missionWorkflowId(id));
    const waiting = await waitFor('the question phase', async () => {
      const state = await handle.query(missionStateQuery);
      return state.waiting_state === 'IN_PROGRESS_NEEDING_INPUT' ? state : undefined;
    });
    expect(waiting).toMatchObject({ blueprint_phase: 'ask', stats: { phases_done: KILLS, questions_open: 1 } });
    const answered = await s.api('POST', `/api/projects/${id}/questions/${questionSetId(id, 'ask')}/answers`, 'root', {
      answers: [{ question_id: 'ok', answer: 'yes' }],
    });
    expect(answered.status, answered.text).toBe(200);
    await handle.result();

    const [project] = await query(
      s.stack.db.url,
      'select status, root_thread_id, phases_done from projects where id = $1',
      [id],
    );
    expect(project).toMatchObject({ status: 'completed', phases_done: KILLS + 1 });
    const messages = await query(
      s.stack.db.url,
      'select role, content from conversation_messages where thread_id = $1 order by created_at',
      [project!.root_thread_id],
    );
    expect(messages).toEqual(
      phases.flatMap((_, k) => [
        { role: 'user', content: promptOf(k) },
        { role: 'assistant', content: `phase ${k} done` },
      ]),
    );
    expect([...held].sort()).toEqual(phases.map((_, k) => k));
    expect([...answeredCalls.entries()].sort()).toEqual(phases.map((_, k) => [k, 1]));
    process.stderr.write(
      `[chaos] mission: ${KILLS} kill(s) mid-prompt, completed; seconds to each new worker ready: ${lap.map((t) => ((t - t0) / 1000).toFixed(1)).join(', ')}; to the end ${((Date.now() - t0) / 1000).toFixed(1)}\n`,
    );
  });
});
