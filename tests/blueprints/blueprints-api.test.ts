import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { query } from '../helpers/db.js';
import type { Stack } from '../helpers/stack.js';
import { zip as buildZip, type ZipEntry as Member } from '../helpers/zip.js';
import { readZip, startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;
let root: string;

beforeAll(async () => {
  bp = await startBlueprintStack({
    users: {
      root: ['admin'],
      olivia: ['member'],
      sam: ['member'],
      rita: ['reviewer'],
      dan: ['developer'],
      eve: ['bp-editors'],
      mia: ['blueprint-admins'],
    },
    customRoles: [{ name: 'bp-editors' }, { name: 'blueprint-admins', permissions: ['manage_all_blueprints'] }],
  });
  ({ stack, root } = bp);
});
afterAll(async () => bp?.close());

const api = (method: string, p: string, who: string, body?: unknown) => bp.api(method, p, who, body);
const upload = (p: string, who: string, archive: Buffer, fields?: Record<string, string>) =>
  bp.upload(p, who, archive, fields);
const download = (p: string, who: string) => bp.download(p, who);

const names = async (who: string) =>
  ((await api('GET', '/api/blueprints/', who)).body.data.blueprints as Array<{ blueprint_name: string }>).map(
    (b) => b.blueprint_name,
  );

describe('built-in defaults', () => {
  it('lists the visible defaults, hides the hidden one but answers its detail by name', async () => {
    const list = await api('GET', '/api/blueprints/', 'sam');
    expect(list.status).toBe(200);
    const n = await names('sam');
    expect(n).toContain('data-quality-audit');
    expect(n).toContain('pipeline-incident-triage');
    expect(n).not.toContain('platform-self-check');
    const item = list.body.data.blueprints.find(
      (b: { blueprint_name: string }) => b.blueprint_name === 'data-quality-audit',
    );
    expect(item.origin.source_type).toBe('builtin');
    expect(item.is_default).toBe(true);
    const hidden = await api('GET', '/api/blueprints/platform-self-check', 'sam');
    expect(hidden.status).toBe(200);
    expect(hidden.body.data.hidden).toBe(true);
  });

  it('serves a default file and an empty history, and refuses export, rename, delete and edit', async () => {
    const f = await download('/api/blueprints/data-quality-audit/files/prompts%2Fprofile.md', 'sam');
    expect(f.status).toBe(200);
    expect(f.bytes.toString()).toContain('profiling query');
    const h = await api('GET', '/api/blueprints/data-quality-audit/history', 'sam');
    expect(h.body.data.commits).toEqual([]);
    for (const [method, p, body] of [
      ['GET', '/api/blueprints/data-quality-audit/export', undefined],
      ['POST', '/api/blueprints/data-quality-audit/rename', { new_name: 'dqa' }],
      ['DELETE', '/api/blueprints/data-quality-audit', undefined],
      ['PATCH', '/api/blueprints/data-quality-audit', { short_description: 'x' }],
    ] as const) {
      const r = await api(method, p, 'root', body);
      expect(r.status, `${method} ${p}`).toBe(409);
      expect(r.body.payload.code).toBe('DEFAULT_BLUEPRINT');
    }
    expect((await api('POST', '/api/blueprints/', 'root', { blueprint_name: 'data-quality-audit' })).status).toBe(409);
  });
});

describe('authoring, detail, files and history', () => {
  let id: string;
  it('creates an owner-only blueprint with one commit by its creator', async () => {
    const c = await api('POST', '/api/blueprints/', 'olivia', {
      blueprint_name: 'churn-review',
      short_description: 'Weekly churn',
      default_mode: 'autonomous',
      phases: [{ id: 'gather', name: 'Gather', goal: 'Collect churned accounts', prompts: [{ text: 'Query it' }] }],
    });
    expect(c.status).toBe(201);
    id = c.body.data.blueprint_id;
    expect(id).toMatch(/^bp_[0-9a-f]{16}$/);
    expect(c.body.data.blueprint.short_description).toBe('Weekly churn');
    expect(c.body.data.blueprint.default_mode).toBe('autonomous');
    expect(c.body.data.blueprint.created_by).toBe('olivia');
    expect(c.body.data.blueprint.origin).toMatchObject({ source_type: 'local', created_by_user_id: 'olivia' });
    expect(c.body.data.blueprint.source_view.source_type).toBe('local');
    expect(c.body.data.access).toMatchObject({ is_owner: true, can_manage: true });
    expect(c.body.data.phases[0]).toMatchObject({ id: 'gather', skills: [], files: [] });
    expect(existsSync(path.join(root, 'default', id, '.git'))).toBe(true);
    expect((await api('POST', '/api/blueprints/', 'sam', { blueprint_name: 'churn-review' })).body.payload.code).toBe(
      'BLUEPRINT_NAME_TAKEN',
    );
    const bad = await api('POST', '/api/blueprints/', 'olivia', { blueprint_name: '../evil' });
    expect(bad.status).toBe(400);
  });

  it('is invisible to a stranger, visible to view_all_blueprints, editable only by the owner', async () => {
    expect((await api('GET', '/api/blueprints/churn-review', 'sam')).status).toBe(404);
    expect(await names('sam')).not.toContain('churn-review');
    expect(await names('rita')).toContain('churn-review');
    const r = await api('GET', '/api/blueprints/churn-review', 'rita');
    expect(r.body.data.access).toEqual({ is_owner: false, can_view: true, can_edit: false, can_manage: false });
    const denied = await api('PATCH', '/api/blueprints/churn-review', 'rita', { short_description: 'no' });
    expect(denied.status).toBe(403);
    expect(denied.body.error_type).toBe('forbidden');
    const ok = await api('PATCH', '/api/blueprints/churn-review', 'olivia', { short_description: 'Monthly churn' });
    expect(ok.status).toBe(200);
    expect(ok.body.data.short_description).toBe('Monthly churn');
  });

  it('pins blueprint_id and answers the identity mismatch', async () => {
    expect((await api('GET', `/api/blueprints/churn-review?blueprint_id=${id}`, 'olivia')).status).toBe(200);
    const m = await api('GET', '/api/blueprints/churn-review?blueprint_id=bp_0000000000000000', 'olivia');
    expect(m.status).toBe(409);
    expect(m.body.payload.code).toBe('BLUEPRINT_IDENTITY_MISMATCH');
    const d = await api('DELETE', '/api/blueprints/churn-review?blueprint_id=bp_0000000000000000', 'olivia');
    expect(d.status).toBe(409);
  });

  it('serves file bytes and refuses traversal', async () => {
    const f = await download('/api/blueprints/churn-review/files/blueprint_manifest.yaml', 'olivia');
    expect(f.status).toBe(200);
    expect(parse(f.bytes.toString()).blueprint.short_description).toBe('Monthly churn');
    for (const p of ['..%2F..%2Fetc%2Fpasswd', '%2Fetc%2Fpasswd', '.git%2Fconfig', 'a%2F..%2F..%2Fx']) {
      const r = await api('GET', `/api/blueprints/churn-review/files/${p}`, 'olivia');
      expect(r.status, p).toBe(400);
    }
    expect((await api('GET', '/api/blueprints/churn-review/files/nope.md', 'olivia')).status).toBe(404);
    expect((await api('GET', '/api/blueprints/churn-review/files/blueprint_manifest.yaml', 'sam')).status).toBe(404);
  });

  it('answers the real commit history with author and message', async () => {
    const h = await api('GET', '/api/blueprints/churn-review/history', 'olivia');
    expect(h.status).toBe(200);
    expect(h.body.data.commits.map((c: { message: string }) => c.message)).toEqual([
      'Update short_description of churn-review',
      'Create blueprint churn-review',
    ]);
    expect(h.body.data.commits[0]).toMatchObject({ author_id: 'olivia', author_name: 'OLIVIA' });
    expect(h.body.data.commits[0].commit_id).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe('access grants, rename and delete', () => {
  it('grants need manage access and a configured, non-blank role; nothing is written on refusal', async () => {
    expect(
      (await api('POST', '/api/blueprints/churn-review/access/grant', 'sam', { role_name: 'bp-editors' })).status,
    ).toBe(404);
    expect(
      (await api('POST', '/api/blueprints/churn-review/access/grant', 'rita', { role_name: 'bp-editors' })).status,
    ).toBe(403);
    for (const role_name of ['', '   ', 'no-such-role']) {
      const r = await api('POST', '/api/blueprints/churn-review/access/grant', 'olivia', { role_name, action: 'edit' });
      expect(r.status, role_name).toBe(400);
      expect(r.body.error_type).toBe('bad_request');
    }
    expect((await api('POST', '/api/blueprints/churn-review/access/grant', 'olivia', {})).status).toBe(400);
    expect((await api('GET', '/api/blueprints/churn-review/access', 'olivia')).body.data.grants).toEqual([]);
  });

  it('an edit grant to a custom role lets its members edit but not delete; revoke takes it back', async () => {
    expect((await api('GET', '/api/blueprints/churn-review', 'eve')).status).toBe(404);
    const g = await api('POST', '/api/blueprints/churn-review/access/grant', 'olivia', {
      role_name: 'bp-editors',
      action: 'edit',
    });
    expect(g.status).toBe(200);
    expect(g.body.data.grants).toMatchObject([
      { role_name: 'bp-editors', action: 'edit', subject: 'blueprint:churn-review' },
    ]);
    expect(await names('eve')).toContain('churn-review');
    expect((await api('PATCH', '/api/blueprints/churn-review', 'eve', { short_description: 'By Eve' })).status).toBe(
      200,
    );
    expect((await api('DELETE', '/api/blueprints/churn-review', 'eve')).status).toBe(403);
    expect(
      (await api('POST', '/api/blueprints/churn-review/access/grant', 'eve', { role_name: 'member' })).status,
    ).toBe(403);
    const r = await api('POST', '/api/blueprints/churn-review/access/revoke', 'olivia', {
      role_name: 'bp-editors',
      action: 'edit',
    });
    expect(r.body.data.grants).toEqual([]);
    expect((await api('GET', '/api/blueprints/churn-review', 'eve')).status).toBe(404);
  });

  it('a view grant lets a role read only; role-level manage_all_blueprints (custom role) manages; admin bypasses', async () => {
    await api('POST', '/api/blueprints/churn-review/access/grant', 'olivia', { role_name: 'member', action: 'view' });
    const s = await api('GET', '/api/blueprints/churn-review', 'sam');
    expect(s.body.data.access).toMatchObject({ can_view: true, can_edit: false });
    expect((await api('PATCH', '/api/blueprints/churn-review', 'sam', { short_description: 'x' })).status).toBe(403);
    const m = await api('GET', '/api/blueprints/churn-review', 'mia');
    expect(m.body.data.access).toMatchObject({ can_view: true, can_edit: true, can_manage: true, is_owner: false });
    expect((await api('GET', '/api/blueprints/churn-review', 'root')).body.data.access.can_manage).toBe(true);
  });

  it('rename needs manage access and manage_git; grants and history follow the new name', async () => {
    // mia manages every blueprint but lacks manage_git; dan has manage_git but only views.
    expect((await api('POST', '/api/blueprints/churn-review/rename', 'mia', { new_name: 'churn' })).status).toBe(403);
    expect((await api('POST', '/api/blueprints/churn-review/rename', 'dan', { new_name: 'churn' })).status).toBe(403);
    // olivia owns it but her role has no manage_git.
    expect((await api('POST', '/api/blueprints/churn-review/rename', 'olivia', { new_name: 'churn' })).status).toBe(
      403,
    );
    await api('POST', '/api/blueprints/churn-review/access/grant', 'olivia', {
      role_name: 'developer',
      action: 'manage',
    });
    const taken = await api('POST', '/api/blueprints/churn-review/rename', 'dan', { new_name: 'data-quality-audit' });
    expect(taken.status).toBe(409);
    const r = await api('POST', '/api/blueprints/churn-review/rename', 'dan', { new_name: 'churn' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ old_name: 'churn-review', blueprint_name: 'churn', status: 'renamed' });
    expect((await api('GET', '/api/blueprints/churn-review', 'olivia')).status).toBe(404);
    const a = await api('GET', '/api/blueprints/churn/access', 'olivia');
    expect(a.body.data.grants.map((g: { role_name: string }) => g.role_name).sort()).toEqual(['developer', 'member']);
    const h = await api('GET', '/api/blueprints/churn/history', 'olivia');
    expect(h.body.data.commits[0]).toMatchObject({
      message: 'Rename blueprint churn-review to churn',
      author_id: 'dan',
    });
    expect(h.body.data.commits).toHaveLength(4);
    expect((await api('GET', '/api/blueprints/churn', 'olivia')).body.data.manifest.name).toBe('churn');
  });
});

describe('export and import', () => {
  let exported: Buffer;
  let id: string;
  beforeAll(async () => {
    const c = await api('POST', '/api/blueprints/', 'olivia', {
      blueprint_name: 'sales-digest',
      short_description: 'Sales digest',
      phases: [{ id: 'collect', name: 'Collect', goal: 'Collect deals', files: ['templates/digest.md'] }],
    });
    id = c.body.data.blueprint_id;
  });

  it('exports the working copy and the v2 sidecar; strangers and defaults are refused', async () => {
    const e = await download('/api/blueprints/sales-digest/export', 'olivia');
    expect(e.status).toBe(200);
    expect(e.type).toBe('application/zip');
    exported = e.bytes;
    const files = await readZip(exported);
    expect([...files.keys()].sort()).toEqual(['blueprint_export_manifest.yaml', 'blueprint_manifest.yaml']);
    const side = parse(files.get('blueprint_export_manifest.yaml')!.toString());
    expect(side).toMatchObject({
      manifest_version: 2,
      blueprint_name: 'sales-digest',
      blueprint_id: id,
      source_identity: { source_type: 'local', source_id: null, repo_id: null, path: '.' },
    });
    expect(side.working_copy_fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect((await download('/api/blueprints/sales-digest/export', 'sam')).status).toBe(404);
  });

  it('previews without writing: matching target by blueprint_id, replace recommended to its editor', async () => {
    const before = readdirSync(path.join(root, 'default')).length;
    const p = await upload('/api/blueprints/import/preview', 'olivia', exported);
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({
      valid: true,
      blueprint_name: 'sales-digest',
      blueprint_id: id,
      manifest_version: 2,
      legacy_export: false,
      matching_local_target: { blueprint_id: id, matched_by: 'blueprint_id', can_edit: true },
      allowed_collision_strategies: ['create_copy', 'replace'],
      recommended_strategy: 'replace',
    });
    const stranger = await upload('/api/blueprints/import/preview', 'sam', exported);
    expect(stranger.body.data.matching_local_target).toBeNull();
    expect(stranger.body.data.recommended_strategy).toBe('create_copy');
    expect(readdirSync(path.join(root, 'default')).length).toBe(before);
  });

  it('create_copy suffixes the name, makes the importer created_by and keeps the archive creator in origin', async () => {
    const r = await upload('/api/blueprints/import', 'sam', exported);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      import_action: 'created',
      blueprint_name: 'sales-digest-copy',
      no_change: false,
    });
    expect(r.body.data.blueprint_id).not.toBe(id);
    const d = await api('GET', '/api/blueprints/sales-digest-copy', 'sam');
    expect(d.body.data.blueprint.created_by).toBe('sam');
    expect(d.body.data.blueprint.origin).toMatchObject({
      source_type: 'import',
      created_by_user_id: 'olivia',
      imported_by_user_id: 'sam',
      source_blueprint_id: id,
    });
    expect((await api('GET', '/api/blueprints/sales-digest-copy', 'olivia')).status).toBe(404);
    const again = await upload('/api/blueprints/import', 'sam', exported, { collision_strategy: 'create_copy' });
    expect(again.body.data.blueprint_name).toBe('sales-digest-copy-2');
  });

  it('replace with identical content is no_change; changed content is one commit keeping created_by and origin', async () => {
    const same = await upload('/api/blueprints/import', 'olivia', exported, { collision_strategy: 'replace' });
    expect(same.status).toBe(200);
    expect(same.body.data).toMatchObject({
      import_action: 'replaced',
      blueprint_id: id,
      no_change: true,
      overrode_existing: true,
    });
    const files = await readZip(exported);
    const manifest = parse(files.get('blueprint_manifest.yaml')!.toString());
    manifest.blueprint.short_description = 'Sales digest v2';
    manifest.created_by = 'someone-else';
    const { stringify } = await import('yaml');
    const changed = buildZip([
      { name: 'blueprint_manifest.yaml', data: stringify(manifest) },
      { name: 'templates/digest.md', data: '# Digest\n', deflate: true },
      { name: 'blueprint_export_manifest.yaml', data: files.get('blueprint_export_manifest.yaml')! },
    ]);
    const r = await upload('/api/blueprints/import', 'olivia', changed, { override: 'true' });
    expect(r.body.data).toMatchObject({ import_action: 'replaced', no_change: false });
    const d = await api('GET', '/api/blueprints/sales-digest', 'olivia');
    expect(d.body.data.short_description).toBe('Sales digest v2');
    expect(d.body.data.blueprint.created_by).toBe('olivia');
    expect(d.body.data.files).toEqual(['blueprint_manifest.yaml', 'templates/digest.md']);
    expect(d.body.data.missing_files).toEqual([]);
    const h = await api('GET', '/api/blueprints/sales-digest/history', 'olivia');
    expect(h.body.data.commits[0].message).toBe('Replace the working copy of sales-digest from a ZIP archive');
    expect(h.body.data.commits).toHaveLength(2);
    // The stranger cannot replace what it cannot see; a viewer cannot replace what it cannot edit.
    expect((await upload('/api/blueprints/import', 'sam', exported, { collision_strategy: 'replace' })).status).toBe(
      404,
    );
    expect((await upload('/api/blueprints/import', 'rita', exported, { collision_strategy: 'replace' })).status).toBe(
      403,
    );
  });

  it('create_version: legacy exports need confirmation, the target must be unique and versioned', async () => {
    const files = await readZip(exported);
    const legacy = buildZip([{ name: 'blueprint_manifest.yaml', data: files.get('blueprint_manifest.yaml')! }]);
    const p = await upload('/api/blueprints/import/preview', 'olivia', legacy);
    expect(p.body.data).toMatchObject({ legacy_export: true, manifest_version: 1, blueprint_id: null });
    expect(p.body.data.matching_local_target).toMatchObject({ matched_by: 'name', blueprint_id: id });
    const l = await upload('/api/blueprints/import', 'olivia', legacy, { collision_strategy: 'create_version' });
    expect(l.status).toBe(409);
    expect(l.body.payload.code).toBe('LEGACY_BLUEPRINT_CONFIRMATION_REQUIRED');
    const confirmed = await upload('/api/blueprints/import', 'olivia', legacy, {
      collision_strategy: 'create_version',
      confirm_legacy_name_match: 'true',
    });
    expect(confirmed.status).toBe(409);
    expect(confirmed.body.payload.code).toBe('BLUEPRINT_NOT_VERSIONED');
    const side = parse(files.get('blueprint_export_manifest.yaml')!.toString());
    side.blueprint_id = 'bp_ffffffffffffffff';
    const { stringify } = await import('yaml');
    const foreign = buildZip([
      { name: 'blueprint_manifest.yaml', data: files.get('blueprint_manifest.yaml')! },
      { name: 'blueprint_export_manifest.yaml', data: stringify(side) },
    ]);
    const nf = await upload('/api/blueprints/import', 'olivia', foreign, { collision_strategy: 'create_version' });
    expect(nf.status).toBe(409);
    expect(nf.body.payload.code).toBe('BLUEPRINT_VERSION_TARGET_NOT_UNIQUE');
    const promo = await upload('/api/blueprints/import', 'olivia', exported, { promote_imported_version: 'true' });
    expect(promo.status).toBe(400);
  });
});

describe('unsafe archives are refused before anything is written', () => {
  const manifest = 'schema_version: 1\nname: attack\n';
  const ok: Member = { name: 'blueprint_manifest.yaml', data: manifest };
  const cases: Array<[string, () => Buffer, string]> = [
    ['zip-slip', () => buildZip([ok, { name: '../../evil.txt', data: 'x' }]), 'path_traversal'],
    ['nested zip-slip', () => buildZip([ok, { name: 'a/../../evil.txt', data: 'x' }]), 'path_traversal'],
    ['absolute path', () => buildZip([ok, { name: '/etc/evil', data: 'x' }]), 'absolute_path'],
    ['symlink', () => buildZip([ok, { name: 'link', data: '/etc/passwd', mode: 0o120777 }]), 'symlink'],
    [
      'bomb by ratio',
      () => buildZip([ok, { name: 'big.txt', data: Buffer.alloc(8 * 1024 * 1024), deflate: true }]),
      'compression_ratio',
    ],
    [
      '2049 members',
      () => buildZip([ok, ...Array.from({ length: 2048 }, (_, i) => ({ name: `f/${i}.txt`, data: 'x' }))]),
      'too_many_members',
    ],
    [
      'oversized member',
      () => buildZip([ok, { name: 'huge.bin', data: Buffer.alloc(33 * 1024 * 1024, 7) }]),
      'member_too_large',
    ],
    [
      'duplicate names',
      () => buildZip([ok, { name: 'a.txt', data: '1' }, { name: 'A.txt', data: '2' }]),
      'duplicate_name',
    ],
    ['backslash', () => buildZip([ok, { name: '..\\evil.txt', data: 'x' }]), 'invalid_path'],
    ['not a zip', () => Buffer.from('hello, not a zip'), 'not_a_zip'],
    [
      'a member failing its CRC-32 (read after others were written)',
      () => {
        const archive = buildZip([ok, { name: 'a.txt', data: 'fine' }, { name: 'z.txt', data: 'corrupted later' }]);
        archive[archive.indexOf('corrupted later')] ^= 0x01;
        return archive;
      },
      'crc_mismatch',
    ],
    [
      'a truncated archive',
      () => buildZip([ok, { name: 'a.txt', data: 'x'.repeat(100) }]).subarray(0, 150),
      'not_a_zip',
    ],
  ];
  for (const [label, make, reason] of cases) {
    it(`refuses ${label}`, async () => {
      const before = readdirSync(path.join(root, 'default')).sort();
      const count = (await query(stack.db.url, 'select count(*)::int as n from blueprints'))[0]!.n;
      const r = await upload('/api/blueprints/import', 'olivia', make());
      expect(r.status).toBe(400);
      expect(r.body.payload).toMatchObject({ code: 'UNSAFE_ZIP', reason });
      const p = await upload('/api/blueprints/import/preview', 'olivia', make());
      expect(p.status).toBe(200);
      expect(p.body.data).toMatchObject({ valid: false, reason });
      expect(readdirSync(path.join(root, 'default')).sort()).toEqual(before);
      expect((await query(stack.db.url, 'select count(*)::int as n from blueprints'))[0]!.n).toBe(count);
    });
  }

  it('previews a request without a file part as invalid and refuses the import 400', async () => {
    const form = new FormData();
    form.append('confirm_legacy_name_match', 'false');
    const p = await fetch(`${stack.url}/api/blueprints/import/preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bp.token('olivia')}` },
      body: form,
    });
    expect(p.status).toBe(200);
    expect(((await p.json()) as { data: unknown }).data).toMatchObject({ valid: false, reason: 'file_required' });
    const i = await fetch(`${stack.url}/api/blueprints/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bp.token('olivia')}` },
      body: form,
    });
    expect(i.status).toBe(400);
  });

  it('refuses a missing or invalid manifest', async () => {
    const none = await upload('/api/blueprints/import', 'olivia', buildZip([{ name: 'readme.md', data: 'x' }]));
    expect(none.status).toBe(400);
    expect(none.body.payload).toMatchObject({ code: 'INVALID_BLUEPRINT_ARCHIVE', reason: 'manifest_missing' });
    const bad = await upload(
      '/api/blueprints/import',
      'olivia',
      buildZip([{ name: 'blueprint_manifest.yaml', data: 'name: "../x"\n' }]),
    );
    expect(bad.body.payload).toMatchObject({ code: 'INVALID_BLUEPRINT_ARCHIVE', reason: 'manifest_invalid' });
    expect(await names('olivia')).not.toContain('attack');
  });

  it('refuses a 65 MiB upload with 413', async () => {
    const r = await upload('/api/blueprints/import', 'olivia', Buffer.alloc(65 * 1024 * 1024));
    expect(r.status).toBe(413);
    expect(r.body.error_type).toBe('payload_too_large');
  });
});

describe('delete', () => {
  it('needs manage access and removes the working copy, history and grants', async () => {
    const d = await api('GET', '/api/blueprints/churn', 'olivia');
    const id = d.body.data.blueprint_id as string;
    expect((await api('DELETE', '/api/blueprints/churn', 'rita')).status).toBe(403);
    expect((await api('DELETE', '/api/blueprints/churn', 'stranger-less')).status).toBe(401);
    const r = await api('DELETE', `/api/blueprints/churn?blueprint_id=${id}`, 'olivia');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      blueprint_name: 'churn',
      blueprint_id: id,
      deleted: true,
      outcome: 'deleted',
      mission_count: 0,
    });
    expect((await api('GET', '/api/blueprints/churn', 'olivia')).status).toBe(404);
    expect(existsSync(path.join(root, 'default', id))).toBe(false);
    expect(await query(stack.db.url, 'select * from blueprint_grants where blueprint_id = $1', [id])).toEqual([]);
  });
});
