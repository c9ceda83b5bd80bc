import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitRepo } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { startGitStack, tokenCredentials, type GitStack } from '../managed-sources/support.js';

let env: GitStack;
let stack: Stack;
let admin: string;
let member: string;
let member2: string;
let outsider: string;
let repo: GitRepo;
let src: string;
const AUTH = { username: 'bot', password: 'wiki-token' };
const credentials = tokenCredentials(AUTH);

const get = (p: string, token = member) => http(stack.url, 'GET', p, { token });
const page = (qn: string, token = member) => get(`/api/wiki/v1/pages/${qn}`, token);
const sync = (id: string) => http(stack.url, 'POST', `/api/managed-sources/${id}/sync`, { token: admin, body: {} });

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'wiki-data-', gitAuth: AUTH });
  ({ stack, admin } = env);
  const idp = env.idp;
  member = await idp.sign({ sub: 'mem', roles: ['member'], name: 'Mem One' });
  member2 = await idp.sign({ sub: 'mem2', roles: ['member'] });
  outsider = await idp.sign({ sub: 'out', roles: ['nobody'] });

  repo = env.gitServer.repo('wiki');
  repo.write({
    'docs/index.md':
      '# Home\n\nSee [setup](guides/setup.md) and [the FAQ](./guides/faq#top) and [web](https://example.com).\n',
    'docs/guides/setup.md': '# Setup guide\n\nFirst version. Back [home](../index.md).\n',
    'docs/guides/faq.markdown': '# FAQ\n\nNothing yet.\n',
    'docs/evil.md': [
      '# Evil',
      '',
      '<script>alert(1)</script>',
      '<img src="x.png" onerror="alert(2)">',
      '[click](javascript:alert(3)) and [data](data:text/html;base64,PHNjcmlwdD4=)',
      '<a href="javascript:alert(4)">raw</a> <a href="JaVaScRiPt&#58;alert(6)">encoded</a>',
      '<p onclick="alert(5)">safe text</p>',
      '',
    ].join('\n\n'),
    'docs/notes.txt': 'not a page',
    'agents/a1/agent.yaml': 'agent_id: a1\n',
  });
  const created = await http(stack.url, 'POST', '/api/managed-sources', {
    token: admin,
    body: {
      name: 'Team handbook',
      repo_url: repo.url,
      scan_types_enabled: ['document_indexes'],
      documents_root: 'docs',
      credentials,
      sync_now: true,
    },
  });
  expect(created.status).toBe(201);
  expect(created.body.sync.outcome).toBe('updated');
  src = created.body.source.source_id as string;
}, 120_000);

afterAll(() => env?.close());

describe('team wiki', () => {
  it('needs view_git', async () => {
    expect((await http(stack.url, 'GET', '/api/wiki/v1/tree')).status).toBe(401);
    const refused = await get('/api/wiki/v1/tree', outsider);
    expect(refused.status).toBe(403);
    expect(refused.body.error_type).toBe('forbidden');
    expect((await page(`${src}/index`, outsider)).status).toBe(403);
  });

  it('lists the tree: sources, then folders and pages under a parent', async () => {
    const top = await get('/api/wiki/v1/tree');
    expect(top.status).toBe(200);
    expect(top.body.data).toEqual({
      parent: null,
      nodes: [
        { qualified_name: src, kind: 'source', name: src, title: 'Team handbook', source_id: src, has_children: true },
      ],
    });
    const root = await get(`/api/wiki/v1/tree?parent=${src}`);
    expect(root.status).toBe(200);
    expect(
      root.body.data.nodes.map((n: { qualified_name: string; kind: string; title: string }) => [
        n.qualified_name,
        n.kind,
        n.title,
      ]),
    ).toEqual([
      [`${src}/guides`, 'folder', 'guides'],
      [`${src}/evil`, 'page', 'Evil'],
      [`${src}/index`, 'page', 'Home'],
    ]);
    const guides = await get(`/api/wiki/v1/tree?parent=${encodeURIComponent(`${src}/guides`)}`);
    expect(guides.body.data.nodes.map((n: { qualified_name: string }) => n.qualified_name)).toEqual([
      `${src}/guides/faq`,
      `${src}/guides/setup`,
    ]);
    const unknown = await get(`/api/wiki/v1/tree?parent=${src}/nowhere`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_type).toBe('not_found');
  });

  it('renders a page with its links rewritten and its backlinks', async () => {
    const res = await page(`${src}/index`);
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d).toMatchObject({ qualified_name: `${src}/index`, source_id: src, path: 'docs/index.md', title: 'Home' });
    expect(d.commit_sha).toBe(repo.head());
    expect(d.links.map((l: { qualified_name: string }) => l.qualified_name)).toEqual([
      `${src}/guides/setup`,
      `${src}/guides/faq`,
    ]);
    expect(d.html).toContain(`href="/api/wiki/v1/pages/${src}/guides/setup"`);
    expect(d.html).toContain('href="https://example.com"');
    expect(d.backlinks.map((l: { qualified_name: string }) => l.qualified_name)).toEqual([`${src}/guides/setup`]);
    const setup = await page(`${src}/guides/setup`);
    expect(setup.body.data.backlinks).toEqual([
      { qualified_name: `${src}/index`, title: 'Home', url: `/api/wiki/v1/pages/${src}/index` },
    ]);
    expect((await page(`${src}/notes`)).status).toBe(404);
    expect((await page(`${src}/missing`)).status).toBe(404);
  });

  it('sanitizes the HTML: no script, event handlers or javascript: URLs', async () => {
    const res = await page(`${src}/evil`);
    expect(res.status).toBe(200);
    const html = res.body.data.html as string;
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toContain('alert(1)');
    expect(html).not.toMatch(/onerror|onclick/i);
    // No element keeps a javascript: or data: URL (markdown-it leaves a refused link as inert text).
    expect(html).not.toMatch(/<a[^>]*href="\s*(javascript|data):/i);
    expect(html).not.toMatch(/<[^>]+(javascript|data):/i);
    expect(html).toContain('<a>raw</a>');
    expect(html).toContain('<img src="x.png" />');
    expect(html).toContain('safe text');
    expect(res.body.data.markdown).toContain('<script>alert(1)</script>');
  });

  it('follows the synced commit: a sync that changes a page shows the new text on the next read', async () => {
    const before = await page(`${src}/guides/setup`);
    expect(before.body.data.markdown).toContain('First version.');
    const next = repo.write({
      'docs/guides/setup.md': '# Setup guide v2\n\nSecond version.\n',
      'docs/new.md': '# New\n',
    });
    // Not synced yet: the wiki still shows the synced commit.
    expect((await page(`${src}/guides/setup`)).body.data.markdown).toContain('First version.');
    const synced = await sync(src);
    expect(synced.body.data).toMatchObject({ outcome: 'updated', commit_sha: next });
    const after = await page(`${src}/guides/setup`);
    expect(after.body.data).toMatchObject({ title: 'Setup guide v2', commit_sha: next });
    expect(after.body.data.markdown).toContain('Second version.');
    expect(after.body.data.backlinks.map((l: { qualified_name: string }) => l.qualified_name)).toEqual([
      `${src}/index`,
    ]);
    expect((await page(`${src}/new`)).body.data.title).toBe('New');
  });

  it('lists subgraphs and generates a page neighbourhood document', async () => {
    const list = await get('/api/wiki/v1/subgraphs');
    expect(list.status).toBe(200);
    const byName = Object.fromEntries(
      list.body.data.subgraphs.map((s: { qualified_name: string }) => [s.qualified_name, s]),
    );
    expect(byName[src]).toMatchObject({ source_id: src, title: 'Team handbook', page_count: 3, link_count: 2 });
    expect(byName[`${src}/guides`]).toMatchObject({ title: 'guides', page_count: 2, link_count: 0 });

    const sub = await get('/api/wiki/v1/subgraph/index');
    expect(sub.status).toBe(200);
    expect(sub.body.data.qualified_name).toBe(`${src}/index`);
    expect(sub.body.data.nodes).toEqual([
      { qualified_name: `${src}/index`, title: 'Home', relation: 'center' },
      { qualified_name: `${src}/guides/setup`, title: 'Setup guide v2', relation: 'links_to' },
      { qualified_name: `${src}/guides/faq`, title: 'FAQ', relation: 'links_to' },
    ]);
    expect(sub.body.data.edges).toEqual([
      { from: `${src}/index`, to: `${src}/guides/setup` },
      { from: `${src}/index`, to: `${src}/guides/faq` },
    ]);
    expect(sub.body.data.markdown).toContain('# Neighbourhood of Home');
    expect(sub.body.data.markdown).toContain(`[Setup guide v2](/api/wiki/v1/pages/${src}/guides/setup)`);
    expect(sub.body.data.html).toContain('<h1>Neighbourhood of Home</h1>');

    const faq = await get(`/api/wiki/v1/subgraph/${src}/guides/faq`);
    expect(faq.body.data.nodes).toEqual([
      { qualified_name: `${src}/guides/faq`, title: 'FAQ', relation: 'center' },
      { qualified_name: `${src}/index`, title: 'Home', relation: 'linked_from' },
    ]);
    expect((await get('/api/wiki/v1/subgraph/nope/never')).status).toBe(404);
  });

  it('commentary: post (201), list, author-only soft delete', async () => {
    const url = `/api/wiki/v1/pages/${src}/index/commentary`;
    const posted = await http(stack.url, 'POST', url, {
      token: member,
      body: { body_markdown: 'Looks **good** <script>alert(1)</script>' },
    });
    expect(posted.status).toBe(201);
    const c = posted.body.data;
    expect(c).toMatchObject({
      qualified_name: `${src}/index`,
      author: { id: 'mem' },
      deleted: false,
      deleted_at: null,
    });
    expect(c.body_html).toContain('<strong>good</strong>');
    expect(c.body_html).not.toMatch(/<script/i);
    const second = await http(stack.url, 'POST', url, { token: member2, body: { body_markdown: 'second' } });
    expect(second.status).toBe(201);

    const blank = await http(stack.url, 'POST', url, { token: member, body: { body_markdown: '   ' } });
    expect(blank.status).toBe(400);
    expect(blank.body.error_type).toBe('bad_request');
    const noPage = await http(stack.url, 'POST', `/api/wiki/v1/pages/${src}/missing/commentary`, {
      token: member,
      body: { body_markdown: 'x' },
    });
    expect(noPage.status).toBe(404);
    const refused = await http(stack.url, 'POST', url, { token: outsider, body: { body_markdown: 'x' } });
    expect(refused.status).toBe(403);
    const [{ n }] = await query<{ n: string }>(stack.db.url, 'select count(*) as n from wiki_comments');
    expect(Number(n)).toBe(2);

    const listed = await get(url);
    expect(listed.status).toBe(200);
    expect(listed.body.data.comments.map((x: { body_markdown: string }) => x.body_markdown)).toEqual([
      'Looks **good** <script>alert(1)</script>',
      'second',
    ]);

    const notAuthor = await http(stack.url, 'DELETE', `${url}/${c.comment_id}`, { token: member2 });
    expect(notAuthor.status).toBe(403);
    expect(notAuthor.body.error_type).toBe('forbidden');
    const unknown = await http(stack.url, 'DELETE', `${url}/00000000-0000-0000-0000-000000000000`, { token: member });
    expect(unknown.status).toBe(404);
    const otherPage = await http(stack.url, 'DELETE', `/api/wiki/v1/pages/${src}/evil/commentary/${c.comment_id}`, {
      token: member,
    });
    expect(otherPage.status).toBe(404);

    const deleted = await http(stack.url, 'DELETE', `${url}/${c.comment_id}`, { token: member });
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toMatchObject({ comment_id: c.comment_id, deleted: true, body_markdown: '' });
    const after = await get(url);
    expect(after.body.data.comments).toHaveLength(2);
    expect(after.body.data.comments[0]).toMatchObject({
      comment_id: c.comment_id,
      deleted: true,
      body_markdown: '',
      body_html: '',
    });
    expect(after.body.data.comments[1]).toMatchObject({ body_markdown: 'second', deleted: false });
    const [row] = await query<{ body_markdown: string; deleted_at: Date | null }>(
      stack.db.url,
      'select body_markdown, deleted_at from wiki_comments where id = $1',
      [c.comment_id],
    );
    expect(row).toMatchObject({ body_markdown: '' });
    expect(row!.deleted_at).not.toBeNull();
    expect((await get(`/api/wiki/v1/pages/${src}/missing/commentary`)).status).toBe(404);
  });

  it('a tail naming pages of two sources is ambiguous (409 with candidates)', async () => {
    const second = await http(stack.url, 'POST', '/api/managed-sources', {
      token: admin,
      body: {
        name: 'Mirror',
        repo_url: repo.url,
        scan_types_enabled: ['document_indexes'],
        credentials,
        sync_now: true,
      },
    });
    expect(second.status).toBe(201);
    const mirror = second.body.source.source_id as string;
    const res = await get('/api/wiki/v1/subgraph/guides/setup');
    expect(res.status).toBe(409);
    expect(res.body.payload.candidates.sort()).toEqual([`${src}/guides/setup`, `${mirror}/guides/setup`].sort());
    expect((await get(`/api/wiki/v1/subgraph/${mirror}/guides/setup`)).status).toBe(200);
    await http(stack.url, 'DELETE', `/api/managed-sources/${mirror}`, { token: admin });
  });

  it('answers 503 when a synced source’s documents cannot be enumerated, and recovers after a sync', async () => {
    rmSync(path.join(env.dataDir, 'managed-sources', src, 'checkout'), { recursive: true, force: true });
    const res = await get('/api/wiki/v1/subgraphs');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      error_type: 'service_unavailable',
      payload: { dependency: 'managed_source_checkout' },
    });
    expect((await page(`${src}/index`)).status).toBe(503);
    const resynced = await sync(src);
    expect(resynced.status).toBe(200);
    expect((await get('/api/wiki/v1/subgraphs')).status).toBe(200);
    expect((await page(`${src}/index`)).body.data.title).toBe('Home');
  });
});
