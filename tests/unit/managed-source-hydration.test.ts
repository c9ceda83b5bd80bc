import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyHydration, syncOutcome } from '../../activities/managed-sources.js';
import { ADMIN_LEVEL_PERMISSIONS } from '../../shared/auth/custom-roles.js';
import { BUILT_IN_ROLES } from '../../shared/auth/rbac.js';
import { loadConfig } from '../../shared/config.js';
import { autoSyncSchedule } from '../../shared/managed-sources/auto-sync-schedule.js';
import { intervalScheduleOptions } from '../../shared/temporal/interval-schedule.js';
import { readAgentManifests, readRoleManifests } from '../../shared/managed-sources/hydrate.js';

const dir = mkdtempSync(path.join(tmpdir(), 'manifests-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function put(files: Record<string, string>): string[] {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  return Object.keys(files);
}

describe('managed-source manifests', () => {
  it('reads agent manifests with their fields; duplicates and bad versions are degraded', async () => {
    const files = put({
      'agents/a/agent.yaml':
        'schema_version: 1\nagent_id: a\nname: A\ninstructions: Do A.\nllm_provider: openai\ndefault_tool_groups: [agent_files]\ndefault_skill_groups: [sql]\naccess: {roles: [analyst]}\n',
      'agents/b/agent.yml': 'schema_version: 1\nagent_id: a\nname: B\ninstructions: Do B.\n',
      'agents/c/agent.yaml': 'schema_version: 2\nagent_id: c\nname: C\ninstructions: Do C.\n',
    });
    const { desired, degraded } = await readAgentManifests(dir, files);
    expect(desired).toEqual([
      {
        agent_id: 'a',
        name: 'A',
        description: null,
        instructions: 'Do A.',
        tool_groups: ['agent_files'],
        access: { roles: ['analyst'], users: [] },
        llm_provider: 'openai',
        skill_groups: ['sql'],
      },
    ]);
    expect(degraded).toEqual([
      { artifact_id: 'a', reason: 'agent_id also declared by agents/a/agent.yaml' },
      { artifact_id: 'agents/c/agent.yaml', reason: expect.stringContaining('schema_version') },
    ]);
  });

  it('never accepts a role granting admin-level access', async () => {
    // Admin-level permissions are ones only the built-in admin role holds.
    for (const [name, perms] of Object.entries(BUILT_IN_ROLES))
      if (name !== 'admin') for (const p of ADMIN_LEVEL_PERMISSIONS) expect(perms).not.toContain(p);
    const files = put({
      'roles/ok/role.yaml': 'permissions: [view_git, manage_repos]\n',
      'roles/secrets/role.yaml': 'permissions: [manage_secrets]\n',
      'roles/panel/role.yaml': 'permissions: [access_config_panel]\n',
      'roles/developer/role.yaml': 'permissions: [view_git]\n',
      'roles/Bad Name/role.yaml': 'permissions: []\n',
      'roles/renamed/role.yaml': 'name: other\npermissions: []\n',
    });
    const { desired, degraded } = await readRoleManifests(dir, files);
    expect(desired).toEqual([{ role_name: 'ok', description: null, permissions: ['manage_repos', 'view_git'] }]);
    const reasons = Object.fromEntries(degraded.map((d) => [d.artifact_id, d.reason]));
    expect(reasons.secrets).toContain('admin_access_refused');
    expect(reasons.panel).toContain('admin_access_refused');
    expect(reasons.developer).toContain('built-in role');
    expect(reasons['Bad Name']).toContain('lowercase');
    expect(reasons.renamed).toContain('differs from its folder');
  });

  it('names the outcome from what the sync did', () => {
    const h = emptyHydration();
    expect(syncOutcome(false, h)).toBe('up_to_date');
    expect(syncOutcome(true, h)).toBe('updated');
    expect(syncOutcome(false, { ...h, agent_auto_apply: { applied: 0, waiting: 2 } })).toBe(
      'updated_awaiting_promotion',
    );
    expect(syncOutcome(false, { ...h, agent_auto_apply: { applied: 1, waiting: 0 } })).toBe('updated');
    expect(syncOutcome(true, { ...h, degraded_artifact_count: 1 })).toBe('updated_with_errors');
  });

  it('declares the auto-sync Schedule every 300 s, never overlapping', () => {
    const options = intervalScheduleOptions(loadConfig({ TEMPORAL_TASK_QUEUE: 'q' }), autoSyncSchedule());
    expect(options.spec.intervals).toEqual([{ every: '300 seconds' }]);
    expect(options.action).toMatchObject({ workflowType: 'managedSourceAutoSyncWorkflow', taskQueue: 'q' });
    expect(options.policies.overlap).toBe('SKIP');
  });
});
