import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startProjectsStack } from './support.js';

let s: OidcStack<'admin' | 'ann' | 'bob' | 'dev' | 'outsider'>;
let stack: Stack;
let admin: string;
let ann: string;
let bob: string;
let dev: string;
let outsider: string;

beforeAll(async () => {
  s = await startProjectsStack({
    tokens: {
      admin: { sub: 'root', roles: ['admin'] },
      ann: { sub: 'ann', roles: ['member'] },
      bob: { sub: 'bob', roles: ['member'] },
      dev: { sub: 'dev', roles: ['developer'] },
      outsider: { sub: 'olga', roles: ['admin'], tenant: 'globex' },
    },
  });
  stack = s.stack;
  ({ admin, ann, bob, dev, outsider } = s.tokens);
});
afterAll(() => s?.close());

const call = (token: string, method: string, path: string, body?: unknown) =>
  http(stack.url, method, path, { token, ...(body === undefined ? {} : { body }) });
const rows = (sql: string, params: unknown[] = []) => query(stack.db.url, sql, params);

async function create(token: string, name: string, description?: string) {
  const res = await call(token, 'POST', '/api/organizational-projects', { name, description });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: string; name: string; archived_at: string | null };
}

async function thread(owner: string, visibility: 'private' | 'tenant', tenant = 'default') {
  const id = `thr-${randomUUID()}`;
  await rows('insert into conversation_threads (id, tenant, owner_id, visibility) values ($1, $2, $3, $4)', [
    id,
    tenant,
    owner,
    visibility,
  ]);
  return id;
}

/** A mission's projection row (its visibility is read from it); no workflow is needed for assignment. */
async function mission(tenant: string, requestedBy = 'ann', blueprint = 'private-bp') {
  const id = `prj_${randomUUID().replace(/-/g, '')}`;
  await rows(
    `insert into projects (id, tenant, name, blueprint_name, blueprint_id, blueprint_commit, status, requested_by, phases_total)
     values ($1, $2, 'm', $3, 'bp_x', 'c', 'running', $4, 1)`,
    [id, tenant, blueprint, requestedBy],
  );
  return id;
}

const assign = (token: string, kind: string, ref: string, projectId: string | null) =>
  call(token, 'PUT', `/api/organizational-project-assignments/${kind}/${encodeURIComponent(ref)}`, {
    project_id: projectId,
  });

describe('organizational projects: CRUD', () => {
  it('creates a project with a wprj_ id and the spec fields, reads, lists and updates it', async () => {
    const res = await call(ann, 'POST', '/api/organizational-projects', { name: 'Finance', description: 'Books' });
    expect(res.status).toBe(201);
    const p = res.body.data;
    expect(p.id).toMatch(/^wprj_[0-9a-f]{32}$/);
    expect(p).toMatchObject({
      name: 'Finance',
      description: 'Books',
      created_by: 'ann',
      archived_at: null,
      counts: { app: 0, flow: 0, mission: 0, thread: 0 },
    });
    expect(Object.keys(p).sort()).toEqual(
      ['archived_at', 'counts', 'created_at', 'created_by', 'description', 'id', 'name', 'updated_at'].sort(),
    );
    expect(new Date(p.created_at).toISOString()).toBe(p.created_at);

    const got = await call(bob, 'GET', `/api/organizational-projects/${p.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.name).toBe('Finance');

    const patched = await call(ann, 'PATCH', `/api/organizational-projects/${p.id}`, { description: 'Ledgers' });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'Finance', description: 'Ledgers' });
    expect(Date.parse(patched.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(p.updated_at));

    const listed = await call(bob, 'GET', '/api/organizational-projects');
    expect(listed.status).toBe(200);
    expect(listed.body.data.projects.map((x: { id: string }) => x.id)).toContain(p.id);
    // Another tenant sees nothing of it.
    expect((await call(outsider, 'GET', `/api/organizational-projects/${p.id}`)).status).toBe(404);
    const theirs = await call(outsider, 'GET', '/api/organizational-projects');
    expect(theirs.body.data.projects).toEqual([]);
  });

  it('refuses a duplicate active name (case-insensitively) with 409 and writes nothing', async () => {
    await create(ann, 'Marketing');
    const before = await rows('select id from organizational_projects order by id');
    const dup = await call(bob, 'POST', '/api/organizational-projects', { name: 'marketing' });
    expect(dup.status).toBe(409);
    expect(dup.body.error_type).toBe('conflict');
    expect(dup.body.payload.code).toBe('PROJECT_NAME_TAKEN');
    expect(await rows('select id from organizational_projects order by id')).toEqual(before);
    // The same name in another tenant is fine.
    expect((await call(outsider, 'POST', '/api/organizational-projects', { name: 'Marketing' })).status).toBe(201);
    // Renaming into a taken name is refused too.
    const other = await create(bob, 'Sales');
    const rename = await call(bob, 'PATCH', `/api/organizational-projects/${other.id}`, { name: 'MARKETING' });
    expect(rename.status).toBe(409);
    expect(rename.body.payload.code).toBe('PROJECT_NAME_TAKEN');
  });

  it('refuses bad bodies and ids: empty or long name, long description, undeclared fields, malformed id', async () => {
    const before = await rows('select id from organizational_projects order by id');
    for (const body of [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'x'.repeat(201) },
      { name: 'ok', description: 'd'.repeat(4001) },
      { name: 'ok\u0000' },
    ]) {
      const res = await call(ann, 'POST', '/api/organizational-projects', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
    }
    const extra = await call(ann, 'POST', '/api/organizational-projects', { name: 'ok', color: 'red' });
    expect(extra.status).toBe(422);
    expect(await rows('select id from organizational_projects order by id')).toEqual(before);
    expect((await create(ann, 'x'.repeat(200), 'd'.repeat(4000))).name).toHaveLength(200);
    expect((await create(ann, '  Padded\u00a0')).name).toBe('Padded');
    expect((await call(ann, 'POST', '/api/organizational-projects', { name: '\ufeff\u3000' })).status).toBe(400);

    for (const bad of ['wprj_123', 'wprj_' + 'A'.repeat(32), 'prj_' + '0'.repeat(32)]) {
      const res = await call(ann, 'GET', `/api/organizational-projects/${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.payload.fields[0].field).toBe('params.project_id');
    }
    const unknown = await call(ann, 'GET', `/api/organizational-projects/wprj_${'0'.repeat(32)}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_type).toBe('not_found');
    const patchEmpty = await call(ann, 'PATCH', `/api/organizational-projects/wprj_${'0'.repeat(32)}`);
    expect(patchEmpty.status).toBe(400);
  });

  it('only the creator or manage_users may change, archive or delete a project', async () => {
    const p = await create(ann, 'Ann only');
    for (const [method, path, body] of [
      ['PATCH', `/api/organizational-projects/${p.id}`, { name: 'Bob was here' }],
      ['POST', `/api/organizational-projects/${p.id}/archive`, undefined],
      ['POST', `/api/organizational-projects/${p.id}/unarchive`, undefined],
      ['DELETE', `/api/organizational-projects/${p.id}`, undefined],
    ] as const) {
      const res = await call(bob, method, path, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error_type).toBe('forbidden');
    }
    expect((await rows('select name, archived_at from organizational_projects where id = $1', [p.id]))[0]).toEqual({
      name: 'Ann only',
      archived_at: null,
    });
    const byAdmin = await call(admin, 'PATCH', `/api/organizational-projects/${p.id}`, { name: 'Renamed by admin' });
    expect(byAdmin.status).toBe(200);
    expect((await call(admin, 'DELETE', `/api/organizational-projects/${p.id}`)).status).toBe(200);
    expect(await rows('select id from organizational_projects where id = $1', [p.id])).toEqual([]);
    expect((await call(ann, 'GET', `/api/organizational-projects/${p.id}`)).status).toBe(404);
  });
});

describe('archive and unarchive', () => {
  it('archives out of the default list, frees the name, and unarchives unless the name was taken', async () => {
    const p = await create(ann, 'Q3 launch');
    const archived = await call(ann, 'POST', `/api/organizational-projects/${p.id}/archive`);
    expect(archived.status).toBe(200);
    expect(archived.body.data.archived_at).not.toBeNull();
    const again = await call(ann, 'POST', `/api/organizational-projects/${p.id}/archive`);
    expect(again.status).toBe(200);
    expect(again.body.data.archived_at).toBe(archived.body.data.archived_at);

    const active = await call(ann, 'GET', '/api/organizational-projects');
    expect(active.body.data.projects.map((x: { id: string }) => x.id)).not.toContain(p.id);
    const all = await call(ann, 'GET', '/api/organizational-projects?include_archived=true');
    expect(all.body.data.projects.map((x: { id: string }) => x.id)).toContain(p.id);
    expect((await call(ann, 'GET', `/api/organizational-projects/${p.id}`)).body.data.archived_at).not.toBeNull();

    const successor = await create(bob, 'Q3 Launch');
    const clash = await call(ann, 'POST', `/api/organizational-projects/${p.id}/unarchive`);
    expect(clash.status).toBe(409);
    expect(clash.body.payload.code).toBe('PROJECT_NAME_TAKEN');
    expect(
      (await rows('select archived_at from organizational_projects where id = $1', [p.id]))[0]!.archived_at,
    ).not.toBeNull();

    expect((await call(bob, 'DELETE', `/api/organizational-projects/${successor.id}`)).status).toBe(200);
    const back = await call(ann, 'POST', `/api/organizational-projects/${p.id}/unarchive`);
    expect(back.status).toBe(200);
    expect(back.body.data.archived_at).toBeNull();
  });
});

describe('assignments', () => {
  it('assigns, moves and clears a visible thread; counts and members follow', async () => {
    const a = await create(ann, 'Threads A');
    const b = await create(ann, 'Threads B');
    const mine = await thread('ann', 'private');
    const shared = await thread('bob', 'tenant');

    const set = await assign(ann, 'thread', mine, a.id);
    expect(set.status, set.text).toBe(200);
    expect(set.body.data).toEqual({ kind: 'thread', ref_id: mine, project_id: a.id });
    expect((await assign(ann, 'thread', shared, a.id)).status).toBe(200);
    expect(
      await rows(
        'select kind, ref_id, project_id, assigned_by from organizational_project_assignments where project_id = $1 order by ref_id',
        [a.id],
      ),
    ).toEqual(
      [mine, shared].sort().map((ref) => ({ kind: 'thread', ref_id: ref, project_id: a.id, assigned_by: 'ann' })),
    );
    const got = await call(bob, 'GET', `/api/organizational-projects/${a.id}`);
    expect(got.body.data.counts).toEqual({ app: 0, flow: 0, mission: 0, thread: 2 });
    const members = await call(bob, 'GET', `/api/organizational-projects/${a.id}/members`);
    expect(members.status).toBe(200);
    expect(members.body.data.project_id).toBe(a.id);
    expect(members.body.data.items.thread.map((m: { ref_id: string }) => m.ref_id).sort()).toEqual(
      [mine, shared].sort(),
    );
    expect(members.body.data.items.flow).toEqual([]);

    // Moving: the item belongs to one project at a time.
    const moved = await assign(ann, 'thread', mine, b.id);
    expect(moved.body.data.project_id).toBe(b.id);
    const list = await call(ann, 'GET', '/api/organizational-projects');
    const counts = Object.fromEntries(
      list.body.data.projects.map((x: { id: string; counts: { thread: number } }) => [x.id, x.counts.thread]),
    );
    expect([counts[a.id], counts[b.id]]).toEqual([1, 1]);

    const cleared = await assign(ann, 'thread', mine, null);
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.project_id).toBeNull();
    expect(await rows('select * from organizational_project_assignments where ref_id = $1', [mine])).toEqual([]);
    // Clearing an unassigned item is a no-op answering null.
    expect((await assign(ann, 'thread', mine, null)).body.data.project_id).toBeNull();

    // A non-empty project cannot be deleted; once empty it can.
    const full = await call(ann, 'DELETE', `/api/organizational-projects/${a.id}`);
    expect(full.status).toBe(409);
    expect(full.body.payload.code).toBe('PROJECT_NOT_EMPTY');
    expect((await assign(bob, 'thread', shared, null)).status).toBe(200);
    expect((await call(ann, 'DELETE', `/api/organizational-projects/${a.id}`)).status).toBe(200);
  });

  it('hides threads the caller cannot see (private to someone else, other tenant, unknown): 404, nothing written', async () => {
    const p = await create(bob, 'Hidden threads');
    const annPrivate = await thread('ann', 'private');
    const foreign = await thread('olga', 'tenant', 'globex');
    for (const ref of [annPrivate, foreign, 'thr-nope']) {
      const res = await assign(bob, 'thread', ref, p.id);
      expect(res.status, ref).toBe(404);
      expect(res.body.error_type).toBe('not_found');
    }
    expect(await rows('select * from organizational_project_assignments where project_id = $1', [p.id])).toEqual([]);
    // The other tenant cannot use this tenant's project either.
    const crossTenant = await assign(outsider, 'thread', foreign, p.id);
    expect(crossTenant.status).toBe(404);
  });

  it('refuses unknown or malformed projects, bad kinds and bodies', async () => {
    const t = await thread('ann', 'private');
    const unknown = await assign(ann, 'thread', t, `wprj_${'f'.repeat(32)}`);
    expect(unknown.status).toBe(404);
    for (const projectId of ['wprj_xyz', 42, '']) {
      const res = await assign(ann, 'thread', t, projectId as string);
      expect(res.status, String(projectId)).toBe(400);
    }
    const kind = await assign(ann, 'room', t, null);
    expect(kind.status).toBe(400);
    expect(kind.body.payload.fields[0].field).toBe('params.kind');
    const extra = await call(ann, 'PUT', `/api/organizational-project-assignments/thread/${t}`, {
      project_id: null,
      note: 'x',
    });
    expect(extra.status).toBe(422);
    const missing = await call(ann, 'PUT', `/api/organizational-project-assignments/thread/${t}`, {});
    expect(missing.status).toBe(400);
    expect(await rows('select * from organizational_project_assignments where ref_id = $1', [t])).toEqual([]);
  });

  it('an archived project keeps its assignments read-only: no assigning into it, moving or clearing out of it', async () => {
    const p = await create(ann, 'Frozen');
    const other = await create(ann, 'Open');
    const t1 = await thread('ann', 'private');
    const t2 = await thread('ann', 'private');
    expect((await assign(ann, 'thread', t1, p.id)).status).toBe(200);
    expect((await call(ann, 'POST', `/api/organizational-projects/${p.id}/archive`)).status).toBe(200);

    const into = await assign(ann, 'thread', t2, p.id);
    expect(into.status).toBe(409);
    expect(into.body.payload.code).toBe('PROJECT_ARCHIVED');
    for (const target of [null, other.id]) {
      const out = await assign(ann, 'thread', t1, target);
      expect(out.status, String(target)).toBe(409);
      expect(out.body.payload.code).toBe('PROJECT_ARCHIVED');
    }
    expect(
      await rows(
        'select ref_id, project_id from organizational_project_assignments where ref_id = any($1) order by ref_id',
        [[t1, t2]],
      ),
    ).toEqual([{ ref_id: t1, project_id: p.id }]);
    const members = await call(ann, 'GET', `/api/organizational-projects/${p.id}/members`);
    expect(members.body.data.items.thread.map((m: { ref_id: string }) => m.ref_id)).toEqual([t1]);
    // Deleting an archived project that still groups items is refused too.
    expect((await call(ann, 'DELETE', `/api/organizational-projects/${p.id}`)).status).toBe(409);

    expect((await call(ann, 'POST', `/api/organizational-projects/${p.id}/unarchive`)).status).toBe(200);
    expect((await assign(ann, 'thread', t1, other.id)).body.data.project_id).toBe(other.id);
  });

  it('assigns a promoted managed flow with manage_flows; others get 403, unknown flows 404', async () => {
    const p = await create(dev, 'Pipelines');
    const sourceId = `src_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    await rows(
      `insert into managed_sources (id, tenant, name, repo_url, settings, created_at, updated_at, created_by)
       values ($1, 'default', 'flows repo', 'https://example.com/r.git', '{}'::jsonb, now(), now(), 'dev')`,
      [sourceId],
    );
    await rows(
      `insert into managed_flows (source_id, flow_name, tenant, content_hash, commit_sha, manifest_path, promoted_at, promoted_by)
       values ($1, 'nightly', 'default', 'h', 'c', 'flows/nightly/flow.yaml', now(), 'dev')`,
      [sourceId],
    );
    const ref = `${sourceId}:nightly`;
    const ok = await assign(dev, 'flow', ref, p.id);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toEqual({ kind: 'flow', ref_id: ref, project_id: p.id });
    expect((await call(dev, 'GET', `/api/organizational-projects/${p.id}`)).body.data.counts.flow).toBe(1);

    const member = await assign(ann, 'flow', ref, null);
    expect(member.status).toBe(403);
    expect(member.body.error_type).toBe('forbidden');
    for (const unknownRef of [`${sourceId}:daily`, 'nightly', `src_0000000000000000:nightly`]) {
      expect((await assign(dev, 'flow', unknownRef, p.id)).status, unknownRef).toBe(404);
    }
    expect((await assign(outsider, 'flow', ref, null)).status).toBe(404);
    const cleared = await assign(dev, 'flow', ref, null);
    expect(cleared.body.data.project_id).toBeNull();
  });

  it('assigns a mission the caller may see (requester, admin, blueprint viewer); others, foreign and unknown 404', async () => {
    const p = await create(ann, 'Missions');
    const id = await mission('default');
    const ok = await assign(ann, 'mission', id, p.id);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toEqual({ kind: 'mission', ref_id: id, project_id: p.id });
    const members = await call(ann, 'GET', `/api/organizational-projects/${p.id}/members`);
    expect(members.body.data.items.mission).toEqual([
      { ref_id: id, assigned_by: 'ann', assigned_at: expect.any(String) },
    ]);
    expect((await call(ann, 'GET', `/api/organizational-projects/${p.id}`)).body.data.counts.mission).toBe(1);

    // Bob neither requested it nor may view its blueprint (none he can see): hidden, 404, nothing changes.
    const hidden = await assign(bob, 'mission', id, null);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error_type).toBe('not_found');
    expect(await rows('select project_id from organizational_project_assignments where ref_id = $1', [id])).toEqual([
      { project_id: p.id },
    ]);
    // An administrator sees every mission of the tenant.
    expect((await assign(admin, 'mission', id, p.id)).status).toBe(200);
    // A built-in blueprint is viewable by everyone, so its missions are visible to Bob.
    const builtIn = await mission('default', 'ann', 'data-quality-audit');
    const viaBlueprint = await assign(bob, 'mission', builtIn, p.id);
    expect(viaBlueprint.status, viaBlueprint.text).toBe(200);

    const foreign = await mission('globex');
    expect((await assign(ann, 'mission', foreign, p.id)).status).toBe(404);
    const unknown = await assign(ann, 'mission', `prj_${'0'.repeat(32)}`, p.id);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_type).toBe('not_found');

    const cleared = await assign(ann, 'mission', id, null);
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.project_id).toBeNull();
  });

  it('an app id no managed source recorded answers 404 APP_UNKNOWN and nothing is written', async () => {
    const p = await create(admin, 'Apps');
    const res = await assign(admin, 'app', 'crm-dashboard', p.id);
    expect(res.status).toBe(404);
    expect(res.body.payload.code).toBe('APP_UNKNOWN');
    expect(await rows('select * from organizational_project_assignments where kind = $1', ['app'])).toEqual([]);
  });
});
