/**
 * A synced managed source feeds document indexes (issue 13) against a real Git smart-HTTP server:
 * one index per first-level folder of `documents_root`, linked to the source (`managed_source_id`),
 * its documents Git-backed and searchable; a second sync after a change and a deletion updates them;
 * an index of the same name not fed by the source is a name conflict (never taken over);
 * propose_kb_edit resolves the source by the fed index's name; the feed summary is on the source view;
 * `pr` names the newest open_kb_pull_request proposal for the folder; `overwrite_indexes` adopts a
 * conflicting hand-made index (never a system index or one fed by another source);
 * deleting the source leaves its indexes as ordinary ones.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import type { GitRepo } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { managedSources, startGitStack, tokenCredentials, type GitStack } from '../managed-sources/support.js';

let env: GitStack;
let stack: Stack;
let admin: string;
let repo: GitRepo;
let src: string;
const AUTH = { username: 'bot', password: 'feed-token' };
const sources = managedSources(() => env, {});
let forge: Server;

/** A fake Git host API on loopback: opening a pull request on feed-owner/kb answers its html_url. */
async function startForge(): Promise<string> {
  forge = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/repos/feed-owner/kb/pulls') {
        res.statusCode = 201;
        return void res.end(JSON.stringify({ html_url: 'https://forge.test/feed-owner/kb/pull/7', number: 7 }));
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => forge.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(forge.address() as AddressInfo).port}`;
}

const tool = (args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { token: admin, body: { tool: '_document_index', arguments: args } });
const ok = async (args: Record<string, unknown>) => {
  const res = await tool(args);
  expect(res.status, res.text).toBe(200);
  return res.body.data.result;
};
const search = async (q: string, index: string) =>
  ((await ok({ action: 'SEARCH', query: q, index_name: index })).results as Array<{ filepath: string }>).map(
    (r) => r.filepath,
  );
const docs = (index: string) =>
  query<{ path: string; managed_source_id: string | null }>(
    stack.db.url,
    `select d.path, d.managed_source_id from doc_documents d join doc_indexes i on i.id = d.index_id
      where i.name = $1 order by d.path`,
    [index],
  );

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'kb-feed-data-', gitAuth: AUTH });
  ({ stack, admin } = env);
  // An index named like a folder, created by hand before the first sync: a name conflict.
  expect((await tool({ action: 'CREATE_INDEX', index_name: 'notes' })).status).toBe(200);
  repo = env.gitServer.repo('feed-owner/kb');
  repo.write({
    'docs/guides/setup.md': '# Setup\n\nInstall the harvester agent with the installer.\n',
    'docs/guides/backup.md': '# Backups\n\nRestore a backup from the nightly snapshot.\n',
    'docs/guides/image.png': 'not a document',
    'docs/policies/leave.txt': 'Employees get thirty holidays per year.\n',
    'docs/notes/todo.md': '# Todo\n\nnothing\n',
    'docs/readme.md': '# Top-level files feed no index\n',
    'README.md': '# Repo\n',
  });
}, 180_000);

afterAll(async () => {
  forge?.close();
  await env?.close();
});

describe('document feed of a managed source', () => {
  it('a sync creates one index per first-level folder, linked to the source, its documents searchable', async () => {
    const created = await http(stack.url, 'POST', '/api/managed-sources', {
      token: admin,
      body: {
        name: 'Feed',
        repo_url: repo.url,
        scan_types_enabled: ['document_indexes'],
        documents_root: 'docs',
        credentials: tokenCredentials(AUTH),
        sync_now: true,
      },
    });
    expect(created.status, created.text).toBe(201);
    src = created.body.source.source_id as string;
    const sync = created.body.sync;
    expect(sync.outcome).toBe('updated');
    expect(sync.hydrate_errors).toEqual([]);
    const feed = sync.document_feed;
    expect(feed.indexes.map((i: { index_name: string }) => i.index_name)).toEqual(['guides', 'notes', 'policies']);
    expect(feed.indexes[0]).toMatchObject({
      folder: 'guides',
      count: 2,
      index_doc_count: 2,
      index_only_doc_count: 0,
      pending_change_count: 0,
      name_conflict_count: 0,
      requires_overwrite_ack: false,
      ingested: 2,
      removed: 0,
    });
    expect(feed.indexes[1]).toMatchObject({ count: 0, name_conflict_count: 1, requires_overwrite_ack: true });
    expect(feed).toMatchObject({ total_count: 3, total_index_doc_count: 3, waiting: 1 });

    const linked = await query<{ name: string; managed_source_id: string | null }>(
      stack.db.url,
      'select name, managed_source_id from doc_indexes order by name',
    );
    expect(linked).toEqual([
      { name: 'guides', managed_source_id: src },
      { name: 'notes', managed_source_id: null },
      { name: 'policies', managed_source_id: src },
    ]);
    expect(await docs('guides')).toEqual([
      { path: 'guides/backup.md', managed_source_id: src },
      { path: 'guides/setup.md', managed_source_id: src },
    ]);
    // The conflicting index is left as it was.
    expect(await docs('notes')).toEqual([]);
    expect((await search('restore a backup snapshot', 'guides'))[0]).toBe('guides/backup.md');
    expect((await search('holidays per year', 'policies'))[0]).toBe('policies/leave.txt');

    // Git-backed: direct changes are refused with the guard.
    const add = await tool({ action: 'ADD_TEXT', index_name: 'guides', text: 'x' });
    expect(add.status).toBe(409);
    expect(add.body.payload).toMatchObject({ code: 'managed_repo_guard', managed_document_repo: true });
    const del = await tool({ action: 'DELETE_DOCUMENT', index_name: 'guides', filepath: 'guides/setup.md' });
    expect(del.status).toBe(409);

    // The summary is on the source view, and the auto-sync waiting count uses it.
    const view = await sources.source(src);
    expect(view.last_sync.document_feed.total_count).toBe(3);
  });

  it('a second sync after a change and a deletion updates the documents; an unchanged sync ingests nothing', async () => {
    repo.write({ 'docs/guides/setup.md': '# Setup\n\nConfigure the proxy before starting the agent.\n' });
    repo.remove(['docs/guides/backup.md']);
    const res = await sources.sync(src);
    expect(res.status, res.text).toBe(200);
    const jobId = res.body.data.job_id as string;
    const job = await sources.waitJob(src, jobId);
    expect(job.status).toBe('complete');
    expect(job.result.document_feed.indexes[0]).toMatchObject({
      index_name: 'guides',
      count: 1,
      ingested: 1,
      removed: 1,
      unchanged: 0,
    });
    expect(job.result.document_feed.indexes[2]).toMatchObject({ index_name: 'policies', ingested: 0, unchanged: 1 });
    expect(await docs('guides')).toEqual([{ path: 'guides/setup.md', managed_source_id: src }]);
    expect((await search('configure the proxy', 'guides'))[0]).toBe('guides/setup.md');
    expect(await search('restore a backup snapshot', 'guides')).not.toContain('guides/backup.md');
    const chunks = await query<{ n: string }>(
      stack.db.url,
      `select count(*) as n from doc_chunks c join doc_indexes i on i.id = c.index_id where i.name = 'guides'`,
    );
    expect(Number(chunks[0]!.n)).toBe(1);
    await recordHistory(
      'source-sync-kb-document-feed',
      stack.api.deps.temporal.workflow.getHandle(`source-sync/${src}/${jobId}`),
    );
  });

  it('propose_kb_edit resolves the source by the fed index name, and the summary counts the staged edit', async () => {
    const staged = await ok({
      action: 'propose_kb_edit',
      source_id_or_index: 'guides',
      relative_path: 'guides/setup.md',
      search: 'Configure the proxy',
      replace: 'Configure the HTTP proxy',
    });
    expect(staged).toMatchObject({ source_id: src, path: 'docs/guides/setup.md', status: 'M' });
    // An index not fed by the source is refused.
    const notFed = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: 'notes',
      relative_path: 'notes/todo.md',
      content: 'x',
    });
    expect(notFed.status).toBe(409);
    expect(notFed.body.payload).toMatchObject({ reason: 'not_a_managed_index' });
    const res = await sources.sync(src);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.document_feed.indexes[0]).toMatchObject({
      index_name: 'guides',
      pending_change_count: 1,
      proposer: expect.any(String),
      ingested: 0,
      unchanged: 1,
    });
  });

  it('the auto-sync check counts the indexes waiting for a decision (a name conflict) in waiting.document_indexes', async () => {
    expect((await sources.patch(src, { auto_sync: true })).status).toBe(200);
    const summary = await stack.api.deps.temporal.workflow.execute(workflowRef('managedSourceAutoSyncWorkflow'), {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `auto-sync-feed-${src}`,
      args: [{ tenant: stack.config.auth.deploymentTenant }],
    });
    expect(summary).toMatchObject({ checked: 1, synced: 1 });
    const state = (await sources.source(src)).auto_sync_state;
    expect(state.waiting).toMatchObject({ document_indexes: 1, agent_changes: 0 });
  });

  it('pr: the newest knowledge-base pull request proposal changing a file under the folder', async () => {
    const opened = await ok({ action: 'open_kb_pull_request', source_id_or_index: src, title: 'Proxy wording' });
    expect(opened.proposal).toMatchObject({ action_type: 'kb.pull_request.v1', status: 'requested' });
    const proposalId = opened.proposal.proposal_id as string;
    const res = await sources.sync(src);
    expect(res.status, res.text).toBe(200);
    const byName = Object.fromEntries(
      (res.body.data.document_feed.indexes as Array<{ index_name: string }>).map((i) => [i.index_name, i]),
    );
    expect(byName.guides).toMatchObject({
      pr: { proposal_id: proposalId, status: 'requested', url: null, branch: `kb-edit/${proposalId}` },
      pending_change_count: 1,
    });
    // No proposal changes a file under docs/policies or docs/notes.
    expect(byName.policies).toMatchObject({ pr: null });
    expect(byName.notes).toMatchObject({ pr: null });
    expect((await sources.source(src)).last_sync.document_feed.indexes[0].pr.proposal_id).toBe(proposalId);

    // Approved and executed by another person: the pull request is opened, its URL from the receipt.
    const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
      token: admin,
      body: { content: `enhancements:\n  knowledge_base:\n    forge_api_url: ${await startForge()}\n` },
    });
    expect(applied.status, applied.text).toBe(200);
    const reviewer = await env.idp.sign({ sub: 'feed-reviewer', roles: ['admin'] });
    const proposal = `/api/action-review/proposals/${proposalId}`;
    const approve = await http(stack.url, 'POST', `${proposal}/approve`, { token: reviewer, body: {} });
    expect(approve.status, approve.text).toBe(200);
    const executed = await http(stack.url, 'POST', `${proposal}/execute`, { token: reviewer });
    expect(executed.status, executed.text).toBe(200);
    expect(executed.body).toMatchObject({ final_status: 'executed' });
    const after = await sources.sync(src);
    expect(after.status, after.text).toBe(200);
    expect(after.body.data.document_feed.indexes[0]).toMatchObject({
      index_name: 'guides',
      pending_change_count: 0,
      pr: {
        proposal_id: proposalId,
        status: 'executed',
        url: 'https://forge.test/feed-owner/kb/pull/7',
        branch: `kb-edit/${proposalId}`,
      },
    });
  });

  it('overwrite_indexes adopts a conflicting hand-made index; a system index and one fed by another source never', async () => {
    // The hand-made index `notes` gets a document of its own; a second source feeds the index `shared`.
    expect(
      (await tool({ action: 'ADD_TEXT', index_name: 'notes', text: 'Hand-written note about lunch.' })).status,
    ).toBe(200);
    expect((await docs('notes')).map((d) => d.managed_source_id)).toEqual([null]);
    const otherRepo = env.gitServer.repo('feed-owner/other');
    otherRepo.write({ 'docs/shared/faq.md': '# FAQ\n\nThe other source answers questions.\n' });
    const other = await sources.create(otherRepo, {
      name: 'Other feed',
      scan_types_enabled: ['document_indexes'],
      credentials: tokenCredentials(AUTH),
    });
    const otherSync = await sources.sync(other);
    expect(otherSync.status, otherSync.text).toBe(200);
    expect(otherSync.body.data.document_feed.indexes).toMatchObject([{ index_name: 'shared', count: 1 }]);
    repo.write({
      'docs/shared/mine.md': '# Mine\n\nThis source also has a shared folder.\n',
      'docs/twin/x.md': '# Twin\n\nA folder named like a system index.\n',
    });

    // Without the flag the conflicts wait.
    const plain = await sources.sync(src);
    expect(plain.status, plain.text).toBe(200);
    const waiting = plain.body.data.document_feed;
    expect(
      waiting.indexes
        .filter((i: { requires_overwrite_ack: boolean }) => i.requires_overwrite_ack)
        .map((i: { index_name: string }) => i.index_name),
    ).toEqual(['notes', 'shared', 'twin']);
    expect(waiting.indexes.every((i: { adopted: boolean }) => !i.adopted)).toBe(true);
    expect((await docs('notes')).map((d) => d.managed_source_id)).toEqual([null]);

    const acked = await sources.sync(src, { overwrite_indexes: true });
    expect(acked.status, acked.text).toBe(200);
    const byName = Object.fromEntries(
      (acked.body.data.document_feed.indexes as Array<{ index_name: string }>).map((i) => [i.index_name, i]),
    );
    expect(byName.notes).toMatchObject({
      adopted: true,
      count: 1,
      index_doc_count: 1,
      index_only_doc_count: 0,
      name_conflict_count: 0,
      requires_overwrite_ack: false,
      ingested: 1,
    });
    expect(byName.shared).toMatchObject({ adopted: false, name_conflict_count: 1, requires_overwrite_ack: true });
    expect(byName.twin).toMatchObject({ adopted: false, name_conflict_count: 1, requires_overwrite_ack: true });
    expect(byName.guides).toMatchObject({ adopted: false, requires_overwrite_ack: false });
    expect(acked.body.data.document_feed.waiting).toBe(2);
    // The hand-written document is replaced by the folder's documents, all linked to the source.
    expect(await docs('notes')).toEqual([{ path: 'notes/todo.md', managed_source_id: src }]);
    expect((await search('nothing todo', 'notes'))[0]).toBe('notes/todo.md');
    const linked = await query<{ name: string; managed_source_id: string | null; adopted: boolean }>(
      stack.db.url,
      `select name, managed_source_id, adopted_at is not null as adopted from doc_indexes
        where name in ('notes', 'shared', 'twin') order by name`,
    );
    expect(linked).toEqual([
      { name: 'notes', managed_source_id: src, adopted: true },
      { name: 'shared', managed_source_id: other, adopted: false },
    ]);
    expect(await docs('shared')).toEqual([{ path: 'shared/faq.md', managed_source_id: other }]);
    // Now Git-backed: a direct change is refused.
    expect((await tool({ action: 'ADD_TEXT', index_name: 'notes', text: 'x' })).status).toBe(409);

    // A later sync without the flag still reports the adoption.
    const later = await sources.sync(src);
    expect(later.status, later.text).toBe(200);
    const notes = later.body.data.document_feed.indexes.find((i: { index_name: string }) => i.index_name === 'notes');
    expect(notes).toMatchObject({ adopted: true, count: 1, requires_overwrite_ack: false, ingested: 0, unchanged: 1 });

    // The other source goes, so only this source's indexes remain linked.
    const del = await http(stack.url, 'DELETE', `/api/managed-sources/${other}`, { token: admin });
    expect([200, 202]).toContain(del.status);
    await stack.api.deps.temporal.workflow.getHandle(`source-delete/${other}`).result();
  });

  it('deleting the source leaves its indexes as ordinary ones (no longer Git-backed)', async () => {
    const del = await http(stack.url, 'DELETE', `/api/managed-sources/${src}`, { token: admin });
    expect([200, 202]).toContain(del.status);
    await stack.api.deps.temporal.workflow.getHandle(`source-delete/${src}`).result();
    expect(await docs('guides')).toEqual([{ path: 'guides/setup.md', managed_source_id: null }]);
    const linked = await query(
      stack.db.url,
      'select 1 from doc_indexes where managed_source_id is not null or adopted_at is not null',
    );
    expect(linked).toEqual([]);
    expect((await search('configure the proxy', 'guides'))[0]).toBe('guides/setup.md');
    expect((await tool({ action: 'DELETE_DOCUMENT', index_name: 'guides', filepath: 'guides/setup.md' })).status).toBe(
      200,
    );
  });
});
