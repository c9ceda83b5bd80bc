/**
 * Remote-backed blueprints (issue 14) against a real Git smart-HTTP server and a fake Git host API on
 * loopback: a managed source with scan type `blueprints` imports `blueprints/<name>/` directories,
 * updates and removes them on later syncs, keeps a degraded manifest's previous import, refuses local
 * edits; a rename pushes branch `blueprint-rename/<blueprint_id>` and opens a pull request (202, the
 * pending rename on the detail), and after the merge (a push to main on the server) the next sync
 * lets workflow `blueprint-rename/<blueprint_id>` apply the rename locally (grants follow).
 */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { blueprintRenameWorkflowId, type BlueprintRenameInput } from '../../workflows/blueprint-rename-definitions.js';
import { query } from '../helpers/db.js';
import type { GitRepo } from '../helpers/git-server.js';
import { recordHistory } from '../helpers/histories.js';
import { http, type Stack } from '../helpers/stack.js';
import { managedSources, startGitStack, tokenCredentials, type GitStack } from '../managed-sources/support.js';

interface PullRequestCall {
  auth: string | undefined;
  body: { title: string; head: string; base: string; body: string };
}

let env: GitStack;
let stack: Stack;
let admin: string;
let repo: GitRepo;
let src: string;
let forge: { url: string; calls: PullRequestCall[]; server: Server };
const AUTH = { username: 'bot', password: 'bp-token' };

const manifest = (name: string, description: string, extra = '') =>
  `schema_version: 1\nname: ${name}\nblueprint:\n  short_description: ${description}\nphases:\n  - id: gather\n    name: Gather\n    goal: Collect the accounts\n    prompts:\n      - file: prompts/gather.md\n${extra}`;
const bp = (name: string, token = admin) => http(stack.url, 'GET', `/api/blueprints/${name}`, { token });
const work = () => path.join(env.gitServer.root, 'bp-owner/library-work');
const serverGit = (...args: string[]) =>
  execFileSync('git', args, {
    cwd: work(),
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@x',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@x',
    },
  })
    .toString()
    .trim();

async function startForge() {
  const calls: PullRequestCall[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/repos/bp-owner/library/pulls') {
        calls.push({ auth: req.headers.authorization, body: JSON.parse(raw) });
        res.statusCode = 201;
        return void res.end(
          JSON.stringify({
            html_url: `https://forge.test/bp-owner/library/pull/${calls.length}`,
            number: calls.length,
          }),
        );
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, server };
}

const sources = () =>
  managedSources(() => env, {
    name: 'Blueprint library',
    scan_types_enabled: ['blueprints'],
    credentials: tokenCredentials(AUTH),
  });

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'bp-remote-data-', gitAuth: AUTH });
  ({ stack, admin } = env);
  forge = await startForge();
  repo = env.gitServer.repo('bp-owner/library');
  repo.write({
    'blueprints/churn-review/blueprint_manifest.yaml': manifest(
      'churn-review',
      'Weekly churn review',
      'created_by: olivia\n',
    ),
    'blueprints/churn-review/prompts/gather.md': 'Query the churn table.\n',
    'blueprints/incident-drill/blueprint_manifest.yaml': manifest('incident-drill', 'Incident drill'),
    'blueprints/incident-drill/prompts/gather.md': 'List the incidents.\n',
    'README.md': '# Library\n',
  });
  const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
    token: admin,
    body: { content: `enhancements:\n  knowledge_base:\n    forge_api_url: ${forge.url}\n` },
  });
  expect(applied.status, applied.text).toBe(200);
  src = await sources().create(repo);
}, 180_000);

afterAll(async () => {
  await new Promise<void>((r) => forge?.server.close(() => r()));
  await env?.close();
});

describe('remote-backed blueprints', () => {
  it('a sync imports each blueprints/<name>/ directory as a remote-backed blueprint', async () => {
    const res = await sources().sync(src);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.outcome).toBe('updated');
    expect(res.body.data.candidates.blueprints).toBe(2);
    expect(res.body.data.hydrate.blueprints).toMatchObject({ found: 2, applied: 2, degraded_artifacts: [] });
    const d = await bp('churn-review');
    expect(d.status, d.text).toBe(200);
    const commit = repo.head();
    expect(d.body.data).toMatchObject({
      blueprint_name: 'churn-review',
      short_description: 'Weekly churn review',
      owner: 'olivia',
      origin: {
        source_type: 'managed_source',
        source_id: src,
        repo_path: 'blueprints/churn-review',
        commit_sha: commit,
      },
      source_selection: { source_type: 'managed_source', editable: false },
      pending_rename: null,
      blueprint: {
        source_view: {
          source_type: 'managed_source',
          source_id: src,
          path: 'blueprints/churn-review',
          commit_sha: commit,
          read_only: true,
        },
      },
    });
    expect(d.body.data.files).toEqual(['blueprint_manifest.yaml', 'prompts/gather.md']);
    expect(d.body.data.missing_files).toEqual([]);
    const file = await http(stack.url, 'GET', '/api/blueprints/churn-review/files/prompts%2Fgather.md', {
      token: admin,
    });
    expect(file.text).toBe('Query the churn table.\n');
    const inv = await http(stack.url, 'GET', '/api/blueprints/', { token: admin });
    const names = (inv.body.data.blueprints as Array<{ blueprint_name: string; origin: { source_type: string } }>)
      .filter((b) => b.origin.source_type === 'managed_source')
      .map((b) => b.blueprint_name);
    expect(names).toEqual(['churn-review', 'incident-drill']);
    const rows = await query<{ source_id: string; source_path: string }>(
      stack.db.url,
      `select source_id, source_path from blueprints where source_id = $1 order by name`,
      [src],
    );
    expect(rows.map((r) => r.source_path)).toEqual(['blueprints/churn-review', 'blueprints/incident-drill']);
  });

  it('a second sync of the same commit changes nothing', async () => {
    const res = await sources().sync(src);
    expect(res.body.data.outcome).toBe('up_to_date');
    expect(res.body.data.hydrate.blueprints).toMatchObject({ found: 2, applied: 0 });
  });

  it('a changed manifest updates the blueprint with a commit by the source', async () => {
    repo.write({
      'blueprints/churn-review/blueprint_manifest.yaml': manifest(
        'churn-review',
        'Monthly churn review',
        'created_by: olivia\n',
      ),
    });
    const res = await sources().sync(src);
    expect(res.body.data.outcome).toBe('updated');
    expect(res.body.data.hydrate.blueprints.applied).toBe(1);
    const d = await bp('churn-review');
    expect(d.body.data.short_description).toBe('Monthly churn review');
    expect(d.body.data.blueprint.source_view.commit_sha).toBe(repo.head());
    const hist = await http(stack.url, 'GET', '/api/blueprints/churn-review/history', { token: admin });
    expect(hist.status).toBe(200);
    expect(hist.body.data.commits).toHaveLength(2);
    expect(hist.body.data.commits[0].author_id).toBe(`managed-source:${src}`);
  });

  it('a malformed manifest is a degraded artifact: the sync succeeds and the previous import stays', async () => {
    repo.write({
      'blueprints/incident-drill/blueprint_manifest.yaml':
        'schema_version: 1\nname: incident-drill\nphases: [{ id: "Bad Id" }]\n',
      'blueprints/Bad_Name/blueprint_manifest.yaml': manifest('bad', 'x'),
    });
    const res = await sources().sync(src);
    expect(res.status).toBe(200);
    expect(res.body.data.outcome).toBe('updated_with_errors');
    const degraded = res.body.data.hydrate.blueprints.degraded_artifacts as Array<{
      artifact_id: string;
      reason: string;
    }>;
    expect(degraded.map((d) => d.artifact_id).sort()).toEqual(['blueprints/Bad_Name', 'blueprints/incident-drill']);
    expect(degraded.find((d) => d.artifact_id === 'blueprints/incident-drill')!.reason).toContain('manifest schema');
    expect(res.body.data.degraded_artifact_count).toBe(2);
    const d = await bp('incident-drill');
    expect(d.status).toBe(200);
    expect(d.body.data.short_description).toBe('Incident drill');
    expect((await bp('bad_name')).status).toBe(404);
  });

  it('local edits are refused with BLUEPRINT_MANAGED_BY_SOURCE and write nothing', async () => {
    const before = (await bp('churn-review')).body.data;
    const patch = await http(stack.url, 'PATCH', '/api/blueprints/churn-review', {
      token: admin,
      body: { short_description: 'edited here' },
    });
    expect(patch.status).toBe(409);
    expect(patch.body.payload.code).toBe('BLUEPRINT_MANAGED_BY_SOURCE');
    const del = await http(stack.url, 'DELETE', '/api/blueprints/churn-review', { token: admin });
    expect(del.status).toBe(409);
    expect(del.body.payload.code).toBe('BLUEPRINT_MANAGED_BY_SOURCE');
    const ver = await http(stack.url, 'POST', '/api/blueprints/churn-review/versioning/enable', {
      token: admin,
      body: {},
    });
    expect(ver.status).toBe(409);
    expect(ver.body.payload.code).toBe('BLUEPRINT_MANAGED_BY_SOURCE');
    const after = (await bp('churn-review')).body.data;
    expect(after.short_description).toBe(before.short_description);
    expect(after.mode).toBe('standard');
  });

  it('rename needs manage access and manage_git', async () => {
    const owner = await env.idp.sign({ sub: 'olivia', roles: ['member'] });
    const developer = await env.idp.sign({ sub: 'dev', roles: ['developer'] });
    const noGit = await http(stack.url, 'POST', '/api/blueprints/churn-review/rename', {
      token: owner,
      body: { new_name: 'churn-digest' },
    });
    expect(noGit.status).toBe(403);
    const noManage = await http(stack.url, 'POST', '/api/blueprints/churn-review/rename', {
      token: developer,
      body: { new_name: 'churn-digest' },
    });
    expect(noManage.status).toBe(403);
    const taken = await http(stack.url, 'POST', '/api/blueprints/churn-review/rename', {
      token: admin,
      body: { new_name: 'incident-drill' },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.payload.code).toBe('BLUEPRINT_NAME_TAKEN');
    expect(forge.calls).toHaveLength(0);
  });

  it('rename opens a pull request, merge + sync applies it through the blueprint-rename workflow', async () => {
    const before = (await bp('churn-review')).body.data;
    const id = before.blueprint_id as string;
    const granted = await http(stack.url, 'POST', '/api/blueprints/churn-review/access/grant', {
      token: admin,
      body: { role_name: 'reviewer', action: 'edit' },
    });
    expect(granted.status, granted.text).toBe(200);

    const res = await http(stack.url, 'POST', '/api/blueprints/churn-review/rename', {
      token: admin,
      body: { new_name: 'churn-digest' },
    });
    expect(res.status, res.text).toBe(202);
    const branch = `blueprint-rename/${id}`;
    expect(res.body.data).toMatchObject({
      blueprint_id: id,
      old_name: 'churn-review',
      blueprint_name: 'churn-review',
      status: 'pending',
      pull_request: { url: 'https://forge.test/bp-owner/library/pull/1', number: 1, branch, base_branch: 'main' },
      pending_rename: {
        new_name: 'churn-digest',
        new_path: 'blueprints/churn-digest',
        old_path: 'blueprints/churn-review',
      },
    });
    expect(forge.calls).toHaveLength(1);
    expect(forge.calls[0]!.auth).toBe(`Bearer ${AUTH.password}`);
    expect(forge.calls[0]!.body).toMatchObject({ head: branch, base: 'main' });
    // The branch on the server renames the directory and carries the identity.
    serverGit('fetch', '-q', 'origin', `+refs/heads/${branch}:refs/remotes/origin/rename`);
    const tree = serverGit('ls-tree', '-r', '--name-only', 'origin/rename').split('\n');
    expect(tree.filter((f) => f.startsWith('blueprints/churn'))).toEqual([
      'blueprints/churn-digest/blueprint_export_manifest.yaml',
      'blueprints/churn-digest/blueprint_manifest.yaml',
      'blueprints/churn-digest/prompts/gather.md',
    ]);
    expect(serverGit('show', 'origin/rename:blueprints/churn-digest/blueprint_export_manifest.yaml')).toContain(
      `blueprint_id: ${id}`,
    );
    expect(serverGit('show', 'origin/rename:blueprints/churn-digest/blueprint_manifest.yaml')).toContain(
      'name: churn-digest',
    );

    // Pending: the detail shows it, the old name still answers, a second rename is refused.
    const pending = await bp('churn-review');
    expect(pending.body.data.pending_rename).toMatchObject({ new_name: 'churn-digest', pull_request: { number: 1 } });
    const again = await http(stack.url, 'POST', '/api/blueprints/churn-review/rename', {
      token: admin,
      body: { new_name: 'churn-other' },
    });
    expect(again.status).toBe(409);
    expect(again.body.payload.code).toBe('BLUEPRINT_RENAME_PENDING');
    expect(forge.calls).toHaveLength(1);

    // A sync before the merge changes nothing about the name.
    const early = await sources().sync(src);
    expect(early.status).toBe(200);
    expect((await bp('churn-review')).body.data.pending_rename).not.toBeNull();

    // Merge: main fast-forwards to the branch on the server; then the next sync.
    serverGit('merge', '-q', '--no-edit', 'origin/rename');
    serverGit('push', '-q', 'origin', 'main');
    const synced = await sources().sync(src);
    expect(synced.status, synced.text).toBe(200);

    const handle = stack.api.deps.temporal.workflow.getHandle(blueprintRenameWorkflowId(id));
    expect(await handle.result()).toEqual({ status: 'applied', blueprint_name: 'churn-digest' });
    await recordHistory('blueprint-rename-applied', handle);

    const renamed = await bp('churn-digest');
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({
      blueprint_id: id,
      pending_rename: null,
      origin: { source_type: 'managed_source', repo_path: 'blueprints/churn-digest' },
      manifest: { name: 'churn-digest' },
    });
    expect((await bp('churn-review')).status).toBe(404);
    const access = await http(stack.url, 'GET', '/api/blueprints/churn-digest/access', { token: admin });
    expect(access.body.data.grants).toMatchObject([
      { role_name: 'reviewer', action: 'edit', subject: 'blueprint:churn-digest' },
    ]);
    const rows = await query<{ n: string }>(stack.db.url, `select count(*) as n from blueprints where source_id = $1`, [
      src,
    ]);
    expect(Number(rows[0]!.n)).toBe(2);
  });

  it('a rename whose pull request is never merged expires: the pending rename is dropped', async () => {
    const id = (await bp('churn-digest')).body.data.blueprint_id as string;
    const res = await http(stack.url, 'POST', '/api/blueprints/churn-digest/rename', {
      token: admin,
      body: { new_name: 'churn-final' },
    });
    expect(res.status, res.text).toBe(202);
    expect(forge.calls).toHaveLength(2);
    // Thirty days cannot pass in a test: the same workflow restarted with its deadline already behind it.
    const client = stack.api.deps.temporal;
    const [row] = await query<{ tenant: string }>(
      stack.db.url,
      `select tenant from blueprints where blueprint_id = $1`,
      [id],
    );
    const input: BlueprintRenameInput = {
      tenant: row!.tenant,
      blueprintId: id,
      oldName: 'churn-digest',
      newName: 'churn-final',
      newPath: 'blueprints/churn-final',
      deadlineMs: Date.now() - 1000,
    };
    const handle = await client.workflow.start(workflowRef('blueprintRenameWorkflow'), {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: blueprintRenameWorkflowId(id),
      args: [input],
      workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    });
    expect(await handle.result()).toEqual({ status: 'expired', reason: null });
    await recordHistory('blueprint-rename-expired', handle);
    const d = await bp('churn-digest');
    expect(d.status).toBe(200);
    expect(d.body.data.pending_rename).toBeNull();
    expect((await bp('churn-final')).status).toBe(404);
  });

  it('a directory moved on the remote with its identity sidecar is renamed at once (same blueprint_id)', async () => {
    const sidecar = 'manifest_version: 2\nblueprint_name: ext-a\nblueprint_id: bp_0123456789abcdef\n';
    repo.write({
      'blueprints/ext-a/blueprint_manifest.yaml': manifest('ext-a', 'Moved later'),
      'blueprints/ext-a/blueprint_export_manifest.yaml': sidecar,
    });
    expect((await sources().sync(src)).status).toBe(200);
    const before = await bp('ext-a');
    expect(before.body.data.blueprint_id).toBe('bp_0123456789abcdef');
    expect(before.body.data.files).toEqual(['blueprint_manifest.yaml']);
    repo.write({
      'blueprints/ext-b/blueprint_manifest.yaml': manifest('ext-a', 'Moved later'),
      'blueprints/ext-b/blueprint_export_manifest.yaml': sidecar,
    });
    repo.remove(['blueprints/ext-a/blueprint_manifest.yaml', 'blueprints/ext-a/blueprint_export_manifest.yaml']);
    const res = await sources().sync(src);
    expect(res.status).toBe(200);
    expect((await bp('ext-a')).status).toBe(404);
    const after = await bp('ext-b');
    expect(after.status).toBe(200);
    expect(after.body.data).toMatchObject({
      blueprint_id: 'bp_0123456789abcdef',
      manifest: { name: 'ext-b' },
      origin: { repo_path: 'blueprints/ext-b' },
    });
    const gone = await http(stack.url, 'DELETE', '/api/blueprints/ext-b', { token: admin });
    expect(gone.status).toBe(409);
    repo.remove(['blueprints/ext-b/blueprint_manifest.yaml', 'blueprints/ext-b/blueprint_export_manifest.yaml']);
  });

  it('a removed directory removes its blueprint', async () => {
    repo.remove(['blueprints/incident-drill/blueprint_manifest.yaml', 'blueprints/incident-drill/prompts/gather.md']);
    const res = await sources().sync(src);
    expect(res.status).toBe(200);
    expect((await bp('incident-drill')).status).toBe(404);
    const rows = await query<{ name: string }>(stack.db.url, `select name from blueprints where source_id = $1`, [src]);
    expect(rows.map((r) => r.name)).toEqual(['churn-digest']);
  });
});
