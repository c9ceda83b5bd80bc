/**
 * Blueprint work-in-progress sessions (issue 14; spec, Blueprints: rename "rejects ... active WIP
 * sessions"; Errors: version import answers 409 for WIP targets): open, edit on the branch
 * wip/<session_id>, commit as one working-copy commit, discard, expiry, and the 409s they cause.
 * The stack runs without a worker: the TTL workflow is started (checked through Temporal) and its
 * expiry activity is called directly; the workflow itself runs in tests/blueprints/wip-workflow.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createBlueprintWipActivities } from '../../activities/blueprint-wip.js';
import { query } from '../helpers/db.js';
import type { Stack } from '../helpers/stack.js';
import { startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;
let root: string;

beforeAll(async () => {
  bp = await startBlueprintStack({
    users: { root: ['admin'], sam: ['member'], eve: ['bp-editors'] },
    customRoles: [{ name: 'bp-editors' }],
  });
  ({ stack, root } = bp);
});
afterAll(async () => bp?.close());

const api = (method: string, p: string, who = 'root', body?: unknown) => bp.api(method, p, who, body);
const createBlueprint = (name: string) => bp.createBlueprint(name);

const dirOf = (id: string) => path.join(root, 'default', id);
const branches = (id: string) => git.listBranches({ fs, dir: dirOf(id) });
const commits = async (name: string) =>
  (await api('GET', `/api/blueprints/${name}/history`)).body.data.commits as Array<{ message: string }>;

async function manifestWith(name: string, description: string): Promise<string> {
  const res = await fetch(`${stack.url}/api/blueprints/${name}/files/blueprint_manifest.yaml`, {
    headers: { authorization: `Bearer ${bp.token('root')}` },
  });
  expect(res.status).toBe(200);
  const m = parse(await res.text()) as { blueprint: { short_description: string } };
  m.blueprint.short_description = description;
  return stringify(m);
}

async function openSession(name: string, who = 'root', body: Record<string, unknown> = {}) {
  const r = await api('POST', `/api/blueprints/${name}/wip-sessions`, who, body);
  expect(r.status).toBe(201);
  return r.body.data as { session_id: string; branch: string; base_commit: string; workflow_id: string };
}

const upload = (p: string, archive: Buffer, fields: Record<string, string>) => bp.upload(p, 'root', archive, fields);

describe('WIP session lifecycle', () => {
  it('opens a session: a branch at the working copy head, a running TTL workflow, listed as active', async () => {
    const id = await createBlueprint('wip-open');
    const s = await openSession('wip-open', 'root', { ttl_seconds: 600, note: 'tune prompts' });
    expect(s.session_id).toMatch(/^bpwip_[0-9a-f]{16}$/);
    expect(s).toMatchObject({
      branch: `wip/${s.session_id}`,
      workflow_id: `blueprint-wip/${s.session_id}`,
      status: 'open',
      active: true,
      opened_by: 'root',
      note: 'tune prompts',
      edit_count: 0,
    });
    const head = await git.resolveRef({ fs, dir: dirOf(id), ref: 'HEAD' });
    expect(s.base_commit).toBe(head);
    expect(await branches(id)).toContain(`wip/${s.session_id}`);
    const described = await stack.api.deps.temporal.workflow.getHandle(s.workflow_id).describe();
    expect(described.type).toBe('blueprintWipSessionWorkflow');
    expect(described.status.name).toBe('RUNNING');
    const list = await api('GET', '/api/blueprints/wip-open/wip-sessions');
    expect(list.status).toBe(200);
    expect(list.body.data.sessions).toHaveLength(1);
    expect(list.body.data.sessions[0]).toMatchObject({ session_id: s.session_id, active: true });
  });

  it('edits land on the branch only; commit applies them to the working copy as one commit', async () => {
    const id = await createBlueprint('wip-commit');
    const before = await commits('wip-commit');
    const s = await openSession('wip-commit');
    const e1 = await api('POST', `/api/blueprints/wip-commit/wip-sessions/${s.session_id}/edits`, 'root', {
      files: [{ path: 'prompts/gather.md', content: 'Gather the numbers.\n' }],
    });
    expect(e1.status).toBe(200);
    const e2 = await api('POST', `/api/blueprints/wip-commit/wip-sessions/${s.session_id}/edits`, 'root', {
      files: [{ path: 'blueprint_manifest.yaml', content: await manifestWith('wip-commit', 'Edited in WIP') }],
      message: 'New description',
    });
    expect(e2.status).toBe(200);
    expect(e2.body.data.edit_count).toBe(2);
    expect(e2.body.data.head_commit).not.toBe(s.base_commit);
    // The working copy is untouched so far.
    expect((await api('GET', '/api/blueprints/wip-commit')).body.data.short_description).toBe('Blueprint wip-commit');
    expect((await api('GET', '/api/blueprints/wip-commit/files/prompts%2Fgather.md')).status).toBe(404);
    expect(await commits('wip-commit')).toHaveLength(before.length);
    const branchLog = await git.log({ fs, dir: dirOf(id), ref: `wip/${s.session_id}` });
    expect(branchLog[0]!.commit.message.trim()).toBe('New description');

    const c = await api('POST', `/api/blueprints/wip-commit/wip-sessions/${s.session_id}/commit`, 'root', {
      message: 'Apply the tuned prompts',
    });
    expect(c.status).toBe(200);
    expect(c.body.data).toMatchObject({
      changed_files: ['blueprint_manifest.yaml', 'prompts/gather.md'],
      removed_files: [],
      session: { status: 'committed', active: false, closed_by: 'root', head_commit: null },
    });
    expect(c.body.data.commit_sha).toBe(c.body.data.session.commit_sha);
    const after = await commits('wip-commit');
    expect(after).toHaveLength(before.length + 1);
    expect(after[0]!.message).toBe('Apply the tuned prompts');
    expect((await api('GET', '/api/blueprints/wip-commit')).body.data.short_description).toBe('Edited in WIP');
    const f = await api('GET', '/api/blueprints/wip-commit/files/prompts%2Fgather.md');
    expect(f.status).toBe(200);
    expect(await branches(id)).not.toContain(`wip/${s.session_id}`);
    // Closed: no further edit, commit or discard.
    for (const p of ['edits', 'commit', 'discard']) {
      const again = await api('POST', `/api/blueprints/wip-commit/wip-sessions/${s.session_id}/${p}`, 'root', {});
      expect(again.status).toBe(409);
      expect(again.body.payload).toMatchObject({ code: 'BLUEPRINT_WIP_SESSION_CLOSED', status: 'committed' });
    }
  });

  it('commit applies only what the session changed (a file edited meanwhile on the working copy stays)', async () => {
    await createBlueprint('wip-merge');
    const s = await openSession('wip-merge');
    await api('POST', `/api/blueprints/wip-merge/wip-sessions/${s.session_id}/edits`, 'root', {
      files: [{ path: 'notes.md', content: 'from the session\n' }],
    });
    // A direct update of the working copy while the session is open.
    const patch = await api('PATCH', '/api/blueprints/wip-merge', 'root', { short_description: 'Changed directly' });
    expect(patch.status).toBe(200);
    const c = await api('POST', `/api/blueprints/wip-merge/wip-sessions/${s.session_id}/commit`, 'root', {});
    expect(c.status).toBe(200);
    expect(c.body.data.changed_files).toEqual(['notes.md']);
    const d = (await api('GET', '/api/blueprints/wip-merge')).body.data;
    expect(d.short_description).toBe('Changed directly');
    expect(d.files).toContain('notes.md');
  });

  it('removes files through an edit, and discard drops the edits leaving the working copy as it was', async () => {
    const id = await createBlueprint('wip-discard');
    const s1 = await openSession('wip-discard');
    await api('POST', `/api/blueprints/wip-discard/wip-sessions/${s1.session_id}/edits`, 'root', {
      files: [{ path: 'extra.md', content: 'x' }],
    });
    await api('POST', `/api/blueprints/wip-discard/wip-sessions/${s1.session_id}/commit`, 'root', {});
    const before = await commits('wip-discard');

    const s = await openSession('wip-discard');
    const rm1 = await api('POST', `/api/blueprints/wip-discard/wip-sessions/${s.session_id}/edits`, 'root', {
      remove: ['extra.md'],
      files: [{ path: 'other.md', content: 'y' }],
    });
    expect(rm1.status).toBe(200);
    const missing = await api('POST', `/api/blueprints/wip-discard/wip-sessions/${s.session_id}/edits`, 'root', {
      remove: ['nope.md'],
    });
    expect(missing.status).toBe(404);
    const d = await api('POST', `/api/blueprints/wip-discard/wip-sessions/${s.session_id}/discard`);
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ status: 'discarded', active: false, commit_sha: null, closed_by: 'root' });
    expect(await commits('wip-discard')).toHaveLength(before.length);
    const files = (await api('GET', '/api/blueprints/wip-discard')).body.data.files as string[];
    expect(files).toContain('extra.md');
    expect(files).not.toContain('other.md');
    expect(await branches(id)).not.toContain(`wip/${s.session_id}`);
    const e = await api('POST', `/api/blueprints/wip-discard/wip-sessions/${s.session_id}/edits`, 'root', {
      files: [{ path: 'z.md', content: 'z' }],
    });
    expect(e.status).toBe(409);
    expect(e.body.payload).toMatchObject({ code: 'BLUEPRINT_WIP_SESSION_CLOSED', status: 'discarded' });
  });

  it('refuses invalid edits with 400 and writes nothing', async () => {
    const id = await createBlueprint('wip-invalid');
    const s = await openSession('wip-invalid');
    const bad = [
      { files: [{ path: 'blueprint_manifest.yaml', content: 'name: [' }] },
      {
        files: [
          {
            path: 'blueprint_manifest.yaml',
            content: (await manifestWith('wip-invalid', 'x')).replace('name: wip-invalid', 'name: other-name'),
          },
        ],
      },
      { remove: ['blueprint_manifest.yaml'] },
    ];
    for (const body of bad) {
      const r = await api('POST', `/api/blueprints/wip-invalid/wip-sessions/${s.session_id}/edits`, 'root', body);
      expect(r.status).toBe(400);
      expect(r.body.error_type).toBe('bad_request');
    }
    const traversal = await api('POST', `/api/blueprints/wip-invalid/wip-sessions/${s.session_id}/edits`, 'root', {
      files: [{ path: '../escape.md', content: 'x' }],
    });
    expect([400, 422]).toContain(traversal.status);
    const list = (await api('GET', '/api/blueprints/wip-invalid/wip-sessions')).body.data.sessions;
    expect(list[0]).toMatchObject({ edit_count: 0, head_commit: s.base_commit });
    expect(fs.existsSync(path.join(root, 'escape.md'))).toBe(false);
    expect(fs.existsSync(path.join(dirOf(id), '..', 'escape.md'))).toBe(false);
  });

  it('checks access: default blueprints, strangers, editors, and only the opener or a manager may use a session', async () => {
    const defaults = (await api('GET', '/api/blueprints/')).body.data.blueprints.filter(
      (b: { is_default: boolean }) => b.is_default,
    );
    const d = await api('POST', `/api/blueprints/${defaults[0].blueprint_name}/wip-sessions`, 'root', {});
    expect(d.status).toBe(409);
    expect(d.body.payload.code).toBe('DEFAULT_BLUEPRINT');

    await createBlueprint('wip-access');
    expect((await api('POST', '/api/blueprints/wip-access/wip-sessions', 'sam', {})).status).toBe(404);
    await api('POST', '/api/blueprints/wip-access/access/grant', 'root', { role_name: 'bp-editors', action: 'view' });
    const viewer = await api('POST', '/api/blueprints/wip-access/wip-sessions', 'eve', {});
    expect(viewer.status).toBe(403);
    await api('POST', '/api/blueprints/wip-access/access/grant', 'root', { role_name: 'bp-editors', action: 'edit' });
    const mine = await openSession('wip-access', 'eve');
    const rootSession = await openSession('wip-access', 'root');
    // eve (edit, not manage) cannot use root's session; root (admin) may use eve's.
    const foreign = await api(
      'POST',
      `/api/blueprints/wip-access/wip-sessions/${rootSession.session_id}/discard`,
      'eve',
    );
    expect(foreign.status).toBe(403);
    expect(
      (await api('POST', `/api/blueprints/wip-access/wip-sessions/${mine.session_id}/discard`, 'root')).status,
    ).toBe(200);
    // A session id of another blueprint is not found here.
    await createBlueprint('wip-access-2');
    expect(
      (await api('POST', `/api/blueprints/wip-access-2/wip-sessions/${rootSession.session_id}/discard`, 'root')).status,
    ).toBe(404);
  });
});

describe('what an active WIP session blocks', () => {
  it('rename answers 409 BLUEPRINT_WIP_SESSION_ACTIVE and renames nothing, then works once committed', async () => {
    const id = await createBlueprint('wip-rename');
    const s = await openSession('wip-rename');
    const r = await api('POST', '/api/blueprints/wip-rename/rename', 'root', { new_name: 'wip-renamed' });
    expect(r.status).toBe(409);
    expect(r.body.payload).toMatchObject({
      code: 'BLUEPRINT_WIP_SESSION_ACTIVE',
      blueprint_id: id,
      wip_session_ids: [s.session_id],
    });
    expect((await query(stack.db.url, 'select name from blueprints where blueprint_id = $1', [id]))[0]).toEqual({
      name: 'wip-rename',
    });
    await api('POST', `/api/blueprints/wip-rename/wip-sessions/${s.session_id}/commit`, 'root', {});
    const ok = await api('POST', '/api/blueprints/wip-rename/rename', 'root', { new_name: 'wip-renamed' });
    expect(ok.status).toBe(200);
  });

  it('create_version import answers 409 BLUEPRINT_WIP_SESSION_ACTIVE and adds no version', async () => {
    await createBlueprint('wip-import');
    expect((await api('POST', '/api/blueprints/wip-import/versioning/enable', 'root')).status).toBe(200);
    const res = await fetch(`${stack.url}/api/blueprints/wip-import/export`, {
      headers: { authorization: `Bearer ${bp.token('root')}` },
    });
    expect(res.status).toBe(200);
    const archive = Buffer.from(await res.arrayBuffer());
    const s = await openSession('wip-import');
    const r = await upload('/api/blueprints/import', archive, { collision_strategy: 'create_version' });
    expect(r.status).toBe(409);
    expect(r.body.payload).toMatchObject({ code: 'BLUEPRINT_WIP_SESSION_ACTIVE', wip_session_ids: [s.session_id] });
    expect((await api('GET', '/api/blueprints/wip-import/versioning/summary')).body.data.versions).toHaveLength(0);
    await api('POST', `/api/blueprints/wip-import/wip-sessions/${s.session_id}/discard`);
    const ok = await upload('/api/blueprints/import', archive, { collision_strategy: 'create_version' });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ import_action: 'version_created', created_version_number: 1 });
  });

  it('expiry (the workflow activity) closes the session, drops its branch and unblocks rename; a repeat is a no-op', async () => {
    const id = await createBlueprint('wip-expire');
    const s = await openSession('wip-expire');
    await api('POST', `/api/blueprints/wip-expire/wip-sessions/${s.session_id}/edits`, 'root', {
      files: [{ path: 'draft.md', content: 'draft' }],
    });
    const acts = createBlueprintWipActivities({ orm: stack.api.deps.orm, config: stack.config });
    expect(await acts.expireBlueprintWipSession({ sessionId: s.session_id })).toEqual({ expired: true });
    expect(await acts.expireBlueprintWipSession({ sessionId: s.session_id })).toEqual({ expired: false });
    expect(await branches(id)).not.toContain(`wip/${s.session_id}`);
    const list = (await api('GET', '/api/blueprints/wip-expire/wip-sessions')).body.data.sessions;
    expect(list[0]).toMatchObject({ status: 'expired', active: false, closed_by: null });
    expect((await api('GET', '/api/blueprints/wip-expire')).body.data.files).not.toContain('draft.md');
    const c = await api('POST', `/api/blueprints/wip-expire/wip-sessions/${s.session_id}/commit`, 'root', {});
    expect(c.status).toBe(409);
    expect(c.body.payload.status).toBe('expired');
    expect((await api('POST', '/api/blueprints/wip-expire/rename', 'root', { new_name: 'wip-expired' })).status).toBe(
      200,
    );
    // A committed session is not expired afterwards.
    const s2 = await openSession('wip-expired');
    await api('POST', `/api/blueprints/wip-expired/wip-sessions/${s2.session_id}/commit`, 'root', {});
    expect(await acts.expireBlueprintWipSession({ sessionId: s2.session_id })).toEqual({ expired: false });
  });
});
