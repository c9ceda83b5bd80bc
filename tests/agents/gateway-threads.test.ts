/**
 * The gateway's agent and thread actions with the SDK's own MCP client over Streamable HTTP,
 * against the started API, a real worker, and a local OpenAI-compatible fake model.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callPlatform, connectMcp } from '../mcp/support.js';
import { query } from '../helpers/db.js';
import { insertImportedAgent } from '../helpers/managed-agents.js';
import type { FakeIdp } from '../helpers/fake-idp.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { startAgentsStack } from './support.js';

let s: OidcStack<never>;
let idp: FakeIdp;
let llm: FakeLlm;
let stack: Stack;
let skillsDir: string;
let aliceToken: string;
let alice: Client;
let bob: Client;
const clients: Client[] = [];

const lastOf = (req: { messages: Array<{ role: string; content: string | null }> }, role: string) =>
  [...req.messages].reverse().find((m) => m.role === role)?.content ?? '';

async function patFor(sub: string, roles: string[]): Promise<string> {
  const res = await http(stack.url, 'POST', '/api/auth/pats', {
    token: await idp.sign({ sub, name: sub, roles }),
    body: { name: 'mcp' },
  });
  return res.body.data.token as string;
}

async function client(token: string, version = '/mcp/v2/'): Promise<Client> {
  const c = await connectMcp(stack.url, version, { authorization: `Bearer ${token}` });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  skillsDir = await mkdtemp(path.join(os.tmpdir(), 'skills-'));
  await mkdir(path.join(skillsDir, 'sql-review', 'docs'), { recursive: true });
  await writeFile(path.join(skillsDir, 'sql-review', 'SKILL.md'), '# SQL review\nCheck joins.\n');
  await writeFile(path.join(skillsDir, 'sql-review', 'docs', 'rules.md'), 'no SELECT *\n');
  await writeFile(path.join(skillsDir, 'secret.txt'), 'outside any skill\n');
  await symlink(path.join(skillsDir, 'secret.txt'), path.join(skillsDir, 'sql-review', 'link.md'));

  llm = await startFakeLlm((req) => ({ content: `re: ${lastOf(req, 'user')}` }));
  s = await startAgentsStack<never>({
    tokens: {},
    env: { PLATFORM_LLM_BASE_URL: llm.baseUrl, PLATFORM_LLM_MODEL: 'fake-model', PLATFORM_SKILLS_DIR: skillsDir },
  });
  ({ stack, idp } = s);
  aliceToken = await patFor('alice', ['admin']);
  alice = await client(aliceToken);
  bob = await client(await patFor('bob', ['member']));
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await s?.close();
  await llm?.close();
  await rm(skillsDir, { recursive: true, force: true });
});

describe('agents over the gateway', () => {
  it('lists the caller’s agents with Eve as the default', async () => {
    const res = await callPlatform(bob, { action: 'list_agents' });
    expect(res.isError).toBe(false);
    expect(res.data.agents.map((a: { name: string }) => a.name)).toEqual(['Adam', 'Eve']);
    expect(res.data.default_agent).toMatchObject({ agent_id: 'eve', name: 'Eve', reason: 'eve' });
  });

  it('follows the gateway setting, and refuses or falls back when the configured default is not the caller’s', async () => {
    const admin = await idp.sign({ sub: 'root', roles: ['admin'] });
    const ledger = await http(stack.url, 'POST', '/api/agents', {
      token: admin,
      body: { name: 'Ledger', instructions: 'books', access: { users: ['alice'] } },
    });
    const ledgerId = ledger.body.data.agent_id as string;
    await http(stack.url, 'PUT', '/api/config/gateway', { token: admin, body: { default_agent_id: ledgerId } });
    try {
      const forAlice = await callPlatform(alice, { action: 'list_agents' });
      expect(forAlice.data.default_agent).toMatchObject({ agent_id: ledgerId, reason: 'configured' });
      const refused = await callPlatform(bob, { action: 'thread_create', initial_prompt: 'hi' });
      expect(refused.isError).toBe(true);
      expect(refused.data).toMatchObject({ error_type: 'conflict', payload: { code: 'default_agent_unavailable' } });
      await http(stack.url, 'PUT', '/api/config/gateway', {
        token: admin,
        body: { default_agent_unavailable_policy: 'first_available' },
      });
      const fallback = await callPlatform(bob, { action: 'thread_create', initial_prompt: 'hi' });
      expect(fallback.data.agent).toEqual({ agent_id: 'eve', name: 'Eve' });
    } finally {
      await http(stack.url, 'PUT', '/api/config/gateway', {
        token: admin,
        body: { default_agent_id: null, default_agent_unavailable_policy: null },
      });
    }
  });
});

describe('threads over the gateway', () => {
  it('creates an mcp_ thread, continues it, reads it, and updates the goal the agent sees', async () => {
    const created = await callPlatform(alice, {
      action: 'thread_create',
      initial_prompt: 'first',
      caller_persona: 'analyst',
      caller_goal: 'find churn',
    });
    expect(created.isError).toBe(false);
    const id = created.data.platform_thread_id as string;
    expect(id).toMatch(/^mcp_[0-9a-f]{32}$/);
    expect(created.data).toMatchObject({ origin: 'mcp_origin', reply: 're: first', agent: { name: 'Eve' } });

    const next = await callPlatform(alice, { action: 'thread_continue', platform_thread_id: id, message: 'second' });
    expect(next.data.reply).toBe('re: second');
    await callPlatform(alice, { action: 'update_goal', platform_thread_id: id, caller_goal: 'find revenue leaks' });
    await callPlatform(alice, { action: 'thread_continue', platform_thread_id: id, message: 'third' });
    expect(llm.requests.at(-1)!.messages[0]!.content).toContain('find revenue leaks');

    const got = await callPlatform(alice, { action: 'thread_get', platform_thread_id: id });
    expect(got.data.messages.map((m: { role: string; content: string }) => `${m.role}:${m.content}`)).toEqual([
      'user:first',
      'assistant:re: first',
      'user:second',
      'assistant:re: second',
      'user:third',
      'assistant:re: third',
    ]);
    expect(await query(stack.db.url, 'select origin, owner_id from conversation_threads where id = $1', [id])).toEqual([
      { origin: 'mcp_origin', owner_id: 'alice' },
    ]);
  });

  it('keeps a caller out of another caller’s thread', async () => {
    const created = await callPlatform(alice, { action: 'thread_create', initial_prompt: 'private' });
    const id = created.data.platform_thread_id;
    for (const args of [
      { action: 'thread_continue', platform_thread_id: id, message: 'let me in' },
      { action: 'thread_get', platform_thread_id: id },
      { action: 'update_goal', platform_thread_id: id, caller_goal: 'x' },
    ]) {
      const res = await callPlatform(bob, args);
      expect(res.isError).toBe(true);
      expect(res.data.error_type).toBe('not_found');
    }
    expect(
      (
        await query(
          stack.db.url,
          `select count(*)::int as n from conversation_messages where thread_id = $1 and content = 'let me in'`,
          [id],
        )
      )[0],
    ).toEqual({ n: 0 });
  });

  it('starts an empty thread and answers the legacy ask on v1 only', async () => {
    const started = await callPlatform(bob, { action: 'start_thread', agent_id: 'adam' });
    expect(started.data.agent).toEqual({ agent_id: 'adam', name: 'Adam' });
    const first = await callPlatform(bob, {
      action: 'thread_continue',
      platform_thread_id: started.data.platform_thread_id,
      message: 'hello Adam',
    });
    expect(first.data.reply).toBe('re: hello Adam');
    const v1 = await client(aliceToken, '/mcp/v1/');
    const asked = await callPlatform(v1, { action: 'ask', question: 'quick one' });
    expect(asked.data).toMatchObject({ answer: 're: quick one', agent: { name: 'Eve' } });
    const onV2 = await callPlatform(alice, { action: 'ask', question: 'quick one' });
    expect(onV2.isError).toBe(true);
    expect(onV2.data.payload.available_on).toBe('/mcp/v1/');
  });

  it('raises an Action Review proposal from a turn and sees the decision on a later turn', async () => {
    llm.respond = (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === 'user' && last.content === 'adopt the UTC rule') {
        return {
          toolCalls: [
            {
              name: 'action_review',
              arguments: {
                action: 'CREATE_PROPOSAL',
                action_type: 'learning.adopt.v1',
                payload: { learning_id: 'utc', title: 'UTC', content: 'Use UTC' },
                expected_effect: 'adopt',
              },
            },
          ],
        };
      }
      if (last.role === 'tool') return { content: last.content ?? '' };
      const notes = req.messages.filter((m) => m.role === 'system' && m.content?.startsWith('[platform note]'));
      return { content: notes.map((n) => n.content).join(' | ') || 'no news' };
    };
    try {
      const created = await callPlatform(alice, { action: 'thread_create', initial_prompt: 'adopt the UTC rule' });
      expect(created.data.tool_calls).toBe(1);
      const proposalId = JSON.parse(created.data.reply).proposal.proposal_id as string;
      const approve = await http(stack.url, 'POST', `/api/action-review/proposals/${proposalId}/approve`, {
        token: aliceToken,
        body: { reason: 'good rule' },
      });
      expect(approve.status).toBe(200);
      let reply = 'no news';
      for (let i = 0; i < 40 && reply === 'no news'; i++) {
        reply = (
          await callPlatform(alice, {
            action: 'thread_continue',
            platform_thread_id: created.data.platform_thread_id,
            message: 'news?',
          })
        ).data.reply;
        if (reply === 'no news') await new Promise((r) => setTimeout(r, 250));
      }
      expect(reply).toContain('good rule');
    } finally {
      llm.respond = (req) => ({ content: `re: ${lastOf(req, 'user')}` });
    }
  });

  it('returns files the agent wrote as single-use signed download links', async () => {
    llm.respond = (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === 'user' && last.content === 'export it') {
        return {
          toolCalls: [
            {
              name: 'agent_files',
              arguments: {
                action: 'WRITE_FILE',
                name: 'report.csv',
                content: 'id,total\n1,42\n',
                content_type: 'text/csv',
              },
            },
          ],
        };
      }
      return { content: 'here is your report' };
    };
    try {
      const created = await callPlatform(alice, { action: 'thread_create', initial_prompt: 'export it' });
      expect(created.data.reply).toBe('here is your report');
      expect(created.data.files).toHaveLength(1);
      const link = created.data.files[0];
      expect(link).toMatchObject({ name: 'report.csv', single_use: true, expires_in_seconds: 600 });
      const url = new URL(link.download_url);
      expect(url.pathname).toMatch(/^\/api\/downloads\//);
      const first = await fetch(stack.url + url.pathname);
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toContain('text/csv');
      expect(await first.text()).toBe('id,total\n1,42\n');
      const second = await fetch(stack.url + url.pathname);
      expect(second.status).toBe(410);
      expect(((await second.json()) as { error_type: string }).error_type).toBe('gone');
      const plain = await callPlatform(alice, {
        action: 'thread_continue',
        platform_thread_id: created.data.platform_thread_id,
        message: 'thanks',
      });
      expect(plain.data.files).toEqual([]);
    } finally {
      llm.respond = (req) => ({ content: `re: ${lastOf(req, 'user')}` });
    }
  });

  it('answers a model failure as llm_error with the classified failure only, leaving no thread behind', async () => {
    llm.respond = () => ({ status: 400, body: 'stack trace of the provider' });
    const threadRuns = async () => {
      const out = new Map<string, string>();
      for await (const w of stack.api.deps.temporal.workflow.list({
        query: `TaskQueue = '${stack.config.temporal.taskQueue}' AND WorkflowType = 'threadWorkflow'`,
      }))
        out.set(w.workflowId, w.status.name);
      return out;
    };
    const before = await threadRuns();
    try {
      const res = await callPlatform(bob, { action: 'thread_create', initial_prompt: 'fails and leaves nothing' });
      expect(res.isError).toBe(true);
      expect(res.data.error_type).toBe('llm_error');
      expect(res.data.payload.llm_failure.kind).toBe('bad_request');
      expect(res.data.payload.platform_thread_id).toBeUndefined();
      expect(JSON.stringify(res.data)).not.toContain('stack trace');
      // No thread row (nor its messages) is left.
      expect(
        await query(stack.db.url, `select id from conversation_threads where title = 'fails and leaves nothing'`),
      ).toEqual([]);
      expect(
        await query(stack.db.url, `select id from conversation_messages where content = 'fails and leaves nothing'`),
      ).toEqual([]);
      // The thread workflow the failed create started was stopped (visibility lags: wait for it to list).
      let started: string[] = [];
      while (!started.length) started = [...(await threadRuns()).keys()].filter((w) => !before.has(w));
      expect(started).toHaveLength(1);
      const described = await stack.api.deps.temporal.workflow.getHandle(started[0]!).describe();
      expect(described.status.name).toBe('TERMINATED');
    } finally {
      llm.respond = (req) => ({ content: `re: ${lastOf(req, 'user')}` });
    }
  });

  it('finds an imported agent by its manifest id, and refuses an id two sources imported, listing both', async () => {
    const first = await insertImportedAgent(stack.db.url, `src_${'a'.repeat(16)}`, 'analyst', 'Analyst A');
    const listed = await callPlatform(bob, { action: 'list_agents' });
    expect(listed.data.agents.map((a: { agent_id: string }) => a.agent_id)).toContain(first);
    const created = await callPlatform(bob, { action: 'thread_create', agent_id: 'analyst', initial_prompt: 'hello' });
    expect(created.isError).toBe(false);
    expect(created.data.agent).toEqual({ agent_id: first, name: 'Analyst A' });
    expect(created.data.reply).toBe('re: hello');
    // The full id keeps working.
    const byId = await callPlatform(bob, { action: 'start_thread', agent_id: first });
    expect(byId.data.agent.agent_id).toBe(first);

    const second = await insertImportedAgent(stack.db.url, `src_${'b'.repeat(16)}`, 'analyst', 'Analyst B');
    try {
      const threads = await query(stack.db.url, 'select count(*)::int as n from conversation_threads');
      const refused = await callPlatform(bob, { action: 'thread_create', agent_id: 'analyst', initial_prompt: 'hi' });
      expect(refused.isError).toBe(true);
      expect(refused.data).toMatchObject({
        error_type: 'conflict',
        payload: {
          code: 'ambiguous_agent_id',
          agent_id: 'analyst',
          candidates: [
            { agent_id: first, name: 'Analyst A' },
            { agent_id: second, name: 'Analyst B' },
          ],
        },
      });
      expect(await query(stack.db.url, 'select count(*)::int as n from conversation_threads')).toEqual(threads);
      const unknown = await callPlatform(bob, { action: 'thread_create', agent_id: 'nobody', initial_prompt: 'hi' });
      expect(unknown.data.error_type).toBe('not_found');
    } finally {
      await query(stack.db.url, `delete from conversation_threads where bot_id in ($1, $2)`, [first, second]);
      await query(stack.db.url, 'delete from agents where id in ($1, $2)', [first, second]);
    }
  });
});

describe('rooms and skills', () => {
  it('lets signed-in callers create, join, talk in and list a room', async () => {
    const created = await callPlatform(alice, { action: 'room_create', room_name: 'data-team', topic: 'pipelines' });
    const roomId = created.data.room.room_id as string;
    expect((await callPlatform(bob, { action: 'room_send', room_id: roomId, message: 'hi' })).data.payload.code).toBe(
      'ROOM_NOT_JOINED',
    );
    await callPlatform(bob, { action: 'room_join', room_id: roomId });
    await callPlatform(alice, { action: 'room_send', room_id: roomId, message: 'welcome' });
    await callPlatform(bob, { action: 'room_send', room_id: roomId, message: 'thanks' });
    const read = await callPlatform(bob, { action: 'room_read', room_id: roomId });
    expect(
      read.data.messages.map((m: { author_id: string; content: string }) => `${m.author_id}:${m.content}`),
    ).toEqual(['alice:welcome', 'bob:thanks']);
    const after = await callPlatform(bob, {
      action: 'room_read',
      room_id: roomId,
      after_seq: read.data.messages[0].seq,
    });
    expect(after.data.messages).toHaveLength(1);
    expect(
      (await callPlatform(alice, { action: 'room_who', room_id: roomId })).data.members.map(
        (m: { member_id: string }) => m.member_id,
      ),
    ).toEqual(['alice', 'bob']);
    expect((await callPlatform(bob, { action: 'room_list' })).data.rooms).toEqual([
      expect.objectContaining({ room_id: roomId, name: 'data-team', member_count: 2 }),
    ]);
  });

  it('reads skill files and refuses every path escape', async () => {
    const ok = await callPlatform(bob, { action: 'read_skill', skill_name: 'sql-review' });
    expect(ok.data).toMatchObject({
      skill_name: 'sql-review',
      relative_path: 'SKILL.md',
      content: '# SQL review\nCheck joins.\n',
    });
    expect(
      (await callPlatform(bob, { action: 'read_skill', skill_name: 'sql-review', relative_path: 'docs/rules.md' })).data
        .content,
    ).toBe('no SELECT *\n');
    for (const [skill, rel] of [
      ['sql-review', '../secret.txt'],
      ['sql-review', '/etc/passwd'],
      ['sql-review', 'link.md'],
      ['..', 'secret.txt'],
    ]) {
      const res = await callPlatform(bob, { action: 'read_skill', skill_name: skill, relative_path: rel });
      expect(res.isError).toBe(true);
      expect(res.data.error_type).toBe('bad_request');
    }
    expect((await callPlatform(bob, { action: 'read_skill', skill_name: 'nope' })).data.error_type).toBe('not_found');
  });
});

const ROOM_ACTIONS = ['room_list', 'room_create', 'room_join', 'room_send', 'room_read', 'room_who'];
const helpOf = async (c: Client) =>
  (await callPlatform(c, { action: 'help' })).data.actions as Array<{
    name: string;
    available: boolean;
    unavailable_reason?: string;
  }>;

describe('rooms with sign-in off', () => {
  it('are refused clearly, and help lists them as unavailable with that reason', async () => {
    const open = await startStack({ worker: false });
    try {
      const c = await connectMcp(open.url, '/mcp/v2/');
      const res = await callPlatform(c, { action: 'room_list' });
      expect(res.isError).toBe(true);
      expect(res.data).toMatchObject({ error_type: 'forbidden', payload: { reason: 'rooms_need_sign_in' } });
      const actions = await helpOf(c);
      for (const name of ROOM_ACTIONS)
        expect(
          actions.find((a) => a.name === name),
          name,
        ).toEqual(expect.objectContaining({ available: false, unavailable_reason: res.data.error }));
      // What does work here stays available.
      expect(actions.find((a) => a.name === 'thread_create')).toMatchObject({ available: true });
      expect(actions.find((a) => a.name === 'thread_create')).not.toHaveProperty('unavailable_reason');
      const one = await callPlatform(c, { action: 'help', about: 'room_send' });
      expect(one.data.actions).toEqual([expect.objectContaining({ name: 'room_send', available: false })]);
      await c.close();
    } finally {
      await open.close();
    }
  });

  it('help lists them as available to a signed-in caller', async () => {
    const actions = await helpOf(bob);
    for (const name of ROOM_ACTIONS)
      expect(
        actions.find((a) => a.name === name),
        name,
      ).toEqual(expect.not.objectContaining({ unavailable_reason: expect.anything() }));
    for (const name of ROOM_ACTIONS) expect(actions.find((a) => a.name === name)?.available, name).toBe(true);
  });
});
