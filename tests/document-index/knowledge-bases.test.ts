/**
 * Knowledge bases (issue 31, item 2): named bundles of document-index names assigned to agents, over
 * real HTTP. An agent's `_document_index` SEARCH and ASK see only its knowledge bases' indexes (none
 * assigned: none), a person keeps every index, and an index taken out of a bundle stops answering at
 * once, also through a second API process on the same database. Refusals write nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type RunningApi } from '../../api/server.js';
import { query } from '../helpers/db.js';
import { startOidcStack, type OidcStack } from '../helpers/oidc-stack.js';
import { http } from '../helpers/stack.js';

const INTERNAL = 'internal-secret';
type Who = 'admin' | 'member' | 'foreign';
let o: OidcStack<Who>;
let second: RunningApi;
let agentId: string;
let agentToken: string;

const url = () => o.stack.url;
const tool = (token: string | undefined, args: Record<string, unknown>, base = url()) =>
  http(base, 'POST', '/api/tool_call', { token, body: { tool: '_document_index', arguments: args } });
const kbCount = async () =>
  Number((await query<{ n: string }>(o.stack.db.url, 'select count(*) as n from knowledge_bases'))[0]!.n);
/** The index names an agent's unnamed SEARCH draws hits from. */
const searchedIndexes = async (q: string, base = url()) => {
  const r = await tool(agentToken, { action: 'SEARCH', query: q, top_n: 50 }, base);
  expect(r.status, r.text).toBe(200);
  return [...new Set((r.body.data.result.results as Array<{ index_name: string }>).map((h) => h.index_name))].sort();
};
const createKb = async (body: Record<string, unknown>, token = o.tokens.admin) =>
  http(url(), 'POST', '/api/knowledge-bases', { token, body });

const CORPUS: Record<string, string> = {
  'kb-ops': 'Nightly backups run at two in the morning. Restore a backup with the restore command.',
  'kb-sales': 'Pricing has three tiers. The enterprise tier includes premium support and backups.',
  'kb-hr': 'Employees get twenty-five holidays per year. Backups of personnel files are kept by HR.',
};

beforeAll(async () => {
  o = await startOidcStack<Who>({
    dataDirPrefix: 'kb-test-',
    env: { PLATFORM_INTERNAL_TOKEN: INTERNAL },
    tokens: {
      admin: { sub: 'root', roles: ['admin'] },
      member: { sub: 'ann', roles: ['member'] },
      foreign: { sub: 'fay', tenant: 'other-tenant', roles: ['admin'] },
    },
  });
  second = await startApi(o.stack.config, o.stack.log);
  for (const [index, text] of Object.entries(CORPUS)) {
    expect((await tool(o.tokens.admin, { action: 'CREATE_INDEX', index_name: index })).status).toBe(200);
    const added = await tool(o.tokens.admin, { action: 'ADD_TEXT', index_name: index, text });
    expect(added.status, added.text).toBe(200);
  }
  const agent = await http(url(), 'POST', '/api/agents', {
    token: o.tokens.admin,
    body: { name: 'Librarian', instructions: 'Answer from the documents.', tool_groups: ['document_index_tools'] },
  });
  expect(agent.status, agent.text).toBe(201);
  agentId = agent.body.data.agent_id as string;
  const minted = await http(url(), 'POST', '/api/internal/sandbox-tokens', {
    body: { bot_id: agentId, thread_id: 'kb-thread' },
    headers: { 'x-platform-internal-token': INTERNAL },
  });
  expect(minted.status, minted.text).toBe(201);
  agentToken = minted.body.data.token as string;
}, 180_000);
afterAll(async () => {
  await second?.close();
  await o?.close();
});

describe('knowledge bases', () => {
  it('an agent without a knowledge base searches nothing; a person keeps every index', async () => {
    expect(await searchedIndexes('backups')).toEqual([]);
    const named = await tool(agentToken, { action: 'SEARCH', index_name: 'kb-ops', query: 'backups' });
    expect(named.status).toBe(404);
    expect(named.body.payload).toMatchObject({ index_name: 'kb-ops', knowledge_base_index_names: [] });
    const person = await tool(o.tokens.admin, { action: 'SEARCH', query: 'backups', top_n: 50 });
    expect(person.status).toBe(200);
    const seen = new Set((person.body.data.result.results as Array<{ index_name: string }>).map((h) => h.index_name));
    expect([...seen].sort()).toEqual(['kb-hr', 'kb-ops', 'kb-sales']);
  });

  it('refuses unknown index names, a duplicate name, a member and another tenant, writing nothing', async () => {
    const before = await kbCount();
    const unknown = await createKb({ name: 'Broken', index_names: ['kb-ops', 'no-such-index'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.payload).toMatchObject({
      code: 'unknown_index_names',
      unknown_index_names: ['no-such-index'],
    });
    const byMember = await createKb({ name: 'Mine', index_names: ['kb-ops'] }, o.tokens.member);
    expect(byMember.status).toBe(403);
    expect(byMember.body.payload).toMatchObject({ required_permission: 'manage_agents' });
    // The foreign tenant has no index of these names.
    const foreign = await createKb({ name: 'Theirs', index_names: ['kb-ops'] }, o.tokens.foreign);
    expect(foreign.status).toBe(400);
    expect(await kbCount()).toBe(before);

    const made = await createKb({ name: 'Ops desk', description: 'what operations needs', index_names: ['kb-ops'] });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id as string;
    expect(made.body.data).toMatchObject({
      name: 'Ops desk',
      index_names: ['kb-ops'],
      agent_ids: [],
      created_by: 'root',
    });
    const dup = await createKb({ name: 'Ops desk', index_names: [] });
    expect(dup.status).toBe(409);
    expect(dup.body.payload).toMatchObject({ code: 'knowledge_base_name_taken' });
    const other = await createKb({ name: 'Sales desk', index_names: ['kb-sales'] });
    const renameClash = await http(url(), 'PATCH', `/api/knowledge-bases/${other.body.data.id}`, {
      token: o.tokens.admin,
      body: { name: 'Ops desk' },
    });
    expect(renameClash.status).toBe(409);

    for (const [method, token] of [
      ['GET', o.tokens.foreign],
      ['PATCH', o.tokens.foreign],
      ['DELETE', o.tokens.foreign],
    ] as const) {
      const r = await http(url(), method, `/api/knowledge-bases/${id}`, {
        token,
        ...(method === 'PATCH' ? { body: { index_names: [] } } : {}),
      });
      expect(r.status, `${method} from another tenant`).toBe(404);
    }
    expect((await http(url(), 'DELETE', `/api/knowledge-bases/${id}`, { token: o.tokens.member })).status).toBe(403);
    const listed = await http(url(), 'GET', '/api/knowledge-bases', { token: o.tokens.member });
    expect(listed.body.data.knowledge_bases.map((k: { name: string }) => k.name)).toEqual(['Ops desk', 'Sales desk']);
    const foreignList = await http(url(), 'GET', '/api/knowledge-bases', { token: o.tokens.foreign });
    expect(foreignList.body.data.knowledge_bases).toEqual([]);
    expect(await query(o.stack.db.url, 'select index_names from knowledge_bases where id = $1', [id])).toEqual([
      { index_names: ['kb-ops'] },
    ]);
  });

  it('assigns knowledge bases to an agent: SEARCH and ASK see their indexes only, and a change answers at once in every API process', async () => {
    const bundle = await createKb({ name: 'Support', index_names: ['kb-ops', 'kb-sales'] });
    const kb = bundle.body.data.id as string;
    const assignPath = `/api/agents/${agentId}/knowledge-bases`;

    const unknownKb = await http(url(), 'PUT', assignPath, {
      token: o.tokens.admin,
      body: { knowledge_base_ids: [kb, 'kb_00000000000000000000000000000000'] },
    });
    expect(unknownKb.status).toBe(400);
    expect(unknownKb.body.payload).toMatchObject({ code: 'unknown_knowledge_bases' });
    expect(
      (await http(url(), 'PUT', assignPath, { token: o.tokens.member, body: { knowledge_base_ids: [kb] } })).status,
    ).toBe(403);
    const foreign = await http(url(), 'PUT', assignPath, { token: o.tokens.foreign, body: { knowledge_base_ids: [] } });
    expect(foreign.status).toBe(404);
    expect(
      (
        await http(url(), 'PUT', '/api/agents/no-such-agent/knowledge-bases', {
          token: o.tokens.admin,
          body: { knowledge_base_ids: [kb] },
        })
      ).status,
    ).toBe(404);
    expect(await query(o.stack.db.url, 'select * from agent_knowledge_bases')).toEqual([]);

    const assigned = await http(url(), 'PUT', assignPath, {
      token: o.tokens.admin,
      body: { knowledge_base_ids: [kb] },
    });
    expect(assigned.status, assigned.text).toBe(200);
    expect(assigned.body.data).toMatchObject({ agent_id: agentId, index_names: ['kb-ops', 'kb-sales'] });
    expect(
      (await http(url(), 'GET', `/api/knowledge-bases/${kb}`, { token: o.tokens.admin })).body.data.agent_ids,
    ).toEqual([agentId]);

    expect(await searchedIndexes('backups')).toEqual(['kb-ops', 'kb-sales']);
    expect(await searchedIndexes('backups', second.url)).toEqual(['kb-ops', 'kb-sales']);
    const hr = await tool(agentToken, { action: 'SEARCH', index_name: 'kb-hr', query: 'holidays' });
    expect(hr.status).toBe(404);
    const ask = await tool(agentToken, { action: 'ASK', query: 'when do backups run?', top_n: 10 });
    expect(ask.status, ask.text).toBe(200);
    const askedFrom = new Set((ask.body.data.result.sources as Array<{ index_name: string }>).map((s) => s.index_name));
    expect(askedFrom.size).toBeGreaterThan(0);
    expect([...askedFrom].every((n) => n === 'kb-ops' || n === 'kb-sales')).toBe(true);

    // Taken out through the second process: the first answers without it on the very next call.
    const narrowed = await http(second.url, 'PATCH', `/api/knowledge-bases/${kb}`, {
      token: o.tokens.admin,
      body: { index_names: ['kb-sales'] },
    });
    expect(narrowed.status, narrowed.text).toBe(200);
    expect(await searchedIndexes('backups')).toEqual(['kb-sales']);
    const gone = await tool(agentToken, { action: 'SEARCH', index_name: 'kb-ops', query: 'backups' });
    expect(gone.status).toBe(404);
    const goneAsk = await tool(agentToken, { action: 'ASK', index_name: 'kb-ops', query: 'when do backups run?' });
    expect(goneAsk.status).toBe(404);
    // And the other way round.
    await http(url(), 'PATCH', `/api/knowledge-bases/${kb}`, {
      token: o.tokens.admin,
      body: { index_names: ['kb-hr'] },
    });
    expect(await searchedIndexes('backups', second.url)).toEqual(['kb-hr']);

    // A person's view is unchanged by any of it.
    const person = await tool(o.tokens.admin, { action: 'SEARCH', index_name: 'kb-ops', query: 'backups' });
    expect(person.status).toBe(200);

    // Bundles name indexes: a renamed index stays in them under its new name, a deleted one leaves them.
    const renamed = await tool(o.tokens.admin, {
      action: 'RENAME_INDEX',
      index_name: 'kb-hr',
      new_index_name: 'kb-people',
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(await searchedIndexes('backups')).toEqual(['kb-people']);
    expect(
      (await http(url(), 'GET', `/api/knowledge-bases/${kb}`, { token: o.tokens.admin })).body.data.index_names,
    ).toEqual(['kb-people']);
    expect((await tool(o.tokens.admin, { action: 'DELETE_INDEX', index_name: 'kb-people' })).status).toBe(200);
    expect(await searchedIndexes('backups')).toEqual([]);
    expect(
      (await http(url(), 'GET', `/api/knowledge-bases/${kb}`, { token: o.tokens.admin })).body.data.index_names,
    ).toEqual([]);

    const deleted = await http(url(), 'DELETE', `/api/knowledge-bases/${kb}`, { token: o.tokens.admin });
    expect(deleted.status).toBe(200);
    expect(await searchedIndexes('backups', second.url)).toEqual([]);
    expect((await http(url(), 'GET', assignPath, { token: o.tokens.member })).body.data).toEqual({
      agent_id: agentId,
      knowledge_bases: [],
      index_names: [],
    });
  });

  it('deleting an agent removes its assignments: the bundle no longer names it', async () => {
    const kb = await createKb({ name: 'Temp bundle', index_names: ['kb-sales'] });
    expect(kb.status, kb.text).toBe(201);
    const kbId = kb.body.data.id as string;
    const agent = await http(url(), 'POST', '/api/agents', {
      token: o.tokens.admin,
      body: { name: 'Short-lived', instructions: 'Answer briefly.', tool_groups: ['document_index_tools'] },
    });
    expect(agent.status, agent.text).toBe(201);
    const shortLived = agent.body.data.agent_id as string;
    const put = await http(url(), 'PUT', `/api/agents/${shortLived}/knowledge-bases`, {
      token: o.tokens.admin,
      body: { knowledge_base_ids: [kbId] },
    });
    expect(put.status, put.text).toBe(200);
    const assignments = () =>
      query(o.stack.db.url, 'select agent_id from agent_knowledge_bases where knowledge_base_id = $1', [kbId]);
    expect(await assignments()).toEqual([{ agent_id: shortLived }]);

    const deleted = await http(url(), 'DELETE', `/api/agents/${shortLived}`, { token: o.tokens.admin });
    expect(deleted.status, deleted.text).toBe(200);
    expect(await assignments()).toEqual([]);
    const bundle = await http(url(), 'GET', `/api/knowledge-bases/${kbId}`, { token: o.tokens.admin });
    expect(bundle.status).toBe(200);
    expect(bundle.body.data.agent_ids).toEqual([]);
  });
});
