/**
 * Knowledge-base edits (issue 13) against a real Git smart-HTTP server and a fake Git host API on
 * loopback: a documents source synced and feeding an index; `propose_kb_edit` stages files (A with
 * content, M with search/replace) and refuses what the spec names; `open_kb_pull_request` raises an
 * Action Review proposal `kb.pull_request.v1`; a person approves and executes it → the branch
 * `kb-edit/<proposal id>` is on the server (read back with system git), the pull request is opened on
 * the fake forge, the receipt carries pr_url and changed_files and the staged edits are cleared;
 * a rejected proposal pushes nothing.
 */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitRepo } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { startGitStack, tokenCredentials, type GitStack } from '../managed-sources/support.js';

interface PullRequestCall {
  auth: string | undefined;
  body: { title: string; head: string; base: string; body: string };
}

let env: GitStack;
let stack: Stack;
let admin: string;
let other: string;
let repo: GitRepo;
let src: string;
let forge: { url: string; calls: PullRequestCall[]; server: Server; fail: { next: boolean } };
const AUTH = { username: 'bot', password: 'kb-token' };
const INTERNAL = 'kb-internal-secret';
const SETUP = '# Setup\n\nInstall the agent.\nRun the agent.\nRun the agent again.\n';

const tool = (args: Record<string, unknown>, token = admin) =>
  http(stack.url, 'POST', '/api/tool_call', { token, body: { tool: '_document_index', arguments: args } });
const proposalPath = (id: string, suffix = '') => `/api/action-review/proposals/${id}${suffix}`;
const serverGit = (...args: string[]) =>
  execFileSync('git', ['--git-dir', path.join(env.gitServer.root, 'kb-owner/kb.git'), ...args])
    .toString()
    .trim();
const remoteBranches = () => serverGit('for-each-ref', '--format=%(refname)', 'refs/heads/').split('\n');
const staged = async () =>
  (await query(stack.db.url, 'select path, status, content, proposer from kb_staged_edits order by path')) as Array<{
    path: string;
    status: string;
    content: string;
    proposer: string;
  }>;

async function startForge() {
  const calls: PullRequestCall[] = [];
  const fail = { next: false };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/repos/kb-owner/kb/pulls' && fail.next) {
        fail.next = false;
        res.statusCode = 502;
        return void res.end('{"message":"upstream down"}');
      }
      if (req.method === 'POST' && req.url === '/repos/kb-owner/kb/pulls') {
        calls.push({ auth: req.headers.authorization, body: JSON.parse(raw) });
        res.statusCode = 201;
        return void res.end(
          JSON.stringify({ html_url: `https://forge.test/kb-owner/kb/pull/${calls.length}`, number: calls.length }),
        );
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, server, fail };
}

beforeAll(async () => {
  env = await startGitStack({
    dataDirPrefix: 'kb-edit-data-',
    gitAuth: AUTH,
    env: { PLATFORM_INTERNAL_TOKEN: INTERNAL },
  });
  ({ stack, admin } = env);
  other = await env.idp.sign({ sub: 'kb-other', roles: ['admin'] });
  forge = await startForge();
  // The forge API answers /repos/<owner>/<name>/pulls: the repository URL's last two segments.
  repo = env.gitServer.repo('kb-owner/kb');
  repo.write({
    'docs/guides/setup.md': SETUP,
    'docs/guides/twice.md': 'alpha beta alpha\n',
    'docs/readme.md': '# Docs\n',
    'README.md': '# Repo\n',
  });
  const created = await http(stack.url, 'POST', '/api/managed-sources', {
    token: admin,
    body: {
      name: 'Knowledge base',
      repo_url: repo.url,
      scan_types_enabled: ['document_indexes'],
      documents_root: 'docs',
      credentials: tokenCredentials(AUTH),
      sync_now: true,
    },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.body.sync.outcome).toBe('updated');
  src = created.body.source.source_id as string;
  // The sync fed the index `guides` (the first-level folder docs/guides), linked to the source.
  expect(created.body.sync.document_feed.indexes).toMatchObject([{ index_name: 'guides', count: 2 }]);
  const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
    token: admin,
    body: { content: `enhancements:\n  knowledge_base:\n    forge_api_url: ${forge.url}\n` },
  });
  expect(applied.status, applied.text).toBe(200);
}, 180_000);

afterAll(async () => {
  await new Promise<void>((r) => forge?.server.close(() => r()));
  await env?.close();
});

describe('propose_kb_edit', () => {
  it('stages a new file with content (A) and an edit with search/replace (M), through an index name or a source id', async () => {
    const added = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: 'guides',
      relative_path: 'guides/new-page.md',
      content: '# New page\n\nHello.\n',
      note: 'a new page',
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body.data.result).toMatchObject({
      Success: true,
      source_id: src,
      path: 'docs/guides/new-page.md',
      status: 'A',
    });
    expect(added.body.data.result.diff_summary).toContain('new file, +4 lines');

    const edited = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: src,
      relative_path: 'guides/setup.md',
      search: 'Install the agent.',
      replace: 'Install the agent with the installer.',
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.data.result).toMatchObject({ path: 'docs/guides/setup.md', status: 'M' });
    expect(edited.body.data.result.diff_summary).toBe('-1 +1 lines (changed region starts at line 3)');

    // A second search on the same path applies to what is already staged; the row is replaced, not added.
    const again = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: src,
      relative_path: 'guides/setup.md',
      search: 'Run the agent again.',
      replace: 'Run it once more.',
    });
    expect(again.status, again.text).toBe(200);
    const rows = await staged();
    expect(rows.map((r) => [r.path, r.status])).toEqual([
      ['docs/guides/new-page.md', 'A'],
      ['docs/guides/setup.md', 'M'],
    ]);
    expect(rows[1]!.content).toBe(
      '# Setup\n\nInstall the agent with the installer.\nRun the agent.\nRun it once more.\n',
    );
  });

  it('refuses a search that is missing or not unique, and a search on a file that does not exist', async () => {
    const before = await staged();
    const missing = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: src,
      relative_path: 'guides/twice.md',
      search: 'gamma',
      replace: 'delta',
    });
    expect(missing.status).toBe(409);
    expect(missing.body.payload).toMatchObject({ reason: 'search_not_found', occurrences: 0 });
    const twice = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: src,
      relative_path: 'guides/twice.md',
      search: 'alpha',
      replace: 'omega',
    });
    expect(twice.status).toBe(409);
    expect(twice.body.payload).toMatchObject({ reason: 'search_not_unique', occurrences: 2 });
    const noFile = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: src,
      relative_path: 'guides/none.md',
      search: 'x',
      replace: 'y',
    });
    expect(noFile.status).toBe(404);
    expect(noFile.body.payload.reason).toBe('kb_file_not_found');
    expect(await staged()).toEqual(before);
  });

  it('refuses bad paths and extensions, both content and search, neither, and unknown or unmanaged targets', async () => {
    const before = await staged();
    const bad = async (args: Record<string, unknown>, status: number, reason: string) => {
      const r = await tool({ action: 'propose_kb_edit', source_id_or_index: src, ...args });
      expect(r.status, r.text).toBe(status);
      expect(r.body.payload.reason).toBe(reason);
    };
    for (const relative_path of [
      'guides/../../README.md',
      '../README.md',
      '/guides/a.md',
      'guides//a.md',
      'guides\\a.md',
      'top-level.md',
      '',
    ])
      await bad({ relative_path, content: 'x' }, 400, 'invalid_kb_path');
    for (const relative_path of ['guides/script.sh', 'guides/page.html', 'guides/noext'])
      await bad({ relative_path, content: 'x' }, 400, 'invalid_kb_path');
    await bad(
      { relative_path: 'guides/setup.md', content: 'x', search: 'Run', replace: 'y' },
      400,
      'kb_edit_ambiguous',
    );
    await bad({ relative_path: 'guides/setup.md' }, 400, 'kb_edit_empty');
    await bad({ relative_path: 'guides/setup.md', content: SETUP }, 400, 'kb_edit_no_change');
    await bad(
      { relative_path: 'guides/a.md', content: 'x', source_id_or_index: 'no-such' },
      404,
      'kb_source_not_found',
    );
    expect((await tool({ action: 'CREATE_INDEX', index_name: 'plain' })).status).toBe(200);
    await bad({ relative_path: 'guides/a.md', content: 'x', source_id_or_index: 'plain' }, 409, 'not_a_managed_index');
    expect(await staged()).toEqual(before);
  });
});

describe('open_kb_pull_request', () => {
  it('refuses when the caller staged nothing for the source', async () => {
    const r = await tool({ action: 'open_kb_pull_request', source_id_or_index: src }, other);
    expect(r.status).toBe(409);
    expect(r.body.payload.reason).toBe('no_staged_edits');
    const filtered = await tool({ action: 'open_kb_pull_request', source_id_or_index: src, target_index: 'plain' });
    expect(filtered.status).toBe(409);
    expect(filtered.body.payload.reason).toBe('no_staged_edits');
  });

  it('raises a proposal; once a person approves and executes it the branch is pushed and the pull request opened', async () => {
    const opened = await tool({
      action: 'open_kb_pull_request',
      source_id_or_index: 'guides',
      title: 'Handbook: installer and new page',
      commit_message: 'Update the handbook',
    });
    expect(opened.status, opened.text).toBe(200);
    const result = opened.body.data.result;
    expect(result).toMatchObject({
      Success: true,
      status: 'pending_review',
      changed_files: [
        { path: 'docs/guides/new-page.md', status: 'A' },
        { path: 'docs/guides/setup.md', status: 'M' },
      ],
      proposal: { action_type: 'kb.pull_request.v1', status: 'requested' },
    });
    const id = result.proposal.proposal_id as string;
    const branch = `kb-edit/${id}`;
    // Nothing reaches the repository before a person decides.
    expect(remoteBranches()).not.toContain(`refs/heads/${branch}`);
    expect(forge.calls).toHaveLength(0);

    const approve = await http(stack.url, 'POST', proposalPath(id, '/approve'), { token: other, body: {} });
    expect(approve.status, approve.text).toBe(200);
    const executed = await http(stack.url, 'POST', proposalPath(id, '/execute'), { token: other });
    expect(executed.status, executed.text).toBe(200);
    expect(executed.body).toMatchObject({ final_status: 'executed' });
    expect(executed.body.execution_result).toMatchObject({
      pr_url: 'https://forge.test/kb-owner/kb/pull/1',
      pr_number: 1,
      branch,
      base_branch: 'main',
      changed_files: [
        { path: 'docs/guides/new-page.md', status: 'A' },
        { path: 'docs/guides/setup.md', status: 'M' },
      ],
    });

    expect(remoteBranches()).toContain(`refs/heads/${branch}`);
    const tip = serverGit('rev-parse', `refs/heads/${branch}`);
    expect(tip).toBe(executed.body.execution_result.commit_sha);
    expect(serverGit('rev-parse', `${tip}^`)).toBe(serverGit('rev-parse', 'refs/heads/main'));
    expect(serverGit('show', `${tip}:docs/guides/new-page.md`)).toBe('# New page\n\nHello.');
    expect(serverGit('show', `${tip}:docs/guides/setup.md`)).toContain('Install the agent with the installer.');
    expect(serverGit('diff', '--name-status', `${tip}^`, tip).split('\n')).toEqual([
      'A\tdocs/guides/new-page.md',
      'M\tdocs/guides/setup.md',
    ]);
    expect(serverGit('log', '-1', '--format=%s', tip)).toBe('Update the handbook');

    expect(forge.calls).toHaveLength(1);
    expect(forge.calls[0]!.auth).toBe('Bearer kb-token');
    expect(forge.calls[0]!.body).toMatchObject({
      title: 'Handbook: installer and new page',
      head: branch,
      base: 'main',
    });
    expect(forge.calls[0]!.body.body).toContain('docs/guides/new-page.md: a new page');
    expect(await staged()).toEqual([]);
  });

  it('a rejected proposal pushes nothing and keeps the staged edits', async () => {
    const stagedNow = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: src,
      relative_path: 'guides/later.txt',
      content: 'later\n',
    });
    expect(stagedNow.status, stagedNow.text).toBe(200);
    const opened = await tool({ action: 'open_kb_pull_request', source_id_or_index: src });
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.data.result.changed_files).toEqual([{ path: 'docs/guides/later.txt', status: 'A' }]);
    const id = opened.body.data.result.proposal.proposal_id as string;
    const branchesBefore = remoteBranches();
    const rejected = await http(stack.url, 'POST', proposalPath(id, '/reject'), {
      token: other,
      body: { reason: 'not now' },
    });
    expect(rejected.status, rejected.text).toBe(200);
    const execute = await http(stack.url, 'POST', proposalPath(id, '/execute'), { token: other });
    expect(execute.status, execute.text).toBe(200);
    expect(execute.body).toMatchObject({
      success: false,
      claimed: false,
      final_status: null,
      refusal_reason: 'not_approved',
    });
    expect(remoteBranches()).toEqual(branchesBefore);
    expect(remoteBranches()).not.toContain(`refs/heads/kb-edit/${id}`);
    expect(forge.calls).toHaveLength(1);
    expect((await staged()).map((r) => r.path)).toEqual(['docs/guides/later.txt']);
  });
});

describe('open_kb_pull_request when the Git host fails', () => {
  it('a pushed branch whose pull request could not be opened needs reconciliation; the staged edits stay', async () => {
    const opened = await tool({ action: 'open_kb_pull_request', source_id_or_index: src });
    expect(opened.status, opened.text).toBe(200);
    const id = opened.body.data.result.proposal.proposal_id as string;
    expect((await http(stack.url, 'POST', proposalPath(id, '/approve'), { token: other, body: {} })).status).toBe(200);
    forge.fail.next = true;
    const executed = await http(stack.url, 'POST', proposalPath(id, '/execute'), { token: other });
    expect(executed.status, executed.text).toBe(200);
    expect(executed.body).toMatchObject({ final_status: 'reconciliation_required', execution_result: null });
    expect(executed.body.error_detail).toContain(`kb-edit/${id} was pushed but the pull request could not be opened`);
    expect(remoteBranches()).toContain(`refs/heads/kb-edit/${id}`);
    expect(forge.calls).toHaveLength(1);
    expect((await staged()).map((r) => r.path)).toEqual(['docs/guides/later.txt']);
  });
});

describe('agents', () => {
  it("stage their own edits; an agent's pull request is a proposal bound to its thread, the person's staging untouched", async () => {
    const minted = await http(stack.url, 'POST', '/api/internal/sandbox-tokens', {
      body: { bot_id: 'kb-bot', thread_id: 'kb-thread' },
      headers: { 'x-platform-internal-token': INTERNAL },
    });
    expect(minted.status, minted.text).toBe(201);
    const agent = minted.body.data.token as string;
    const personBefore = await staged();
    const nothing = await tool({ action: 'open_kb_pull_request', source_id_or_index: src }, agent);
    expect(nothing.status).toBe(409);
    expect(nothing.body.payload.reason).toBe('no_staged_edits');
    const edit = await tool(
      {
        action: 'propose_kb_edit',
        source_id_or_index: 'guides',
        relative_path: 'guides/setup.md',
        search: 'Run the agent.',
        replace: 'Start the agent.',
      },
      agent,
    );
    expect(edit.status, edit.text).toBe(200);
    expect(edit.body.data.result).toMatchObject({ status: 'M', path: 'docs/guides/setup.md' });
    const opened = await tool({ action: 'open_kb_pull_request', source_id_or_index: src }, agent);
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.data.result).toMatchObject({
      status: 'pending_review',
      changed_files: [{ path: 'docs/guides/setup.md', status: 'M' }],
      proposal: { action_type: 'kb.pull_request.v1', status: 'requested', thread_id: 'kb-thread' },
    });
    const rows = await staged();
    expect(rows.filter((r) => r.proposer === 'agent:kb-bot').map((r) => r.path)).toEqual(['docs/guides/setup.md']);
    expect(rows.filter((r) => r.proposer !== 'agent:kb-bot')).toEqual(personBefore);
  });
});

describe('managed_repo_guard', () => {
  it('ADD_TEXT, ADD_DOCUMENTS and DELETE_DOCUMENT on the Git-backed index point to propose_kb_edit', async () => {
    for (const args of [
      { action: 'ADD_TEXT', index_name: 'guides', text: 'x' },
      { action: 'ADD_DOCUMENTS', index_name: 'guides', filepath: 'docs' },
    ]) {
      const r = await tool(args);
      expect(r.status, r.text).toBe(409);
      expect(r.body.payload).toMatchObject({ code: 'managed_repo_guard', managed_document_repo: true });
      expect(r.body.payload.next_steps[0]).toContain('propose_kb_edit');
    }
    const del = await tool({ action: 'DELETE_DOCUMENT', index_name: 'guides', filepath: 'guides/setup.md' });
    expect(del.status, del.text).toBe(409);
    expect(del.body.payload).toMatchObject({ code: 'managed_repo_guard', managed_document_repo: true });
    expect(del.body.payload.next_steps[0]).toContain('propose_kb_edit');
    expect(
      await query(
        stack.db.url,
        `select 1 from doc_documents where path = 'guides/setup.md' and managed_source_id = $1`,
        [src],
      ),
    ).toHaveLength(1);
  });
});

describe('delete and rename (operation)', () => {
  let third: string;
  const mine = async () => (await staged()).filter((r) => r.proposer !== 'agent:kb-bot' && !personBefore.has(r.path));
  let personBefore: Set<string>;
  const propose = (args: Record<string, unknown>) =>
    tool({ action: 'propose_kb_edit', source_id_or_index: src, ...args }, third);

  beforeAll(async () => {
    third = await env.idp.sign({ sub: 'kb-third', roles: ['admin'] });
    personBefore = new Set((await staged()).map((r) => r.path));
  });

  it('refuses bad deletes and renames and writes nothing', async () => {
    const before = await staged();
    const bad = async (args: Record<string, unknown>, status: number, reason: string) => {
      const r = await propose(args);
      expect(r.status, r.text).toBe(status);
      expect(r.body.payload.reason).toBe(reason);
    };
    await bad({ operation: 'delete', relative_path: 'guides/twice.md', content: 'x' }, 400, 'kb_edit_ambiguous');
    await bad({ operation: 'delete', relative_path: 'guides/twice.md', search: 'alpha' }, 400, 'kb_edit_ambiguous');
    await bad({ operation: 'delete', relative_path: 'guides/none.md' }, 404, 'kb_file_not_found');
    await bad({ operation: 'delete', relative_path: 'top.md' }, 400, 'invalid_kb_path');
    await bad(
      { relative_path: 'guides/setup.md', content: 'x', new_relative_path: 'guides/b.md' },
      400,
      'kb_edit_ambiguous',
    );
    await bad({ operation: 'rename', relative_path: 'guides/setup.md' }, 400, 'invalid_kb_path');
    for (const new_relative_path of ['top.md', 'guides/../x.md', 'guides/x.sh', '/guides/x.md'])
      await bad({ operation: 'rename', relative_path: 'guides/setup.md', new_relative_path }, 400, 'invalid_kb_path');
    await bad(
      { operation: 'rename', relative_path: 'guides/setup.md', new_relative_path: 'guides/setup.md' },
      400,
      'kb_edit_no_change',
    );
    await bad(
      { operation: 'rename', relative_path: 'guides/setup.md', new_relative_path: 'guides/twice.md' },
      409,
      'kb_file_exists',
    );
    await bad(
      { operation: 'rename', relative_path: 'guides/none.md', new_relative_path: 'guides/other.md' },
      404,
      'kb_file_not_found',
    );
    await bad(
      {
        operation: 'rename',
        relative_path: 'guides/setup.md',
        new_relative_path: 'manuals/setup.md',
        search: 'not in the file',
        replace: 'y',
      },
      409,
      'search_not_found',
    );
    expect(await staged()).toEqual(before);
  });

  it('stages D and R; the pull request carries them and the pushed branch deletes and renames the files', async () => {
    const del = await propose({ operation: 'delete', relative_path: 'guides/twice.md', note: 'duplicate words' });
    expect(del.status, del.text).toBe(200);
    expect(del.body.data.result).toMatchObject({ path: 'docs/guides/twice.md', status: 'D', operation: 'delete' });
    expect(del.body.data.result.diff_summary).toBe('deleted, -2 lines');

    // A pending text change of the old path travels with the rename.
    const edit = await propose({ relative_path: 'guides/setup.md', search: 'Run the agent again.', replace: 'Rerun.' });
    expect(edit.status, edit.text).toBe(200);
    const moved = await propose({
      operation: 'rename',
      relative_path: 'guides/setup.md',
      new_relative_path: 'manuals/setup.md',
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.result).toMatchObject({
      path: 'docs/manuals/setup.md',
      previous_path: 'docs/guides/setup.md',
      status: 'R',
      operation: 'rename',
    });
    expect(moved.body.data.result.diff_summary).toContain('renamed from docs/guides/setup.md, -1 +1 lines');
    // The old path is no longer staged on its own, and is not writable while the rename is staged.
    const oldPath = await propose({ relative_path: 'guides/setup.md', content: 'again\n' });
    expect(oldPath.status, oldPath.text).toBe(409);
    expect(oldPath.body.payload).toMatchObject({
      reason: 'kb_path_staged_rename',
      renamed_to: 'docs/manuals/setup.md',
    });
    // A later write of the new path keeps the rename.
    const more = await propose({
      relative_path: 'manuals/setup.md',
      search: 'Install the agent.',
      replace: 'Install.',
    });
    expect(more.status, more.text).toBe(200);
    expect(more.body.data.result).toMatchObject({ status: 'R', previous_path: 'docs/guides/setup.md' });
    const rows = await mine();
    expect(rows.map((r) => [r.path, r.status])).toEqual([
      ['docs/guides/twice.md', 'D'],
      ['docs/manuals/setup.md', 'R'],
    ]);
    expect(rows[1]!.content).toBe('# Setup\n\nInstall.\nRun the agent.\nRerun.\n');

    const opened = await tool({ action: 'open_kb_pull_request', source_id_or_index: src, title: 'Tidy' }, third);
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.data.result.changed_files).toEqual([
      { path: 'docs/guides/twice.md', status: 'D' },
      { path: 'docs/manuals/setup.md', status: 'R', previous_path: 'docs/guides/setup.md' },
    ]);
    const id = opened.body.data.result.proposal.proposal_id as string;
    expect((await http(stack.url, 'POST', proposalPath(id, '/approve'), { token: other, body: {} })).status).toBe(200);
    const executed = await http(stack.url, 'POST', proposalPath(id, '/execute'), { token: other });
    expect(executed.status, executed.text).toBe(200);
    expect(executed.body).toMatchObject({ final_status: 'executed' });
    const tip = serverGit('rev-parse', `refs/heads/kb-edit/${id}`);
    expect(serverGit('rev-parse', `${tip}^`)).toBe(serverGit('rev-parse', 'refs/heads/main'));
    // Git infers renames from similarity; this 5-line file keeps 37% of its bytes after the two edits.
    const changes = serverGit('diff', '--name-status', '--find-renames=30%', `${tip}^`, tip).split('\n');
    expect(changes).toHaveLength(2);
    expect(changes[0]).toBe('D\tdocs/guides/twice.md');
    expect(changes[1]).toMatch(/^R\d+\tdocs\/guides\/setup\.md\tdocs\/manuals\/setup\.md$/);
    expect(serverGit('show', `${tip}:docs/manuals/setup.md`)).toBe('# Setup\n\nInstall.\nRun the agent.\nRerun.');
    expect(serverGit('ls-tree', '-r', '--name-only', tip).split('\n')).toEqual([
      'README.md',
      'docs/manuals/setup.md',
      'docs/readme.md',
    ]);
    expect(await mine()).toEqual([]);
  });
});
