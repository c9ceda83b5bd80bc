/**
 * Decisions with an effect (issue 31, item 4), end to end through Action Review over real HTTP: each
 * `prover.*` type goes propose → approve → executed, and the Prover subject's state then shows the
 * decision to its owner and its requesting agent (nobody else sees it; a Prover request naming a subject
 * the caller cannot see is refused 404 and writes nothing); an adopted learning joins the instructions
 * of the agents it was adopted for on their next model call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startThread } from '../../shared/threads/service.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { personPrincipal } from '../helpers/principals.js';
import { http } from '../helpers/stack.js';
import { path, propose, startReviewStack, tool, type ReviewStack } from './support.js';

let r: ReviewStack;
let llm: FakeLlm;

beforeAll(async () => {
  llm = await startFakeLlm();
  r = await startReviewStack({
    PLATFORM_LLM_BASE_URL: llm.baseUrl,
    PLATFORM_LLM_MODEL: 'fake-model',
    PLATFORM_LLM_API_KEY: 'sk-test',
  });
}, 120_000);
afterAll(async () => {
  await r?.close();
  await llm?.close();
});

const subjectPath = (kind: string, id: string) => `/api/prover/subjects/${kind}/${id}`;
const readAsPerson = (token: string, kind: string, id: string) =>
  http(r.stack.url, 'GET', subjectPath(kind, id), { token });
const readAsAgent = (token: string, kind: string, id: string) =>
  tool(r.stack.url, token, { action: 'GET_PROVER_SUBJECT', kind, subject_id: id });
const count = async (table: string) =>
  (await query<{ n: number }>(r.stack.db.url, `select count(*)::int as n from ${table}`))[0]!.n;
const statusOf = async (id: string) =>
  (await http(r.stack.url, 'GET', path(id), { token: r.tokens.rita })).body.data.status as string;

/** The five Prover types: a payload naming a fresh subject, how approval runs it, and the state it leaves. */
const PROVER_CASES = [
  {
    type: 'prover.request_finding_evidence.v1',
    kind: 'finding',
    id: 'F-501',
    payload: { finding_id: 'F-501', evidence_request: 'Attach the query plan.' },
    run: 'approve-and-execute',
    status: 'evidence_requested',
    state: { evidence_requests: [{ evidence_request: 'Attach the query plan.' }] },
  },
  {
    type: 'prover.approve_view_test_cases.v1',
    kind: 'view',
    id: 'v_invoices',
    payload: { view_id: 'v_invoices', test_case_ids: ['t2', 't1'] },
    run: 'approve',
    status: 'test_cases_approved',
    state: { approved_test_case_ids: ['t1', 't2'] },
  },
  {
    type: 'prover.approve_disposition_package.v1',
    kind: 'disposition_package',
    id: 'pkg-7',
    payload: { package_id: 'pkg-7', disposition: 'Retire the legacy export; keep the audit copy.' },
    run: 'approve, then execute',
    status: 'disposition_approved',
    state: { disposition: 'Retire the legacy export; keep the audit copy.' },
  },
  {
    type: 'prover.approve_composite_bundle.v1',
    kind: 'composite_bundle',
    id: 'bundle-3',
    payload: { bundle_id: 'bundle-3', member_ids: ['m1', 'm2'] },
    run: 'approve, then execute',
    status: 'bundle_approved',
    state: { member_ids: ['m1', 'm2'] },
  },
  {
    type: 'prover.decide_improvement_docket_entry.v1',
    kind: 'docket_entry',
    id: 'docket-9',
    payload: { entry_id: 'docket-9', decision: 'defer', note: 'After the freeze.' },
    run: 'approve-and-execute',
    status: 'deferred',
    state: { decision: 'defer', note: 'After the freeze.' },
  },
] as const;

describe('Prover decisions', () => {
  it.each(PROVER_CASES)(
    '$type: propose → approve → executed, then its $kind shows the decision to its owner and requesting agent only',
    async (c) => {
      const bot = `bot-${c.kind}`;
      const id = await propose(r.stack.url, r.tokens.rita, {
        action_type: c.type,
        payload: c.payload,
        expected_effect: `A decision on ${c.id}.`,
        bot_id: bot,
      });
      const before = await readAsPerson(r.tokens.rita, c.kind, c.id);
      expect(before.status, before.text).toBe(200);
      expect(before.body.data).toMatchObject({ status: 'open', owner_id: 'rita', bot_id: bot, decisions: [] });

      if (c.run === 'approve-and-execute') {
        const res = await http(r.stack.url, 'POST', path(id, '/approve-and-execute'), {
          token: r.tokens.ravi,
          body: {},
        });
        expect(res.body, res.text).toMatchObject({ success: true, final_status: 'executed' });
      } else {
        const approved = await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} });
        expect(approved.status, approved.text).toBe(200);
        if (c.run === 'approve, then execute') {
          expect(await statusOf(id)).toBe('approved');
          const executed = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.rita });
          expect(executed.body, executed.text).toMatchObject({ success: true, final_status: 'executed' });
        }
      }
      expect(await statusOf(id)).toBe('executed');

      const owner = await readAsPerson(r.tokens.rita, c.kind, c.id);
      expect(owner.body.data).toMatchObject({
        kind: c.kind,
        subject_id: c.id,
        status: c.status,
        state: c.state,
        // decided_by: who executed it (the approver, where approving runs it).
        decisions: [
          {
            proposal_id: id,
            action_type: c.type,
            decided_by: c.run === 'approve, then execute' ? 'rita' : 'ravi',
            decision: c.payload,
          },
        ],
      });
      const agent = await readAsAgent(await r.agent(bot, `thread-${c.kind}`), c.kind, c.id);
      expect(agent.status, agent.text).toBe(200);
      expect(agent.body.data.result.subject).toEqual(owner.body.data);
      // Neither the approver nor another agent sees it.
      expect((await readAsPerson(r.tokens.ravi, c.kind, c.id)).status).toBe(404);
      expect((await readAsAgent(await r.agent('bot-other', 'thread-other'), c.kind, c.id)).status).toBe(404);
      expect((await readAsPerson(r.tokens.foreign, c.kind, c.id)).status).toBe(404);
    },
  );

  it("refuses a Prover request naming another's subject (404, nothing written); an agent's subject is its own in any thread", async () => {
    const agentA = await r.agent('bot-pa', 'thread-pa1');
    const created = await tool(r.stack.url, agentA, {
      action: 'CREATE_PROPOSAL',
      action_type: 'prover.request_finding_evidence.v1',
      payload: { finding_id: 'F-777', evidence_request: 'Attach the row counts.' },
      expected_effect: 'Evidence is requested for F-777.',
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.data.result.proposal.proposal_id as string;
    expect((await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.rita, body: {} })).status).toBe(
      200,
    );
    const done = await tool(r.stack.url, agentA, { action: 'EXECUTE_PROPOSAL', proposal_id: id });
    expect(done.body.data.result).toMatchObject({ final_status: 'executed' });

    const sameBotElsewhere = await r.agent('bot-pa', 'thread-pa2');
    const read = await readAsAgent(sameBotElsewhere, 'finding', 'F-777');
    expect(read.body.data.result.subject).toMatchObject({
      status: 'evidence_requested',
      bot_id: 'bot-pa',
      owner_id: null,
      state: { evidence_requests: [{ evidence_request: 'Attach the row counts.', proposal_id: id }] },
    });

    const proposals = await count('action_review_proposals');
    const subjects = await count('prover_subjects');
    const otherAgent = await tool(r.stack.url, await r.agent('bot-pb', 'thread-pb'), {
      action: 'CREATE_PROPOSAL',
      action_type: 'prover.request_finding_evidence.v1',
      payload: { finding_id: 'F-777', evidence_request: 'Mine now.' },
      expected_effect: 'x',
    });
    expect(otherAgent.status).toBe(404);
    expect(otherAgent.body.payload).toMatchObject({ subject_kind: 'finding', subject_id: 'F-777' });
    const person = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.ravi,
      body: {
        action_type: 'prover.request_finding_evidence.v1',
        payload: { finding_id: 'F-777', evidence_request: 'x' },
        expected_effect: 'x',
      },
    });
    expect(person.status).toBe(404);
    expect(await count('action_review_proposals')).toBe(proposals);
    expect(await count('prover_subjects')).toBe(subjects);

    // A person's subject: the owner may ask again; another person may not. Another tenant's id space is its own.
    await propose(r.stack.url, r.tokens.rita, {
      action_type: 'prover.decide_improvement_docket_entry.v1',
      payload: { entry_id: 'docket-31', decision: 'accept' },
      expected_effect: 'Accept docket 31.',
    });
    await propose(r.stack.url, r.tokens.rita, {
      action_type: 'prover.decide_improvement_docket_entry.v1',
      payload: { entry_id: 'docket-31', decision: 'decline' },
      expected_effect: 'Decline docket 31.',
    });
    const ravi = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.ravi,
      body: {
        action_type: 'prover.decide_improvement_docket_entry.v1',
        payload: { entry_id: 'docket-31', decision: 'accept' },
        expected_effect: 'x',
      },
    });
    expect(ravi.status).toBe(404);
    await propose(r.stack.url, r.tokens.foreign, {
      action_type: 'prover.decide_improvement_docket_entry.v1',
      payload: { entry_id: 'docket-31', decision: 'accept' },
      expected_effect: 'Their own docket 31.',
    });
  });
});

describe('adopted learnings', () => {
  /** Runs one thread turn with the agent and answers the system message the model was sent. */
  const systemMessageOf = async (agentId: string) => {
    llm.respond = () => ({ content: 'noted' });
    const { turn } = await startThread(r.stack.api.deps, r.stack.api.deps.orm.em.fork(), personPrincipal('rita'), {
      agentId,
      initialPrompt: 'What date format do we use?',
      origin: 'mcp_origin',
    });
    expect(turn).toMatchObject({ ok: true });
    const sent = llm.requests.at(-1)!;
    expect(sent.messages[0]!.role).toBe('system');
    return sent.messages[0]!.content ?? '';
  };

  it('learning.adopt.v1: propose → approve (approving is the action) → executed → it joins the instructions of the agents it names', async () => {
    expect(await systemMessageOf('eve')).not.toContain('Learnings adopted for you');
    const forEve = await propose(r.stack.url, r.tokens.rita, {
      action_type: 'learning.adopt.v1',
      payload: {
        learning_id: 'lrn-eve',
        title: 'Dates',
        content: 'Write dates as YYYY-MM-DD in every answer.',
        agent_ids: ['eve'],
      },
      expected_effect: 'Eve adopts the ISO date rule.',
    });
    const approved = await http(r.stack.url, 'POST', path(forEve, '/approve'), { token: r.tokens.ravi, body: {} });
    expect(approved.body, approved.text).toMatchObject({ final_status: 'executed' });
    expect(await statusOf(forEve)).toBe('executed');

    const eve = await systemMessageOf('eve');
    expect(eve).toContain('Learnings adopted for you through Action Review');
    expect(eve).toContain('- Dates: Write dates as YYYY-MM-DD in every answer.');
    expect(await systemMessageOf('adam')).not.toContain('YYYY-MM-DD');

    // Raised without agent_ids by a person: every agent of the tenant.
    const forAll = await propose(r.stack.url, r.tokens.rita, {
      action_type: 'learning.adopt.v1',
      payload: { learning_id: 'lrn-all', title: 'Currency', content: 'Amounts are in euros unless stated.' },
      expected_effect: 'Every agent adopts the currency rule.',
    });
    expect((await http(r.stack.url, 'POST', path(forAll, '/approve'), { token: r.tokens.ravi, body: {} })).status).toBe(
      200,
    );
    const adam = await systemMessageOf('adam');
    expect(adam).toContain('- Currency: Amounts are in euros unless stated.');
    expect(adam).not.toContain('YYYY-MM-DD');
    expect(await systemMessageOf('eve')).toMatch(/- Dates: [^\n]+\n- Currency: /);
  });

  it('a learning an agent raises is adopted for that agent by default, shown in the payload the approver decides', async () => {
    const agent = await r.agent('eve', 'thread-learn');
    const created = await tool(r.stack.url, agent, {
      action: 'CREATE_PROPOSAL',
      action_type: 'learning.adopt.v1',
      payload: { learning_id: 'lrn-self', title: 'Units', content: 'Report sizes in GiB.' },
      expected_effect: 'Eve adopts the unit rule.',
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.data.result.proposal.proposal_id as string;
    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.ravi });
    expect(detail.body.data.payload).toMatchObject({ agent_ids: ['eve'] });
    expect((await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} })).status).toBe(
      200,
    );
    expect(await systemMessageOf('eve')).toContain('- Units: Report sizes in GiB.');
    expect(await systemMessageOf('adam')).not.toContain('GiB');
  });
});
