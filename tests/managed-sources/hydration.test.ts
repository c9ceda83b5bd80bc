import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitServer } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { basicCredentials, managedSources, startGitStack, type GitStack } from './support.js';

let env: GitStack;
let stack: Stack;
let gitServer: GitServer;
let admin: string;

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'msrc-hydrate-' });
  ({ stack, gitServer, admin } = env);
}, 60_000);
afterAll(() => env?.close());

const agentYaml = (id: string, name: string, extra = '') =>
  `schema_version: 1\nagent_id: ${id}\nname: ${name}\ninstructions: You are ${name}.\ndefault_tool_groups: [action_review, agent_files]\n${extra}`;

const { create, sync } = managedSources(() => env, {
  name: 'artifacts',
  scan_types_enabled: ['agents', 'roles'],
  credentials: basicCredentials(),
});
const managedAgents = (id: string) =>
  query<{ id: string; name: string; instructions: string; is_editable: boolean; tool_groups: string[] }>(
    stack.db.url,
    'select id, name, instructions, is_editable, tool_groups from agents where managed_source_id = $1 order by id',
    [id],
  );

describe('managed-source artifact hydration', () => {
  it('previews agents, refuses apply without pins or with stale pins, applies pinned changes as non-editable agents', async () => {
    const repo = gitServer.repo('agents-a');
    const c1 = repo.write({ 'agents/analyst/agent.yaml': agentYaml('analyst', 'Ana Lyst', 'description: numbers\n') });
    const id = await create(repo);

    const preview = await sync(id);
    expect(preview.status).toBe(200);
    const r1 = preview.body.data;
    expect(r1.outcome).toBe('updated_awaiting_promotion');
    expect(r1.requires_agent_apply_confirmation).toBe(true);
    expect(r1.agent_auto_apply).toEqual({ applied: 0, waiting: 1 });
    expect(r1.agent_preview).toMatchObject({
      commit_sha: c1,
      changes: [{ action: 'create', artifact_id: 'analyst' }],
    });
    expect(r1.agent_preview.summary).toContain('1 to create');
    expect(await managedAgents(id)).toEqual([]);

    const noPins = await sync(id, { apply_agent_changes: true });
    expect(noPins.status).toBe(409);
    expect(noPins.body.payload.code).toBe('AGENT_PREVIEW_REQUIRED');
    const wrongHash = await sync(id, {
      apply_agent_changes: true,
      expected_agent_commit: c1,
      expected_agent_plan_hash: 'f'.repeat(64),
    });
    expect(wrongHash.status).toBe(409);
    expect(wrongHash.body.payload.code).toBe('AGENT_PREVIEW_STALE');
    expect(await managedAgents(id)).toEqual([]);

    const applied = await sync(id, {
      apply_agent_changes: true,
      expected_agent_commit: r1.agent_preview.commit_sha,
      expected_agent_plan_hash: r1.agent_preview.plan_hash,
    });
    expect(applied.status).toBe(200);
    expect(applied.body.data).toMatchObject({
      outcome: 'updated',
      requires_agent_apply_confirmation: false,
      agent_auto_apply: { applied: 1, waiting: 0 },
    });
    const [agent] = await managedAgents(id);
    expect(agent).toMatchObject({
      name: 'Ana Lyst',
      is_editable: false,
      tool_groups: ['action_review', 'agent_files'],
    });
    const listed = await http(stack.url, 'GET', `/api/agents/${agent!.id}`, { token: admin });
    expect(listed.body.data).toMatchObject({ source: 'managed', is_editable: false, description: 'numbers' });
    const edit = await http(stack.url, 'PATCH', `/api/agents/${agent!.id}`, {
      token: admin,
      body: { instructions: 'changed' },
    });
    expect(edit.status).toBe(409);
    expect(edit.body.payload.code).toBe('AGENT_NOT_EDITABLE');

    // Drift: preview at c2, then the remote moves to c3 before the apply. The c2 pins are stale.
    const c2 = repo.write({ 'agents/analyst/agent.yaml': agentYaml('analyst', 'Ana Lyst', 'description: v2\n') });
    const p2 = (await sync(id)).body.data;
    expect(p2.agent_preview).toMatchObject({
      commit_sha: c2,
      changes: [{ action: 'update', fields: ['description'] }],
    });
    const c3 = repo.write({ 'agents/analyst/agent.yaml': agentYaml('analyst', 'Ana Lyst', 'description: v3\n') });
    const stale = await sync(id, {
      apply_agent_changes: true,
      expected_agent_commit: p2.agent_preview.commit_sha,
      expected_agent_plan_hash: p2.agent_preview.plan_hash,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.payload.code).toBe('AGENT_PREVIEW_STALE');
    expect(stale.body.payload.sync.agent_preview.commit_sha).toBe(c3);
    expect((await managedAgents(id))[0]!.instructions).toBe('You are Ana Lyst.');
    expect((await http(stack.url, 'GET', `/api/agents/${agent!.id}`, { token: admin })).body.data.description).toBe(
      'numbers',
    );
    const fresh = stale.body.payload.sync.agent_preview;
    const ok = await sync(id, {
      apply_agent_changes: true,
      expected_agent_commit: fresh.commit_sha,
      expected_agent_plan_hash: fresh.plan_hash,
    });
    expect(ok.status).toBe(200);
    expect((await http(stack.url, 'GET', `/api/agents/${agent!.id}`, { token: admin })).body.data.description).toBe(
      'v3',
    );
    // An agent no longer declared is removed, again only through a pinned preview.
    const c4 = repo.remove(['agents/analyst/agent.yaml']);
    const p4 = (await sync(id)).body.data;
    expect(p4.agent_preview).toMatchObject({ commit_sha: c4, changes: [{ action: 'delete', artifact_id: 'analyst' }] });
    expect(await managedAgents(id)).toHaveLength(1);
    const removed = await sync(id, {
      apply_agent_changes: true,
      expected_agent_commit: c4,
      expected_agent_plan_hash: p4.agent_preview.plan_hash,
    });
    expect(removed.body.data.agent_auto_apply).toEqual({ applied: 1, waiting: 0 });
    expect(await managedAgents(id)).toEqual([]);
    expect((await http(stack.url, 'GET', `/api/agents/${agent!.id}`, { token: admin })).status).toBe(404);
  });

  it('imports roles as custom roles RBAC honours, and refuses a role file granting admin-level access', async () => {
    const repo = gitServer.repo('roles-a');
    repo.write({
      'roles/repo-readers/role.yaml': 'description: reads sources\npermissions: [manage_repos, view_git]\n',
      'roles/sneaky/role.yaml': 'permissions: [manage_repos, manage_users]\n',
      'roles/admin/role.yaml': 'permissions: [view_git]\n',
      'roles/boss/role.yml': 'admin: true\npermissions: []\n',
    });
    const id = await create(repo);
    const reader = await env.idp.sign({ sub: 'ana', roles: ['repo-readers'] });
    expect((await http(stack.url, 'GET', '/api/managed-sources', { token: reader })).status).toBe(403);

    const preview = (await sync(id)).body.data;
    expect(preview.outcome).toBe('updated_with_errors');
    expect(preview.partial_success).toBe(true);
    expect(preview.requires_role_apply_confirmation).toBe(true);
    expect(preview.role_preview.changes).toEqual([{ action: 'create', artifact_id: 'repo-readers' }]);
    const degraded = preview.hydrate.roles.degraded_artifacts as Array<{ artifact_id: string; reason: string }>;
    expect(degraded.map((d) => d.artifact_id).sort()).toEqual(['admin', 'boss', 'sneaky']);
    for (const d of degraded) expect(d.reason).toContain('admin_access_refused');
    expect(preview.degraded_artifact_count).toBe(3);

    const noPins = await sync(id, { apply_role_changes: true });
    expect(noPins.status).toBe(409);
    expect(noPins.body.payload.code).toBe('ROLE_PREVIEW_REQUIRED');
    const applied = await sync(id, {
      apply_role_changes: true,
      expected_role_commit: preview.role_preview.commit_sha,
      expected_role_plan_hash: preview.role_preview.plan_hash,
    });
    expect(applied.status).toBe(200);
    expect(applied.body.data.role_auto_apply).toEqual({ applied: 1, waiting: 0 });
    const roles = await query<{ name: string; permissions: string[] }>(
      stack.db.url,
      'select name, permissions from custom_roles where managed_source_id = $1 order by name',
      [id],
    );
    expect(roles).toEqual([{ name: 'repo-readers', permissions: ['manage_repos', 'view_git'] }]);
    expect((await http(stack.url, 'GET', '/api/managed-sources', { token: reader })).status).toBe(200);
    // The custom role grants only what it lists: no user management.
    expect((await http(stack.url, 'GET', '/api/agents', { token: reader })).status).toBe(200);
    const sneaky = await env.idp.sign({ sub: 'eve2', roles: ['sneaky'] });
    expect((await http(stack.url, 'GET', '/api/managed-sources', { token: sneaky })).status).toBe(403);
  });

  it('reports malformed manifests as degraded artifacts without failing the sync; auto_promote_on_sync applies the rest', async () => {
    const repo = gitServer.repo('mixed');
    repo.write({
      'agents/good/agent.yaml': agentYaml('good', 'Good Agent'),
      'agents/broken/agent.yaml': 'schema_version: 1\nagent_id: [unclosed\n',
      'agents/missing/agent.yml': 'schema_version: 1\nagent_id: missing\nname: Missing\n',
      'agents/badgroup/agent.yaml': agentYaml('badgroup', 'Bad Group', 'tool_groups: [nope]\n').replace(
        'default_tool_groups: [action_review, agent_files]\n',
        '',
      ),
      'roles/ok/role.yaml': 'permissions: [view_git]\n',
      'roles/typo/role.yaml': 'permissions: [view_everything]\n',
    });
    const id = await create(repo, { auto_promote_on_sync: true });
    const res = await sync(id);
    expect(res.status).toBe(200);
    const r = res.body.data;
    expect(r.outcome).toBe('updated_with_errors');
    expect(r.partial_success).toBe(true);
    expect(r.degraded_artifact_count).toBe(4);
    const agentDegraded = r.hydrate.agents.degraded_artifacts as Array<{ artifact_id: string; reason: string }>;
    expect(agentDegraded.map((d) => d.artifact_id).sort()).toEqual([
      'agents/broken/agent.yaml',
      'agents/missing/agent.yml',
      'badgroup',
    ]);
    expect(agentDegraded.find((d) => d.artifact_id === 'agents/missing/agent.yml')!.reason).toContain('instructions');
    expect(agentDegraded.find((d) => d.artifact_id === 'badgroup')!.reason).toContain('unknown tool group');
    expect(r.hydrate.roles.degraded_artifacts).toEqual([
      { artifact_id: 'typo', reason: 'unknown permission(s) view_everything' },
    ]);
    expect(r.agent_auto_apply).toEqual({ applied: 1, waiting: 0 });
    expect(r.role_auto_apply).toEqual({ applied: 1, waiting: 0 });
    expect((await managedAgents(id)).map((a) => a.name)).toEqual(['Good Agent']);
    const job = await query<{ status: string }>(
      stack.db.url,
      'select status from managed_source_sync_jobs where source_id = $1',
      [id],
    );
    expect(job.map((j) => j.status)).toEqual(['complete']);
  });

  it('refuses removing scan types with the recovery payload, and changes nothing', async () => {
    const repo = gitServer.repo('types');
    repo.write({ 'x.md': 'x' });
    const id = await create(repo);
    const res = await http(stack.url, 'PATCH', `/api/managed-sources/${id}`, {
      token: admin,
      body: { scan_types_enabled: ['agents', 'skills'], name: 'renamed' },
    });
    expect(res.status).toBe(409);
    expect(res.body.payload).toEqual({
      code: 'SCAN_TYPE_REMOVAL_NOT_SUPPORTED',
      current_scan_types: ['agents', 'roles'],
      attempted_scan_types: ['agents', 'skills'],
      removed_scan_types: ['roles'],
      recovery: 'delete_and_recreate',
      remediation: expect.any(String),
    });
    const got = await http(stack.url, 'GET', `/api/managed-sources/${id}`, { token: admin });
    expect(got.body.data).toMatchObject({ name: 'artifacts', scan_types_enabled: ['agents', 'roles'] });
    const added = await http(stack.url, 'PATCH', `/api/managed-sources/${id}`, {
      token: admin,
      body: { scan_types_enabled: ['agents', 'roles', 'skills'] },
    });
    expect(added.status).toBe(200);
  });
  it("stores and answers a manifest's llm_provider and skill groups; changing them is a planned update", async () => {
    const repo = gitServer.repo('agents-fields');
    repo.write({
      'agents/writer/agent.yaml': agentYaml(
        'writer',
        'Wri Ter',
        'llm_provider: team-openai\ndefault_skill_groups: [reporting, reporting, sql]\n',
      ),
    });
    const id = await create(repo, { auto_promote_on_sync: true });
    const first = await sync(id);
    expect(first.body.data).toMatchObject({ outcome: 'updated', agent_auto_apply: { applied: 1, waiting: 0 } });
    const [row] = await query<{ id: string; llm_provider: string; skill_groups: string[] }>(
      stack.db.url,
      'select id, llm_provider, skill_groups from agents where managed_source_id = $1',
      [id],
    );
    expect(row).toMatchObject({ llm_provider: 'team-openai', skill_groups: ['reporting', 'sql'] });
    const view = await http(stack.url, 'GET', `/api/agents/${row!.id}`, { token: admin });
    expect(view.body.data).toMatchObject({ llm_provider: 'team-openai', skill_groups: ['reporting', 'sql'] });

    repo.write({ 'agents/writer/agent.yaml': agentYaml('writer', 'Wri Ter', 'skill_groups: [sql]\n') });
    const second = await sync(id);
    expect(second.body.data.agent_preview.changes).toEqual([
      { action: 'update', artifact_id: 'writer', fields: ['llm_provider', 'skill_groups'] },
    ]);
    const after = await http(stack.url, 'GET', `/api/agents/${row!.id}`, { token: admin });
    expect(after.body.data).toMatchObject({ llm_provider: null, skill_groups: ['sql'] });
    // Agents created over the API answer the fields too (no provider pinned, no skill groups).
    const listed = await http(stack.url, 'GET', '/api/agents', { token: admin });
    const builtin = (listed.body.data.agents ?? listed.body.data).find(
      (a: { source: string }) => a.source === 'builtin',
    );
    expect(builtin).toMatchObject({ llm_provider: null, skill_groups: [] });
  });
});
