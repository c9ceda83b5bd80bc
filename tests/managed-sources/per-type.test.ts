import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitServer } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { startGitStack, tokenCredentials, type GitStack } from './support.js';

let env: GitStack;
let stack: Stack;
let gitServer: GitServer;
let admin: string;
let developer: string;
let member: string;
const AUTH = { username: 'bot', password: 'per-type-token' };
const SERVICE_TOKEN = 'svc-per-type-0123456789abcdef';
const credentials = tokenCredentials(AUTH);

beforeAll(async () => {
  env = await startGitStack({
    dataDirPrefix: 'per-type-data-',
    gitAuth: AUTH,
    env: { PLATFORM_SERVICE_TOKEN: SERVICE_TOKEN },
  });
  ({ stack, gitServer, admin } = env);
  developer = await env.idp.sign({ sub: 'dev', roles: ['developer'] });
  member = await env.idp.sign({ sub: 'mem', roles: ['member'] });
}, 120_000);
afterAll(() => env?.close());

describe('per-type repository routes', () => {
  let skillsSrc: string;
  let multiSrc: string;

  it('POST creates a source scanning only that type and answers Deprecation: true', async () => {
    const repo = gitServer.repo('skills');
    const c1 = repo.write({ 'skills/hello/SKILL.md': '# hello\n' });
    const res = await http(stack.url, 'POST', '/api/skills/repositories', {
      token: developer,
      body: { name: 'skills repo', repo_url: repo.url, credentials, release_ref: 'main', sync_now: true },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('deprecation')).toBe('true');
    expect(res.body.source.scan_types_enabled).toEqual(['skills']);
    expect(res.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c1 });
    skillsSrc = res.body.source.source_id as string;

    const undeclared = await http(stack.url, 'POST', '/api/skills/repositories', {
      token: developer,
      body: { name: 'x', repo_url: repo.url, scan_types_enabled: ['agents'] },
    });
    expect(undeclared.status).toBe(422);
    const invalid = await http(stack.url, 'POST', '/api/apps/repositories', { token: admin, body: { name: 'x' } });
    expect(invalid.status).toBe(400);
    const [{ n }] = await query<{ n: string }>(stack.db.url, 'select count(*) as n from managed_sources');
    expect(Number(n)).toBe(1);
  });

  it('needs manage_repos or the type permission', async () => {
    expect((await http(stack.url, 'GET', '/api/skills/repositories')).status).toBe(401);
    const refused = await http(stack.url, 'GET', '/api/skills/repositories', { token: member });
    expect(refused.status).toBe(403);
    expect(refused.body.error_type).toBe('forbidden');
    const post = await http(stack.url, 'POST', '/api/flows/repositories', {
      token: member,
      body: { name: 'x', repo_url: 'http://127.0.0.1:9/x.git' },
    });
    expect(post.status).toBe(403);
    expect((await http(stack.url, 'GET', '/api/apps/repositories', { token: developer })).status).toBe(200);
  });

  it('lists and reads only sources of the type; syncs through the view', async () => {
    const repo = gitServer.repo('multi');
    repo.write({ 'skills/a/SKILL.md': '# a\n', 'flows/f/flow.yaml': 'name: f\n' });
    const created = await http(stack.url, 'POST', '/api/managed-sources', {
      token: admin,
      body: { name: 'multi', repo_url: repo.url, credentials, scan_types_enabled: ['skills', 'flows'] },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('deprecation')).toBeNull();
    multiSrc = created.body.source.source_id as string;

    const skills = await http(stack.url, 'GET', '/api/skills/repositories', { token: developer });
    expect(skills.body.data.sources.map((s: { source_id: string }) => s.source_id)).toEqual([skillsSrc, multiSrc]);
    const flows = await http(stack.url, 'GET', '/api/flows/repositories', { token: developer });
    expect(flows.body.data.sources.map((s: { source_id: string }) => s.source_id)).toEqual([multiSrc]);
    const apps = await http(stack.url, 'GET', '/api/apps/repositories', { token: developer });
    expect(apps.body.data.sources).toEqual([]);

    const one = await http(stack.url, 'GET', `/api/skills/repositories/${skillsSrc}`, { token: developer });
    expect(one.status).toBe(200);
    expect(one.body.data.source_id).toBe(skillsSrc);
    const wrongType = await http(stack.url, 'GET', `/api/flows/repositories/${skillsSrc}`, { token: developer });
    expect(wrongType.status).toBe(404);

    const synced = await http(stack.url, 'POST', `/api/skills/repositories/${skillsSrc}/sync`, { token: developer });
    expect(synced.status).toBe(200);
    expect(synced.headers.get('deprecation')).toBe('true');
    expect(synced.body.data.outcome).toBe('up_to_date');
  });

  it('refuses to delete a multi-type source through a per-type route (409 SOURCE_HAS_MULTIPLE_TYPES)', async () => {
    const res = await http(stack.url, 'DELETE', `/api/skills/repositories/${multiSrc}`, { token: developer });
    expect(res.status).toBe(409);
    expect(res.body.payload).toMatchObject({ code: 'SOURCE_HAS_MULTIPLE_TYPES', source_id: multiSrc });
    expect((await http(stack.url, 'GET', `/api/managed-sources/${multiSrc}`, { token: admin })).status).toBe(200);
    expect((await http(stack.url, 'DELETE', `/api/apps/repositories/${skillsSrc}`, { token: admin })).status).toBe(404);

    const deleted = await http(stack.url, 'DELETE', `/api/skills/repositories/${skillsSrc}`, { token: developer });
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toMatchObject({ source_id: skillsSrc, deleted: true });
    expect((await http(stack.url, 'GET', `/api/managed-sources/${skillsSrc}`, { token: admin })).status).toBe(404);
  });
});

describe('flow pending promotions', () => {
  type Change = {
    change_id: string;
    flow_name: string;
    change: string;
    valid: boolean;
    promoted_commit_sha: string | null;
  };
  const list = async (token = developer, qs = '') => {
    const res = await http(stack.url, 'GET', `/api/flows/pending-promotions${qs}`, { token });
    return res;
  };
  const promote = (src: string, id: string, body: Record<string, unknown> = {}, token = developer) =>
    http(stack.url, 'POST', `/api/flows/pending-promotions/${src}/${id}/promote`, { token, body });

  it('lists synced flow changes and promotes them; a later sync makes new changes and retires old ones', async () => {
    const repo = gitServer.repo('flows');
    const c1 = repo.write({
      'flows/etl/flow.yaml': 'name: etl\nsteps: []\n',
      'flows/report/flow.yml': 'name: report\n',
      'flows/broken/flow.yaml': 'name: [unclosed\n',
      'flows/notes/readme.txt': 'not a flow',
    });
    const created = await http(stack.url, 'POST', '/api/flows/repositories', {
      token: developer,
      body: { name: 'flows', repo_url: repo.url, credentials, sync_now: true },
    });
    expect(created.status).toBe(201);
    const src = created.body.source.source_id as string;

    const first = await list(developer, `?source_id=${src}`);
    expect(first.status).toBe(200);
    const changes = first.body.data.changes as Change[];
    expect(changes.map((c) => [c.flow_name, c.change, c.valid])).toEqual([
      ['broken', 'added', false],
      ['etl', 'added', true],
      ['report', 'added', true],
    ]);
    const id = (name: string, cs: Change[] = changes) => cs.find((c) => c.flow_name === name)!.change_id;

    // Refusals: 401 without an acting user, 403 without manage_flows, 404 gone, 400 otherwise.
    expect((await http(stack.url, 'GET', '/api/flows/pending-promotions')).status).toBe(401);
    const service = await http(stack.url, 'POST', `/api/flows/pending-promotions/${src}/${id('etl')}/promote`, {
      headers: { 'x-platform-service-token': SERVICE_TOKEN },
      body: {},
    });
    expect(service.status).toBe(401);
    expect(service.body.error_type).toBe('authentication');
    expect((await promote(src, id('etl'), {}, member)).status).toBe(403);
    expect((await list(member)).status).toBe(403);
    expect((await promote(src, `fc_${'0'.repeat(32)}`)).status).toBe(404);
    expect((await promote('src_0000000000000000', id('etl'))).status).toBe(404);
    expect((await list(developer, '?source_id=src_0000000000000000')).status).toBe(404);
    expect((await promote(src, 'not-a-change')).status).toBe(400);
    const broken = await promote(src, id('broken'));
    expect(broken.status).toBe(400);
    expect(broken.body.payload).toMatchObject({ code: 'FLOW_INVALID', flow_name: 'broken' });
    const stale = await promote(src, id('etl'), { expected_commit_sha: 'a'.repeat(40) });
    expect(stale.status).toBe(400);
    expect(stale.body.payload.code).toBe('FLOW_CHANGE_STALE');
    expect((await query(stack.db.url, 'select 1 from managed_flows')).length).toBe(0);

    const ok = await promote(src, id('etl'), { expected_commit_sha: c1 });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ promoted: true, pending_count: 2, change: { flow_name: 'etl' } });
    expect((await promote(src, id('report'))).status).toBe(200);
    expect((await promote(src, id('etl'))).status).toBe(404);
    const rows = await query<{ flow_name: string; commit_sha: string; promoted_by: string }>(
      stack.db.url,
      'select flow_name, commit_sha, promoted_by from managed_flows where source_id = $1 order by flow_name',
      [src],
    );
    expect(rows).toEqual([
      { flow_name: 'etl', commit_sha: c1, promoted_by: 'dev' },
      { flow_name: 'report', commit_sha: c1, promoted_by: 'dev' },
    ]);
    expect(
      ((await list(developer, `?source_id=${src}`)).body.data.changes as Change[]).map((c) => c.flow_name),
    ).toEqual(['broken']);

    // Next commit: etl modified, report removed (deleted in the working copy, committed with the next write).
    rmSync(path.join(gitServer.root, 'flows-work', 'flows', 'report'), { recursive: true, force: true });
    const c2 = repo.write({ 'flows/etl/flow.yaml': 'name: etl\nsteps: [extract]\n' });
    const synced = await http(stack.url, 'POST', `/api/flows/repositories/${src}/sync`, { token: developer });
    // The broken flow is a degraded artifact; the valid changes wait for promotion.
    expect(synced.body.data).toMatchObject({
      outcome: 'updated_with_errors',
      commit_sha: c2,
      flow_auto_apply: { applied: 0, waiting: 2 },
      hydrate: { flows: { found: 2, applied: 0, waiting: 2, degraded_artifacts: [{ artifact_id: 'broken' }] } },
    });
    const next = (await list(developer, `?source_id=${src}`)).body.data.changes as Change[];
    expect(next.map((c) => [c.flow_name, c.change, c.promoted_commit_sha])).toEqual([
      ['broken', 'added', null],
      ['etl', 'modified', c1],
      ['report', 'removed', c1],
    ]);
    expect((await promote(src, id('report', next))).status).toBe(200);
    expect((await promote(src, id('etl', next), { expected_commit_sha: c2 })).status).toBe(200);
    const after = await query<{ flow_name: string; commit_sha: string }>(
      stack.db.url,
      'select flow_name, commit_sha from managed_flows where source_id = $1',
      [src],
    );
    expect(after).toEqual([{ flow_name: 'etl', commit_sha: c2 }]);
  });
  it('auto_promote_on_sync promotes every valid flow change the sync brings; a broken flow stays pending, degraded', async () => {
    const repo = gitServer.repo('flows-auto');
    const c1 = repo.write({
      'flows/etl/flow.yaml': 'name: etl\nsteps: []\n',
      'flows/report/flow.yml': 'name: report\n',
      'flows/broken/flow.yaml': 'name: [unclosed\n',
    });
    const created = await http(stack.url, 'POST', '/api/flows/repositories', {
      token: developer,
      body: { name: 'auto flows', repo_url: repo.url, credentials, auto_promote_on_sync: true, sync_now: true },
    });
    expect(created.status).toBe(201);
    const src = created.body.source.source_id as string;
    expect(created.body.sync).toMatchObject({
      outcome: 'updated_with_errors',
      commit_sha: c1,
      flow_auto_apply: { applied: 2, waiting: 0 },
      degraded_artifact_count: 1,
      hydrate: { flows: { found: 3, applied: 2, waiting: 0 } },
    });
    expect(created.body.sync.hydrate.flows.degraded_artifacts).toEqual([
      { artifact_id: 'broken', reason: 'flow.yaml is not valid YAML' },
    ]);
    const promoted = () =>
      query<{ flow_name: string; commit_sha: string; promoted_by: string }>(
        stack.db.url,
        'select flow_name, commit_sha, promoted_by from managed_flows where source_id = $1 order by flow_name',
        [src],
      );
    expect(await promoted()).toEqual([
      { flow_name: 'etl', commit_sha: c1, promoted_by: 'auto_promote_on_sync' },
      { flow_name: 'report', commit_sha: c1, promoted_by: 'auto_promote_on_sync' },
    ]);
    const pending = (await list(developer, `?source_id=${src}`)).body.data.changes as Change[];
    expect(pending.map((c) => [c.flow_name, c.change, c.valid])).toEqual([['broken', 'added', false]]);

    // The next commit modifies etl, removes report and fixes broken: all promoted by the sync.
    rmSync(path.join(gitServer.root, 'flows-auto-work', 'flows', 'report'), { recursive: true, force: true });
    const c2 = repo.write({
      'flows/etl/flow.yaml': 'name: etl\nsteps: [extract]\n',
      'flows/broken/flow.yaml': 'name: fixed\n',
    });
    const synced = await http(stack.url, 'POST', `/api/flows/repositories/${src}/sync`, { token: developer });
    expect(synced.body.data).toMatchObject({
      outcome: 'updated',
      commit_sha: c2,
      flow_auto_apply: { applied: 3, waiting: 0 },
      degraded_artifact_count: 0,
    });
    expect(await promoted()).toEqual([
      { flow_name: 'broken', commit_sha: c2, promoted_by: 'auto_promote_on_sync' },
      { flow_name: 'etl', commit_sha: c2, promoted_by: 'auto_promote_on_sync' },
    ]);
    expect((await list(developer, `?source_id=${src}`)).body.data.changes).toEqual([]);
    // Nothing new: up to date, nothing promoted again.
    const again = await http(stack.url, 'POST', `/api/flows/repositories/${src}/sync`, { token: developer });
    expect(again.body.data).toMatchObject({ outcome: 'up_to_date', flow_auto_apply: { applied: 0, waiting: 0 } });
  });
});
