import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm, type FakeReply } from '../helpers/fake-llm.js';
import { http, type Stack } from '../helpers/stack.js';
import { startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let llm: FakeLlm;
let stack: Stack;
let reply: FakeReply = { content: '{}' };

beforeAll(async () => {
  llm = await startFakeLlm(() => reply);
  bp = await startBlueprintStack({
    users: { root: ['admin'], olivia: ['member'], sam: ['member'] },
    env: { PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS: '1500' },
    dataDirPrefix: 'bp-wizard-',
  });
  stack = bp.stack;
  const churn = await api('POST', '/api/blueprints/', 'olivia', {
    blueprint_name: 'churn-review',
    short_description: 'Weekly review of churned customer accounts',
    phases: [{ id: 'gather', name: 'Gather', goal: 'Collect last week churned accounts from the warehouse' }],
  });
  expect(churn.status).toBe(201);
  const payroll = await api('POST', '/api/blueprints/', 'sam', {
    blueprint_name: 'payroll-salary-audit',
    short_description: 'Audit payroll salary changes',
  });
  expect(payroll.status).toBe(201);
});
afterAll(async () => {
  await bp?.close();
  await llm?.close();
});

const api = (method: string, p: string, who: string, body?: unknown) => bp.api(method, p, who, body);
const wizard = (who: string, body: unknown) => api('POST', '/api/blueprints/wizard', who, body);
const recNames = (data: { recommendations?: Array<{ blueprint_name: string }> }) =>
  (data.recommendations ?? []).map((r) => r.blueprint_name);
const json = (v: unknown): FakeReply => ({ content: JSON.stringify(v) });

function expectWellFormed(data: Record<string, any>) {
  expect(['questions', 'recommendations']).toContain(data.type);
  if (data.type === 'questions') {
    expect(data.questions.length).toBeGreaterThan(0);
    expect(data.questions.length).toBeLessThanOrEqual(2);
    for (const q of data.questions) expect(q).toEqual({ id: expect.any(String), text: expect.any(String) });
  } else {
    expect(data.recommendations.length).toBeLessThanOrEqual(3);
    for (const r of data.recommendations) {
      expect(typeof r.confidence).toBe('number');
      expect(r.confidence).toBeGreaterThanOrEqual(0);
      expect(r.confidence).toBeLessThanOrEqual(1);
      expect(typeof r.rationale).toBe('string');
    }
  }
}

describe('wizard without a chat provider (lexical ranker)', () => {
  it('recommends by token overlap, labelled lexical, with numeric confidences', async () => {
    const r = await wizard('olivia', { goal: 'Review the customer churn of last week' });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expectWellFormed(r.body.data);
    expect(r.body.data).toMatchObject({ type: 'recommendations', ranker: 'lexical' });
    expect(r.body.data.notice).toBeUndefined();
    expect(recNames(r.body.data)[0]).toBe('churn-review');
    expect(r.body.data.recommendations[0].confidence).toBeGreaterThan(0);
  });

  it('only considers blueprints the caller can execute', async () => {
    const goal = 'Audit payroll salary changes';
    const olivia = await wizard('olivia', { goal });
    expect(olivia.status).toBe(200);
    expect(recNames(olivia.body.data)).not.toContain('payroll-salary-audit');
    const sam = await wizard('sam', { goal });
    expect(recNames(sam.body.data)[0]).toBe('payroll-salary-audit');
    expect(recNames(sam.body.data)).not.toContain('churn-review');
    // Defaults (3, the hidden one included) plus each caller's own blueprint.
    expect(olivia.body.data.candidate_count).toBe(4);
    expect(sam.body.data.candidate_count).toBe(4);
    expect((await wizard('root', { goal })).body.data.candidate_count).toBe(5);
  });

  it('asks clarifying questions when nothing matches, then always recommends in the second round', async () => {
    const first = await wizard('olivia', { goal: 'Please help me with something' });
    expect(first.status).toBe(200);
    expectWellFormed(first.body.data);
    expect(first.body.data).toMatchObject({ type: 'questions', ranker: 'lexical' });
    const qs = first.body.data.questions as Array<{ id: string; text: string }>;
    const second = await wizard('olivia', {
      goal: 'Please help me with something',
      answers: [{ question_id: qs[0]!.id, answer: 'our nightly pipeline run failed' }],
      answer_context: [
        { question_id: qs[0]!.id, question_text: qs[0]!.text, answer: 'our nightly pipeline run failed' },
      ],
    });
    expect(second.status).toBe(200);
    expect(second.body.data).toMatchObject({ type: 'recommendations', ranker: 'lexical' });
    expect(recNames(second.body.data)[0]).toBe('pipeline-incident-triage');
    const nothing = await wizard('olivia', {
      goal: 'Please help me',
      answers: [{ question_id: 'q_data', answer: 'zzz' }],
    });
    expect(nothing.body.data).toMatchObject({ type: 'recommendations', recommendations: [] });
  });

  it('refuses invalid bodies with 400 and reaches no model', async () => {
    for (const body of [
      {},
      { goal: '' },
      { goal: 'x'.repeat(4001) },
      { goal: 'ok', extra: true },
      { goal: 'ok', answers: [1, 2, 3].map((i) => ({ question_id: `q${i}`, answer: 'a' })) },
      { goal: 'ok', answer_context: [{ question_id: 'q1', answer: 'a' }] },
    ]) {
      const r = await wizard('olivia', body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error_type).toBe('bad_request');
    }
    expect((await http(stack.url, 'POST', '/api/blueprints/wizard', { body: { goal: 'x' } })).status).toBe(401);
    expect(llm.requests.length).toBe(0);
  });
});

describe('wizard with a chat provider (fake model on loopback)', () => {
  beforeAll(async () => {
    const saved = await api('POST', '/api/config/llm-providers/other', 'root', {
      sub_provider: 'acme',
      base_url: llm.baseUrl,
      api_key: 'k1',
      model_name: 'fake-model',
    });
    expect(saved.body).toMatchObject({ success: true });
    const act = await api('POST', '/api/config/llm-providers/other/activate', 'root', { sub_provider: 'acme' });
    expect(act.body).toMatchObject({ success: true });
  });

  it('passes valid JSON through validation; the model sees only executable candidates', async () => {
    reply = json({
      type: 'recommendations',
      recommendations: [
        { blueprint_name: 'churn-review', confidence: 0.92, rationale: 'Made for churn.' },
        { blueprint_name: 'data-quality-audit', confidence: 0.3, rationale: 'Checks the data first.' },
      ],
    });
    const before = llm.requests.length;
    const r = await wizard('olivia', { goal: 'Why did customers leave?' });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      type: 'recommendations',
      recommendations: [
        { blueprint_name: 'churn-review', confidence: 0.92, rationale: 'Made for churn.' },
        { blueprint_name: 'data-quality-audit', confidence: 0.3, rationale: 'Checks the data first.' },
      ],
      ranker: 'model',
      candidate_count: 4,
    });
    expect(llm.requests.length).toBe(before + 1);
    const sent = llm.requests
      .at(-1)!
      .messages.map((m) => m.content)
      .join('\n');
    expect(sent).toContain('churn-review');
    expect(sent).toContain('platform-self-check');
    expect(sent).not.toContain('payroll-salary-audit');
    expect(sent).toContain('Why did customers leave?');
    const usage = await query<{ provider: string }>(
      stack.db.url,
      `select provider from llm_usage where purpose = 'wizard'`,
    );
    expect(usage.length).toBeGreaterThan(0);
  });

  it('falls back to lexical at the demo budget cap, calling no model and recording nothing', async () => {
    reply = json({ type: 'recommendations', recommendations: [] });
    await query(
      stack.db.url,
      `insert into deployment_settings (key, value, updated_at, updated_by) values ('demo_budget.cap_usd', '0', now(), 'test')`,
    );
    try {
      const before = llm.requests.length;
      const calls = await query(stack.db.url, 'select count(*)::int as n from llm_usage');
      const r = await wizard('olivia', { goal: 'customer churn' });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ ranker: 'lexical', type: 'recommendations' });
      expect(r.body.data.notice).toBe('The language-model budget is used up; the lexical ranker answered.');
      expect(llm.requests.length).toBe(before);
      expect(await query(stack.db.url, 'select count(*)::int as n from llm_usage')).toEqual(calls);
    } finally {
      await query(stack.db.url, `delete from deployment_settings where key = 'demo_budget.cap_usd'`);
    }
  });

  it('accepts JSON inside a fenced block', async () => {
    reply = {
      content:
        'Here you go:\n```json\n{"type":"recommendations","recommendations":[{"blueprint_name":"churn-review","confidence":0.5,"rationale":"fits"}]}\n```',
    };
    const r = await wizard('olivia', { goal: 'churn' });
    expect(r.body.data).toMatchObject({ ranker: 'model', recommendations: [{ blueprint_name: 'churn-review' }] });
  });

  it('drops a recommendation with a boolean confidence; all boolean falls back to lexical', async () => {
    reply = json({
      type: 'recommendations',
      recommendations: [
        { blueprint_name: 'churn-review', confidence: true, rationale: 'yes' },
        { blueprint_name: 'data-quality-audit', confidence: 0.4, rationale: 'maybe' },
      ],
    });
    const r = await wizard('olivia', { goal: 'customer churn' });
    expect(r.status).toBe(200);
    expect(r.body.data.ranker).toBe('model');
    expect(recNames(r.body.data)).toEqual(['data-quality-audit']);
    expect(r.body.data.repairs.join(' ')).toContain('churn-review: confidence is boolean');

    reply = json({
      type: 'recommendations',
      recommendations: [{ blueprint_name: 'churn-review', confidence: false, rationale: 'no' }],
    });
    const all = await wizard('olivia', { goal: 'customer churn' });
    expect(all.status).toBe(200);
    expectWellFormed(all.body.data);
    expect(all.body.data.ranker).toBe('lexical');
    expect(all.body.data.notice).toMatch(/no valid recommendation/);
    expect(recNames(all.body.data)[0]).toBe('churn-review');
    for (const rec of all.body.data.recommendations) expect(typeof rec.confidence).toBe('number');
  });

  it('repairs four recommendations: clamps, coerces numeric strings, keeps the 3 most confident', async () => {
    reply = json({
      type: 'recommendations',
      recommendations: [
        { blueprint_name: 'churn-review', confidence: 0.9, rationale: 'a' },
        { blueprint_name: 'data-quality-audit', confidence: 0.2, rationale: 'b' },
        { blueprint_name: 'pipeline-incident-triage', confidence: '0.7', rationale: 'c\u0000\nd' },
        { blueprint_name: 'platform-self-check', confidence: 1.4, rationale: 'e' },
      ],
    });
    const r = await wizard('olivia', { goal: 'anything' });
    expect(r.status).toBe(200);
    expect(r.body.data.ranker).toBe('model');
    expect(r.body.data.recommendations).toEqual([
      { blueprint_name: 'platform-self-check', confidence: 1, rationale: 'e' },
      { blueprint_name: 'churn-review', confidence: 0.9, rationale: 'a' },
      { blueprint_name: 'pipeline-incident-triage', confidence: 0.7, rationale: 'c d' },
    ]);
    const repairs = r.body.data.repairs.join(' | ');
    expect(repairs).toContain('clamped the confidence of platform-self-check');
    expect(repairs).toContain('coerced the confidence of pipeline-incident-triage');
    expect(repairs).toContain('kept the 3 most confident of 4');
  });

  it('drops unknown blueprints and ones the caller cannot execute; nothing left falls back to lexical', async () => {
    reply = json({
      type: 'recommendations',
      recommendations: [
        { blueprint_name: 'no-such-blueprint', confidence: 0.9, rationale: 'invented' },
        { blueprint_name: 'payroll-salary-audit', confidence: 0.8, rationale: 'not yours' },
        { blueprint_name: 'churn-review', confidence: 0.6, rationale: 'real' },
      ],
    });
    const some = await wizard('olivia', { goal: 'payroll' });
    expect(recNames(some.body.data)).toEqual(['churn-review']);
    expect(some.body.data.repairs).toHaveLength(2);

    reply = json({
      type: 'recommendations',
      recommendations: [
        { blueprint_name: 'no-such-blueprint', confidence: 0.9, rationale: 'invented' },
        { blueprint_name: 'payroll-salary-audit', confidence: 0.8, rationale: 'not yours' },
      ],
    });
    const none = await wizard('olivia', { goal: 'Audit payroll salary changes' });
    expect(none.status).toBe(200);
    expect(none.body.data.ranker).toBe('lexical');
    expect(none.body.data.notice).toBeDefined();
    expect(recNames(none.body.data)).not.toContain('payroll-salary-audit');
    expect(recNames(none.body.data)).not.toContain('no-such-blueprint');
  });

  it('falls back to lexical on a non-JSON answer and on a provider error', async () => {
    reply = { content: 'I would pick churn-review, it is great.' };
    const text = await wizard('olivia', { goal: 'customer churn' });
    expect(text.status).toBe(200);
    expect(text.body.data).toMatchObject({ ranker: 'lexical', type: 'recommendations' });
    expect(text.body.data.notice).toMatch(/no valid/);
    expect(text.body.data.recommendations[0].rationale).not.toContain('great');

    reply = { status: 400, body: '{"error":{"message":"boom"}}' };
    const failed = await wizard('olivia', { goal: 'customer churn' });
    expect(failed.status).toBe(200);
    expect(failed.body.data).toMatchObject({ ranker: 'lexical' });
    expect(failed.body.data.notice).toMatch(/model call failed/);
  });

  it('falls back to lexical when the model is slower than the wizard timeout', async () => {
    reply = { hang: true };
    const slow = await wizard('olivia', { goal: 'customer churn' });
    llm.release(json({ type: 'recommendations', recommendations: [] }));
    expect(slow.status).toBe(200);
    expect(slow.body.data).toMatchObject({ ranker: 'lexical', type: 'recommendations' });
    expect(slow.body.data.notice).toMatch(/did not answer within 1500 ms/);
    expect(recNames(slow.body.data)[0]).toBe('churn-review');
  });

  it('questions then answers: at most 2 questions, and the second round must recommend', async () => {
    reply = json({
      type: 'questions',
      questions: [
        { id: 'scope', text: 'Which tables?' },
        { id: 'scope', text: 'How often?' },
        { id: 'q3', text: 'Who reads the result?' },
      ],
    });
    const first = await wizard('olivia', { goal: 'Help with our data' });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ type: 'questions', ranker: 'model' });
    expect(first.body.data.questions).toEqual([
      { id: 'scope', text: 'Which tables?' },
      { id: 'q2', text: 'How often?' },
    ]);
    expect(first.body.data.repairs).toEqual(['kept the first 2 of 3 questions']);

    const answered = {
      goal: 'Help with our data',
      answers: [{ question_id: 'scope', answer: 'the churned customer accounts' }],
      answer_context: [
        { question_id: 'scope', question_text: 'Which tables?', answer: 'the churned customer accounts' },
      ],
    };
    // A model that asks again in the second round is refused: the lexical ranker recommends.
    const again = await wizard('olivia', answered);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ type: 'recommendations', ranker: 'lexical' });
    expect(recNames(again.body.data)[0]).toBe('churn-review');
    const sent = llm.requests
      .at(-1)!
      .messages.map((m) => m.content)
      .join('\n');
    expect(sent).toContain('MUST recommend');
    expect(sent).toContain('Which tables?');
    expect(sent).toContain('the churned customer accounts');

    reply = json({
      type: 'recommendations',
      recommendations: [{ blueprint_name: 'churn-review', confidence: 0.8, rationale: 'churn tables' }],
    });
    const second = await wizard('olivia', answered);
    expect(second.body.data).toMatchObject({
      type: 'recommendations',
      ranker: 'model',
      recommendations: [{ blueprint_name: 'churn-review', confidence: 0.8 }],
    });
  });
});

describe('the blueprints tool (POST /api/tool_call)', () => {
  const call = (who: string, args: Record<string, unknown>) =>
    api('POST', '/api/tool_call', who, { tool: 'blueprints', arguments: args });

  it('LIST answers what the caller can view, like the inventory route', async () => {
    const r = await call('olivia', { action: 'LIST' });
    expect(r.status).toBe(200);
    const listed = (r.body.data.result.blueprints as Array<{ blueprint_name: string }>).map((b) => b.blueprint_name);
    const route = await api('GET', '/api/blueprints/', 'olivia');
    expect(r.body.data.result.blueprints).toEqual(route.body.data.blueprints);
    expect(listed).toContain('churn-review');
    expect(listed).not.toContain('payroll-salary-audit');
    expect(listed).not.toContain('platform-self-check');
  });

  it('GET answers the manifest and phases; a blueprint the caller cannot view is 404', async () => {
    const r = await call('olivia', { action: 'GET', blueprint_name: 'churn-review' });
    expect(r.status).toBe(200);
    expect(r.body.data.result).toMatchObject({
      blueprint_name: 'churn-review',
      phases: [{ id: 'gather', name: 'Gather' }],
      access: { can_view: true, is_owner: true },
    });
    const hidden = await call('olivia', { action: 'GET', blueprint_name: 'payroll-salary-audit' });
    expect(hidden.status).toBe(404);
    const bad = await call('olivia', { action: 'GET', blueprint_name: '../x' });
    expect(bad.status).toBe(400);
    const unknown = await call('olivia', { action: 'DELETE' });
    expect(unknown.status).toBe(400);
  });

  it('RECOMMEND runs the wizard engine', async () => {
    reply = json({
      type: 'recommendations',
      recommendations: [{ blueprint_name: 'churn-review', confidence: '0.65', rationale: 'churn' }],
    });
    const r = await call('olivia', { action: 'RECOMMEND', goal: 'customer churn' });
    expect(r.status).toBe(200);
    expect(r.body.data.result).toMatchObject({
      type: 'recommendations',
      ranker: 'model',
      recommendations: [{ blueprint_name: 'churn-review', confidence: 0.65 }],
    });
    const refused = await call('olivia', { action: 'RECOMMEND' });
    expect(refused.status).toBe(400);
  });
});
