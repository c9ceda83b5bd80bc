import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { basicCredentials, managedSources, startGitStack, type GitStack } from './support.js';

/** Managed apps (issue 15): `apps/<name>/app.yaml` recorded by a sync, assignable to organizational projects. */
let env: GitStack;
let member: string;

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'msrc-apps-' });
  member = await env.idp.sign({ sub: 'mia', roles: ['member'] });
}, 60_000);
afterAll(() => env?.close());

const { create, sync } = managedSources(() => env, {
  name: 'apps',
  scan_types_enabled: ['apps'],
  credentials: basicCredentials(),
});

const apps = (sourceId: string) =>
  query<{ name: string; tenant: string; manifest: Record<string, unknown>; commit_sha: string }>(
    env.stack.db.url,
    'select name, tenant, manifest, commit_sha from managed_apps where source_id = $1 order by name',
    [sourceId],
  );

const call = (token: string, method: string, path: string, body?: unknown) =>
  http(env.stack.url, method, path, { token, body });

describe('managed apps', () => {
  it('records apps/<name>/app.yaml, reports bad manifests as degraded without failing, removes deleted folders', async () => {
    const repo = gitServer().repo('apps-a');
    const c1 = repo.write({
      'apps/sales/app.yaml':
        'name: Sales dashboard\ndescription: Weekly pipeline\nentry: dist/index.html\nversion: 1.2.0\n',
      'apps/sales/dist/index.html': '<h1>Sales</h1>',
      'apps/ops/app.yaml': 'name: Ops\nentry: main.py\n',
      'apps/ops/main.py': 'print("ops")\n',
      'apps/broken/app.yaml': 'name: [unclosed\n',
      'apps/noentry/app.yaml': 'name: No entry\nentry: missing.html\n',
      'apps/escape/app.yaml': 'name: Escape\nentry: ../sales/dist/index.html\n',
      'apps/nomanifest/readme.md': 'not an app',
    });
    const id = await create(repo);
    const res = await sync(id);
    expect(res.status).toBe(200);
    const r = res.body.data;
    expect(r.outcome).toBe('updated_with_errors');
    expect(r.partial_success).toBe(true);
    expect(r.candidates.apps).toBe(5);
    expect(r.hydrate.apps).toMatchObject({ found: 5, applied: 2, waiting: 0 });
    const degraded = r.hydrate.apps.degraded_artifacts as Array<{ artifact_id: string; reason: string }>;
    expect(degraded.map((d) => d.artifact_id).sort()).toEqual(['broken', 'escape', 'noentry']);
    expect(degraded.find((d) => d.artifact_id === 'broken')!.reason).toContain('invalid YAML');
    expect(degraded.find((d) => d.artifact_id === 'noentry')!.reason).toContain('not a file');
    expect(degraded.find((d) => d.artifact_id === 'escape')!.reason).toContain('relative path');
    expect(r.degraded_artifact_count).toBe(3);
    expect(await apps(id)).toEqual([
      {
        name: 'ops',
        tenant: 'default',
        manifest: { name: 'Ops', description: null, entry: 'main.py', version: null },
        commit_sha: c1,
      },
      {
        name: 'sales',
        tenant: 'default',
        manifest: {
          name: 'Sales dashboard',
          description: 'Weekly pipeline',
          entry: 'dist/index.html',
          version: '1.2.0',
        },
        commit_sha: c1,
      },
    ]);

    // Sales breaks (kept as recorded), ops goes away, broken is fixed.
    const c2 = repo.write({
      'apps/sales/app.yaml': 'name: Sales dashboard\nentry: 42\nversion: [x\n',
      'apps/broken/app.yaml': 'name: Fixed\nentry: index.html\n',
      'apps/broken/index.html': 'ok',
    });
    const c3 = repo.remove(['apps/ops/app.yaml', 'apps/ops/main.py']);
    expect(c3).not.toBe(c2);
    const again = await sync(id);
    expect(again.status).toBe(200);
    expect(
      again.body.data.hydrate.apps.degraded_artifacts.map((d: { artifact_id: string }) => d.artifact_id).sort(),
    ).toEqual(['escape', 'noentry', 'sales']);
    const after = await apps(id);
    expect(after.map((a) => [a.name, a.manifest.name, a.commit_sha])).toEqual([
      ['broken', 'Fixed', c3],
      ['sales', 'Sales dashboard', c1],
    ]);
  });

  it('assigns a recorded app to an organizational project and clears it; unknown apps answer 404 APP_UNKNOWN', async () => {
    const repo = gitServer().repo('apps-b');
    repo.write({ 'apps/crm/app.yaml': 'name: CRM\nentry: index.html\n', 'apps/crm/index.html': 'crm' });
    const id = await create(repo);
    expect((await sync(id)).status).toBe(200);
    const admin = env.admin;
    const project = await call(admin, 'POST', '/api/organizational-projects', {
      name: 'Apps',
      description: 'Grouped apps',
    });
    expect(project.status).toBe(201);
    const projectId = project.body.data.id as string;
    const assignments = () =>
      query<{ ref_id: string; project_id: string }>(
        env.stack.db.url,
        "select ref_id, project_id from organizational_project_assignments where kind = 'app' and ref_id like $1",
        [`${id}:%`],
      );

    const ok = await call(admin, 'PUT', `/api/organizational-project-assignments/app/${id}:crm`, {
      project_id: projectId,
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toEqual({ kind: 'app', ref_id: `${id}:crm`, project_id: projectId });
    expect(await assignments()).toEqual([{ ref_id: `${id}:crm`, project_id: projectId }]);

    // Without manage_repos: refused, nothing changes.
    const denied = await call(member, 'PUT', `/api/organizational-project-assignments/app/${id}:crm`, {
      project_id: null,
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error_type).toBe('forbidden');
    expect(await assignments()).toEqual([{ ref_id: `${id}:crm`, project_id: projectId }]);

    for (const ref of [`${id}:nope`, 'crm', `src_${'0'.repeat(16)}:crm`]) {
      const unknown = await call(admin, 'PUT', `/api/organizational-project-assignments/app/${ref}`, {
        project_id: projectId,
      });
      expect(unknown.status, ref).toBe(404);
      expect(unknown.body.payload.code).toBe('APP_UNKNOWN');
    }
    // Another tenant cannot see the app.
    const foreign = await env.idp.sign({ sub: 'olga', roles: ['admin'], tenant: 'globex' });
    const hidden = await call(foreign, 'PUT', `/api/organizational-project-assignments/app/${id}:crm`, {
      project_id: null,
    });
    expect(hidden.status).toBe(404);
    expect(hidden.body.payload.code).toBe('APP_UNKNOWN');

    const cleared = await call(admin, 'PUT', `/api/organizational-project-assignments/app/${id}:crm`, {
      project_id: null,
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toEqual({ kind: 'app', ref_id: `${id}:crm`, project_id: null });
    expect(await assignments()).toEqual([]);
  });
});

function gitServer() {
  return env.gitServer;
}
