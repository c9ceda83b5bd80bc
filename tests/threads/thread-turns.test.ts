import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readThread, postMessage, startThread } from '../../shared/threads/service.js';
import { LlmFailureError, NotFoundError } from '../../shared/errors.js';
import { findThread } from '../../shared/threads/store.js';
import { query } from '../helpers/db.js';
import { personPrincipal } from '../helpers/principals.js';
import { recordHistory } from '../helpers/histories.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { startWorker } from '../helpers/temporal.js';

let llm: FakeLlm;
let stack: Stack;

const person = (id: string) => personPrincipal(id);
const owner = person('local-admin');
const lastUser = (req: { messages: Array<{ role: string; content: string | null }> }) =>
  [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';

beforeAll(async () => {
  llm = await startFakeLlm();
  stack = await startStack({
    env: {
      PLATFORM_LLM_BASE_URL: llm.baseUrl,
      PLATFORM_LLM_MODEL: 'fake-model',
      PLATFORM_LLM_API_KEY: 'sk-test',
      PLATFORM_LLM_INPUT_USD_PER_MTOK: '3',
      PLATFORM_LLM_OUTPUT_USD_PER_MTOK: '15',
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await llm?.close();
});

const em = () => stack.api.deps.orm.em.fork();

describe('agent thread turns', () => {
  it('answers a first message through the model and stores the conversation', async () => {
    llm.respond = (req) => ({ content: `echo: ${lastUser(req)}` });
    const { thread, agent, turn } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'hello agent',
      callerPersona: 'a data engineer',
      callerGoal: 'check the pipeline',
      origin: 'mcp_origin',
    });
    expect(thread.id).toMatch(/^mcp_[0-9a-f]{32}$/);
    expect(agent.name).toBe('Eve');
    expect(turn).toMatchObject({ ok: true, reply: 'echo: hello agent', toolCalls: 0 });
    const sent = llm.requests.at(-1)!;
    expect(sent.model).toBe('fake-model');
    expect(sent.messages[0]!.role).toBe('system');
    expect(sent.messages[0]!.content).toContain('a data engineer');
    expect(sent.messages[0]!.content).toContain('check the pipeline');
    const { messages } = await readThread(em(), owner, thread.id);
    expect(messages.map((m) => `${m.role}:${m.content}`)).toEqual(['user:hello agent', 'assistant:echo: hello agent']);
    expect((await findThread(em(), thread.id))!.origin).toBe('mcp_origin');
    const usage = await query(
      stack.db.url,
      'select model, purpose, prompt_tokens, completion_tokens, thread_id from llm_usage where thread_id = $1',
      [thread.id],
    );
    expect(usage).toEqual([
      { model: 'fake-model', purpose: 'thread_turn', prompt_tokens: 11, completion_tokens: 7, thread_id: thread.id },
    ]);

    const second = await postMessage(stack.api.deps, owner, thread, 'and again');
    expect(second.reply).toBe('echo: and again');
    expect(
      llm.requests
        .at(-1)!
        .messages.filter((m) => m.role !== 'system')
        .map((m) => m.content),
    ).toEqual(['hello agent', 'echo: hello agent', 'and again']);
    await recordHistory('thread-two-turns', stack.api.deps.temporal.workflow.getHandle(`thread/${thread.id}`));
  });

  it('keeps threads private to their owner', async () => {
    llm.respond = () => ({ content: 'mine' });
    const { thread } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'secret',
      origin: 'mcp_origin',
    });
    await expect(readThread(em(), person('someone-else'), thread.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('lets the agent raise an Action Review proposal, and sees the decision on its next turn', async () => {
    llm.respond = (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === 'user' && last.content?.includes('please propose')) {
        return {
          toolCalls: [
            {
              name: 'action_review',
              arguments: {
                action: 'CREATE_PROPOSAL',
                action_type: 'learning.adopt.v1',
                payload: { learning_id: 'lrn-1', title: 'UTC', content: 'Prefer UTC timestamps' },
                expected_effect: 'Adopts one learning',
              },
            },
          ],
        };
      }
      if (last.role === 'tool') return { content: `Raised: ${last.content}` };
      return {
        content: `seen ${req.messages.filter((m) => m.role === 'system' && m.content?.includes('[platform note]')).length} notes`,
      };
    };
    const { thread, turn } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'please propose adopting it',
      origin: 'mcp_origin',
    });
    expect(turn.toolCalls).toBe(1);
    expect(llm.requests.at(-2)!.tools!.map((t) => t.function.name)).toEqual([
      '_document_index',
      'action_review',
      'agent_files',
    ]);
    const toolResult = JSON.parse(turn.reply.replace(/^Raised: /, ''));
    const proposalId = toolResult.proposal?.proposal_id ?? toolResult.proposal_id;
    expect(typeof proposalId).toBe('string');
    const [row] = await query<{ requester_kind: string; bot_id: string; thread_id: string }>(
      stack.db.url,
      'select requester_kind, bot_id, thread_id from action_review_proposals where proposal_id = $1',
      [proposalId],
    );
    expect(row).toMatchObject({ requester_kind: 'agent', bot_id: 'eve', thread_id: thread.id });

    const approved = await http(stack.url, 'POST', `/api/action-review/proposals/${proposalId}/approve`, {
      body: { reason: 'looks right' },
    });
    expect(approved.status).toBe(200);
    let handedBack = 0;
    for (let i = 0; i < 40 && handedBack === 0; i++) {
      handedBack = (
        await query(
          stack.db.url,
          `select 1 from conversation_messages where thread_id = $1 and role not in ('user', 'assistant', 'tool')`,
          [thread.id],
        )
      ).length;
      if (!handedBack) await new Promise((r) => setTimeout(r, 250));
    }
    expect(handedBack).toBe(1);
    const next = await postMessage(stack.api.deps, owner, thread, 'any news?');
    expect(next.reply).toBe('seen 1 notes');
    const note = llm.requests.at(-1)!.messages.find((m) => m.content?.includes('[platform note]'))!;
    expect(note.content).toContain('looks right');
    await recordHistory(
      'thread-tool-call-then-handback',
      stack.api.deps.temporal.workflow.getHandle(`thread/${thread.id}`),
    );
  });

  it('refuses a tool outside the agent’s groups and shows the model why', async () => {
    llm.respond = (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === 'user')
        return {
          toolCalls: [
            {
              name: 'crm_connector',
              arguments: { action: 'query', connection_name: 'x', soql: 'SELECT Id FROM Contact' },
            },
          ],
        };
      return { content: `tool said: ${last.content}` };
    };
    const { turn } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'read the CRM',
      origin: 'mcp_origin',
    });
    const result = JSON.parse(turn.reply.replace(/^tool said: /, ''));
    expect(result).toMatchObject({
      error_type: 'forbidden',
      payload: { reason: 'tool_not_in_agent_groups', tool: 'crm_connector', tool_group: 'crm_connector_tools' },
    });
  });

  it('runs concurrent messages of one thread one turn at a time', async () => {
    llm.respond = (req) => ({ content: `re: ${lastUser(req)}` });
    const { thread } = await startThread(stack.api.deps, em(), owner, { initialPrompt: 'start', origin: 'mcp_origin' });
    const turns = await Promise.all(['one', 'two', 'three'].map((m) => postMessage(stack.api.deps, owner, thread, m)));
    expect(turns.map((t) => t.reply).sort()).toEqual(['re: one', 're: three', 're: two']);
    const rows = await query<{ role: string; content: string }>(
      stack.db.url,
      'select role, content from conversation_messages where thread_id = $1 order by created_at',
      [thread.id],
    );
    // Every user message is followed by its own answer: turns never interleave.
    for (let i = 0; i < rows.length; i += 2) {
      expect(rows[i]!.role).toBe('user');
      expect(rows[i + 1]).toEqual({ role: 'assistant', content: `re: ${rows[i]!.content}` });
    }
    expect(rows).toHaveLength(8);
  });

  it('answers llm_error with a classified failure and no provider text; the failed start leaves no thread', async () => {
    llm.respond = () => ({ status: 401, body: '{"error":{"message":"Incorrect API key provided: sk-test"}}' });
    const err = await startThread(stack.api.deps, em(), owner, { initialPrompt: 'x', origin: 'mcp_origin' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LlmFailureError);
    const payload = (err as LlmFailureError).payload as { llm_failure: Record<string, string> };
    expect((err as LlmFailureError).errorType).toBe('llm_error');
    expect(payload.llm_failure.kind).toBe('authentication');
    expect(payload.llm_failure.error_id).toMatch(/^llm_[0-9a-f]{16}$/);
    expect(Object.keys(payload.llm_failure).sort()).toEqual(['action', 'error_id', 'kind', 'message']);
    expect(JSON.stringify(err)).not.toContain('Incorrect API key');

    expect(payload).not.toHaveProperty('platform_thread_id');
    expect(await query(stack.db.url, `select id from conversation_threads where title = 'x'`)).toEqual([]);

    llm.respond = () => ({ content: 'recovered' });
    const { thread, turn } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'x',
      origin: 'mcp_origin',
    });
    expect(turn.reply).toBe('recovered');
    expect(await findThread(em(), thread.id)).not.toBeNull();
  });

  it('records what each call costs and stops at the demo budget cap with a classified llm_error', async () => {
    llm.respond = () => ({ content: 'priced' });
    const before = llm.requests.length;
    const { thread } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'price me',
      origin: 'mcp_origin',
    });
    // 11 prompt tokens at $3/M + 7 completion tokens at $15/M.
    expect(await query(stack.db.url, 'select cost_usd from llm_usage where thread_id = $1', [thread.id])).toEqual([
      { cost_usd: '0.000138' },
    ]);
    await query(
      stack.db.url,
      `insert into deployment_settings (key, value, updated_at, updated_by) values ('demo_budget.cap_usd', '0.0001', now(), 'test')`,
    );
    try {
      const err = await postMessage(stack.api.deps, owner, thread, 'one more').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LlmFailureError);
      expect(((err as LlmFailureError).payload!.llm_failure as { kind: string }).kind).toBe('budget_exhausted');
      expect(llm.requests.length).toBe(before + 1);
    } finally {
      await query(stack.db.url, `delete from deployment_settings where key = 'demo_budget.cap_usd'`);
    }
  });

  it('resumes a turn on another worker when its worker stops mid-call, storing the message once', async () => {
    llm.respond = () => ({ hang: true });
    const before = llm.requests.length;
    const pending = startThread(stack.api.deps, em(), owner, { initialPrompt: 'survive this', origin: 'mcp_origin' });
    for (let i = 0; i < 80 && llm.requests.length === before; i++) await new Promise((r) => setTimeout(r, 100));
    expect(llm.requests.length).toBe(before + 1);

    const stopping = stack.worker!.stop();
    // The held call now fails while its worker drains; the retry must run elsewhere.
    llm.respond = () => ({ content: 'answered after restart' });
    llm.release({ status: 503, body: 'upstream restarting' });
    await stopping;
    stack.worker = await startWorker({ orm: stack.api.deps.orm, config: stack.config, log: stack.log });

    const { thread, turn } = await pending;
    expect(turn.reply).toBe('answered after restart');
    const rows = await query(
      stack.db.url,
      `select role, content from conversation_messages where thread_id = $1 order by created_at`,
      [thread.id],
    );
    expect(rows).toEqual([
      { role: 'user', content: 'survive this' },
      { role: 'assistant', content: 'answered after restart' },
    ]);
  });
});
