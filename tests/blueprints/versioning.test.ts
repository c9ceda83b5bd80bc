import fs from 'node:fs';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import git from 'isomorphic-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { buildDeps, startApi } from '../../api/server.js';
import { VersionRestorer } from '../../shared/blueprints/versioning.js';
import { query } from '../helpers/db.js';
import type { Stack } from '../helpers/stack.js';
import { zip as buildZip } from '../helpers/zip.js';
import { readZip, startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;
let root: string;

beforeAll(async () => {
  bp = await startBlueprintStack({
    users: { root: ['admin'], olivia: ['member'], sam: ['member'], rita: ['reviewer'], eve: ['bp-editors'] },
    customRoles: [{ name: 'bp-editors' }],
  });
  ({ stack, root } = bp);
});
afterAll(async () => bp?.close());

const api = (method: string, p: string, who: string, body?: unknown) => bp.api(method, p, who, body);
const upload = (p: string, who: string, archive: Buffer, fields?: Record<string, string>) =>
  bp.upload(p, who, archive, fields);

async function download(p: string, who: string): Promise<Buffer> {
  const res = await bp.download(p, who);
  expect(res.status).toBe(200);
  return res.bytes;
}

const v = (name: string) => `/api/blueprints/${name}/versioning`;
const summaryOf = async (name: string, who = 'olivia') => {
  const r = await api('GET', `${v(name)}/summary`, who);
  expect(r.status).toBe(200);
  return r.body.data;
};
const messages = async (name: string) =>
  ((await api('GET', `/api/blueprints/${name}/history`, 'olivia')).body.data.commits as Array<{ message: string }>).map(
    (c) => c.message,
  );
const count = async (sql: string, params: unknown[] = []) =>
  Number((await query<{ n: string }>(stack.db.url, sql, params))[0]!.n);

const createBlueprint = (name: string, who = 'olivia') =>
  bp.createBlueprint(name, {
    who,
    short_description: 'first',
    phases: [{ id: 'p1', name: 'Phase one', goal: 'Collect', skills: [], prompts: [], files: [] }],
  });

describe('versioned mode: enable → save → promote → restore', () => {
  let id: string;
  beforeAll(async () => {
    id = await createBlueprint('ver-flow');
  });

  it('refuses versions, promote and restore while standard; the summary says standard', async () => {
    const s = await summaryOf('ver-flow');
    expect(s).toMatchObject({ mode: 'standard', enabled_at: null, versions: [], production: null });
    expect(s.working_copy.dirty_since_version).toBe(true);
    for (const [p, body] of [
      ['versions', {}],
      ['promote', { version_number: 1 }],
      ['restore', { version_number: 1 }],
    ] as const) {
      const r = await api('POST', `${v('ver-flow')}/${p}`, 'olivia', body);
      expect(r.status).toBe(409);
      expect(r.body.error_type).toBe('conflict');
      expect(r.body.payload.code).toBe('BLUEPRINT_NOT_VERSIONED');
    }
    expect(await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id])).toBe(0);
  });

  it('enables once (idempotent), saves immutable versions, answers no_change for identical content', async () => {
    const e = await api('POST', `${v('ver-flow')}/enable`, 'olivia');
    expect(e.status).toBe(200);
    expect(e.body.data.changed).toBe(true);
    expect(e.body.data.summary.mode).toBe('versioned');
    expect(e.body.data.summary.enabled_by).toBe('olivia');
    const again = await api('POST', `${v('ver-flow')}/enable`, 'olivia');
    expect(again.body.data.changed).toBe(false);

    const s1 = await api('POST', `${v('ver-flow')}/versions`, 'olivia', { label: 'first cut', note: 'n1' });
    expect(s1.status).toBe(200);
    expect(s1.body.data.no_change).toBe(false);
    expect(s1.body.data.version).toMatchObject({
      version_number: 1,
      tag: 'version/1',
      label: 'first cut',
      note: 'n1',
      source: 'working_copy',
      created_by: 'olivia',
      is_production: false,
    });
    const same = await api('POST', `${v('ver-flow')}/versions`, 'olivia', {});
    expect(same.body.data.no_change).toBe(true);
    expect(same.body.data.version.version_id).toBe(s1.body.data.version.version_id);

    const upd = await api('PATCH', '/api/blueprints/ver-flow', 'olivia', { short_description: 'second' });
    expect(upd.status).toBe(200);
    expect((await summaryOf('ver-flow')).working_copy.dirty_since_version).toBe(true);
    const s2 = await api('POST', `${v('ver-flow')}/versions`, 'olivia', { label: 'second cut' });
    expect(s2.body.data.version.version_number).toBe(2);

    const s = await summaryOf('ver-flow');
    expect(s.versions.map((x: { version_number: number }) => x.version_number)).toEqual([1, 2]);
    expect(s.working_copy).toMatchObject({ latest_version_number: 2, dirty_since_version: false });
    expect(s.working_copy.fingerprint).toBe(s.versions[1].fingerprint);
    expect(s.versions[0].fingerprint).not.toBe(s.versions[1].fingerprint);
    // Each version is a tagged commit in the blueprint's repository and rows in PostgreSQL.
    const dir = path.join(root, 'default', id);
    expect(await git.resolveRef({ fs, dir, ref: 'refs/tags/version/1' })).toBe(s.versions[0].commit_sha);
    expect(await git.resolveRef({ fs, dir, ref: 'refs/tags/version/2' })).toBe(s.versions[1].commit_sha);
    expect(await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id])).toBe(2);
    expect(
      await count(
        `select count(*) n from blueprint_version_files f join blueprint_versions v using (version_id) where v.blueprint_id = $1`,
        [id],
      ),
    ).toBe(2);
  });

  it('promotes one production version, keeps the promotion history, no_change on the current one', async () => {
    const p1 = await api('POST', `${v('ver-flow')}/promote`, 'olivia', { version_number: 1 });
    expect(p1.status).toBe(200);
    expect(p1.body.data).toMatchObject({ no_change: false, previous_version_number: null });
    const dup = await api('POST', `${v('ver-flow')}/promote`, 'olivia', { version_number: 1 });
    expect(dup.body.data.no_change).toBe(true);
    const p2 = await api('POST', `${v('ver-flow')}/promote`, 'olivia', { version_number: 2 });
    expect(p2.body.data).toMatchObject({ no_change: false, previous_version_number: 1 });
    const s = await summaryOf('ver-flow');
    expect(s.production).toMatchObject({ version_number: 2, promoted_by: 'olivia' });
    expect(s.versions.filter((x: { is_production: boolean }) => x.is_production)).toHaveLength(1);
    expect(s.promotion_history).toMatchObject([
      { version_number: 1, previous_version_number: null, via: 'promote' },
      { version_number: 2, previous_version_number: 1, via: 'promote' },
    ]);
  });

  it('restores a version into the working copy as a new commit; versions and production stay', async () => {
    const r = await api('POST', `${v('ver-flow')}/restore`, 'olivia', { version_number: 1 });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ restored_version_number: 1, changed_files: true });
    const d = await api('GET', '/api/blueprints/ver-flow', 'olivia');
    expect(d.body.data.short_description).toBe('first');
    expect(d.body.data.mode).toBe('versioned');
    const s = await summaryOf('ver-flow');
    expect(s.working_copy.commit_sha).toBe(r.body.data.commit_sha);
    expect(s.working_copy.fingerprint).toBe(s.versions[0].fingerprint);
    expect(s.working_copy.dirty_since_version).toBe(true);
    expect(s.production.version_number).toBe(2);
    expect(s.versions).toHaveLength(2);
    expect(await messages('ver-flow')).toEqual([
      'Restore version 1 of ver-flow into the working copy',
      'Promote version 2 of ver-flow to production',
      'Promote version 1 of ver-flow to production',
      'Save version 2 of ver-flow: second cut',
      'Update short_description of ver-flow',
      'Save version 1 of ver-flow: first cut',
      'Enable versioned mode for ver-flow',
      'Create blueprint ver-flow',
    ]);
    const inv = await api('GET', '/api/blueprints/', 'olivia');
    expect(inv.body.data.blueprints.find((b: { blueprint_name: string }) => b.blueprint_name === 'ver-flow').mode).toBe(
      'versioned',
    );
  });

  it('refuses unknown versions (404), invalid numbers (400), defaults (409) and missing access', async () => {
    for (const p of ['promote', 'restore']) {
      const r = await api('POST', `${v('ver-flow')}/${p}`, 'olivia', { version_number: 99 });
      expect(r.status).toBe(404);
      expect(r.body.error_type).toBe('not_found');
      expect((await api('POST', `${v('ver-flow')}/${p}`, 'olivia', { version_number: 0 })).status).toBe(400);
    }
    const def = await api('POST', `${v('data-quality-audit')}/enable`, 'olivia');
    expect(def.status).toBe(409);
    expect(def.body.payload.code).toBe('DEFAULT_BLUEPRINT');
    expect((await api('POST', `${v('data-quality-audit')}/versions`, 'olivia', {})).status).toBe(409);
    const ds = await summaryOf('data-quality-audit');
    expect(ds).toMatchObject({ mode: 'standard', working_copy: null });
    const mismatch = await api('GET', `${v('ver-flow')}/summary?blueprint_id=bp_0000000000000000`, 'olivia');
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.payload.code).toBe('BLUEPRINT_IDENTITY_MISMATCH');

    // A stranger cannot see it; a viewer reads the summary only; an editor saves and restores but
    // neither promotes nor enables.
    expect((await api('GET', `${v('ver-flow')}/summary`, 'sam')).status).toBe(404);
    expect(
      (await api('POST', '/api/blueprints/ver-flow/access/grant', 'olivia', { role_name: 'reviewer', action: 'view' }))
        .status,
    ).toBe(200);
    expect(
      (
        await api('POST', '/api/blueprints/ver-flow/access/grant', 'olivia', {
          role_name: 'bp-editors',
          action: 'edit',
        })
      ).status,
    ).toBe(200);
    expect((await api('GET', `${v('ver-flow')}/summary`, 'rita')).status).toBe(200);
    const before = await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id]);
    const viewerSave = await api('POST', `${v('ver-flow')}/versions`, 'rita', {});
    expect(viewerSave.status).toBe(403);
    expect(viewerSave.body.error_type).toBe('forbidden');
    expect((await api('POST', `${v('ver-flow')}/restore`, 'rita', { version_number: 2 })).status).toBe(403);
    expect((await api('POST', `${v('ver-flow')}/promote`, 'eve', { version_number: 1 })).status).toBe(403);
    expect((await api('POST', `${v('ver-flow')}/enable`, 'eve')).status).toBe(403);
    expect(await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id])).toBe(before);
    const eveSave = await api('POST', `${v('ver-flow')}/versions`, 'eve', { label: 'by eve' });
    expect(eveSave.status).toBe(200);
    expect(eveSave.body.data.version).toMatchObject({ version_number: 3, created_by: 'eve' });
    expect((await api('POST', `${v('ver-flow')}/restore`, 'eve', { version_number: 2 })).status).toBe(200);
    expect((await summaryOf('ver-flow')).production.version_number).toBe(2);
  });

  it('re-creates a deleted version tag from PostgreSQL on the next versioning call', async () => {
    const dir = path.join(root, 'default', id);
    const before = await summaryOf('ver-flow');
    await git.deleteRef({ fs, dir, ref: 'refs/tags/version/1' });
    // The commit still exists, so the tag comes back naming the same commit.
    const s = await summaryOf('ver-flow');
    expect(await git.resolveRef({ fs, dir, ref: 'refs/tags/version/1' })).toBe(before.versions[0].commit_sha);
    expect(s.versions).toEqual(before.versions);
  });
});

describe('export sidecar and create_version import', () => {
  let id: string;
  let exported: Buffer;
  beforeAll(async () => {
    id = await createBlueprint('ver-import');
    expect((await api('POST', `${v('ver-import')}/enable`, 'olivia')).status).toBe(200);
    expect((await api('POST', `${v('ver-import')}/versions`, 'olivia', {})).status).toBe(200);
    expect((await api('POST', `${v('ver-import')}/promote`, 'olivia', { version_number: 1 })).status).toBe(200);
    expect((await api('PATCH', '/api/blueprints/ver-import', 'olivia', { short_description: 'edited' })).status).toBe(
      200,
    );
    exported = await download('/api/blueprints/ver-import/export', 'olivia');
    await api('POST', '/api/blueprints/ver-import/access/grant', 'olivia', { role_name: 'bp-editors', action: 'edit' });
  });

  it('the export sidecar carries the versioning block', async () => {
    const files = await readZip(exported);
    const side = parse(files.get('blueprint_export_manifest.yaml')!.toString());
    expect(side.manifest_version).toBe(2);
    expect(side.blueprint_id).toBe(id);
    const s = await summaryOf('ver-import');
    expect(side.versioning).toMatchObject({
      mode: 'versioned',
      production: { version_number: 1, version_id: s.versions[0].version_id },
      working_copy: { fingerprint: side.working_copy_fingerprint, dirty_since_version: true, latest_version_number: 1 },
      versions_not_included: [1],
      includes_all_saved_versions: false,
    });
    expect(side.versioning.versions).toHaveLength(1);
    expect(side.versioning.versions[0]).toMatchObject({ version_number: 1, fingerprint: s.versions[0].fingerprint });
    expect(side.versioning.versions[0].snapshot_root).toMatch(/^[0-9a-f]{40}$/);
    // A standard blueprint's sidecar has no versioning block.
    await createBlueprint('ver-standard');
    const plain = await readZip(await download('/api/blueprints/ver-standard/export', 'olivia'));
    expect(parse(plain.get('blueprint_export_manifest.yaml')!.toString()).versioning).toBeUndefined();
  });

  it('preview recommends create_version for a versioned editable target', async () => {
    const p = await upload('/api/blueprints/import/preview', 'olivia', exported);
    expect(p.status).toBe(200);
    expect(p.body.data.matching_local_target).toMatchObject({ blueprint_id: id, mode: 'versioned' });
    expect(p.body.data.allowed_collision_strategies).toContain('create_version');
    expect(p.body.data.recommended_strategy).toBe('create_version');
  });

  it('appends one version without touching working copy, history or production; identical → no_change', async () => {
    const before = await summaryOf('ver-import');
    const history = await messages('ver-import');
    const r = await upload('/api/blueprints/import', 'olivia', exported, { collision_strategy: 'create_version' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      import_action: 'version_created',
      blueprint_name: 'ver-import',
      blueprint_id: id,
      created_version_number: 2,
      promoted: false,
      no_change: false,
    });
    expect(r.body.data.created_version_id).toMatch(/^bpv_/);
    const after = await summaryOf('ver-import');
    expect(after.versions).toHaveLength(2);
    expect(after.versions[1]).toMatchObject({ source: 'import', version_id: r.body.data.created_version_id });
    // The archive was the working copy, so the imported version has its fingerprint.
    expect(after.versions[1].fingerprint).toBe(before.working_copy.fingerprint);
    expect(after.working_copy.commit_sha).toBe(before.working_copy.commit_sha);
    expect(after.production.version_number).toBe(1);
    expect(await messages('ver-import')).toEqual(history);
    const dir = path.join(root, 'default', id);
    expect(await git.resolveRef({ fs, dir, ref: 'refs/tags/version/2' })).toBe(after.versions[1].commit_sha);

    const again = await upload('/api/blueprints/import', 'olivia', exported, { collision_strategy: 'create_version' });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({
      no_change: true,
      created_version_number: null,
      created_version_id: null,
      promoted: false,
    });
    expect((await summaryOf('ver-import')).versions).toHaveLength(2);
  });

  it('promote_imported_version needs manage access (403, nothing written) and sets production', async () => {
    const files = await readZip(exported);
    const manifest = parse(files.get('blueprint_manifest.yaml')!.toString());
    manifest.blueprint.short_description = 'from another install';
    const changed = buildZip([
      { name: 'blueprint_manifest.yaml', data: stringify(manifest) },
      { name: 'notes/readme.md', data: '# notes\n' },
      { name: 'blueprint_export_manifest.yaml', data: files.get('blueprint_export_manifest.yaml')! },
    ]);
    const versions = await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id]);
    const denied = await upload('/api/blueprints/import', 'eve', changed, {
      collision_strategy: 'create_version',
      promote_imported_version: 'true',
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error_type).toBe('forbidden');
    expect(await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id])).toBe(versions);
    // Without promotion the editor may append a version.
    const byEditor = await upload('/api/blueprints/import', 'eve', changed, { collision_strategy: 'create_version' });
    expect(byEditor.body.data).toMatchObject({ created_version_number: 3, promoted: false });
    // The owner promotes while importing; identical content promotes the matching latest version.
    const promoted = await upload('/api/blueprints/import', 'olivia', changed, {
      collision_strategy: 'create_version',
      promote_imported_version: 'true',
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body.data).toMatchObject({ no_change: true, promoted: true });
    const s = await summaryOf('ver-import');
    expect(s.production.version_number).toBe(3);
    expect(s.promotion_history.at(-1)).toMatchObject({ version_number: 3, previous_version_number: 1, via: 'import' });
    manifest.blueprint.short_description = 'fourth';
    const fourth = buildZip([
      { name: 'blueprint_manifest.yaml', data: stringify(manifest) },
      { name: 'blueprint_export_manifest.yaml', data: files.get('blueprint_export_manifest.yaml')! },
    ]);
    const p4 = await upload('/api/blueprints/import', 'olivia', fourth, {
      collision_strategy: 'create_version',
      promote_imported_version: 'true',
    });
    expect(p4.body.data).toMatchObject({ created_version_number: 4, promoted: true, no_change: false });
    expect((await summaryOf('ver-import')).production.version_number).toBe(4);
    // The stored version keeps the destination's owner and name.
    const bytes = await api('GET', '/api/blueprints/ver-import', 'olivia');
    expect(bytes.body.data.blueprint.created_by).toBe('olivia');
  });

  it('legacy exports need confirm_legacy_name_match; non-unique, default and standard targets are refused', async () => {
    const files = await readZip(exported);
    const legacy = buildZip([{ name: 'blueprint_manifest.yaml', data: files.get('blueprint_manifest.yaml')! }]);
    const versions = await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id]);
    const l = await upload('/api/blueprints/import', 'olivia', legacy, { collision_strategy: 'create_version' });
    expect(l.status).toBe(409);
    expect(l.body.payload.code).toBe('LEGACY_BLUEPRINT_CONFIRMATION_REQUIRED');
    expect(await count(`select count(*) n from blueprint_versions where blueprint_id = $1`, [id])).toBe(versions);
    const ok = await upload('/api/blueprints/import', 'olivia', legacy, {
      collision_strategy: 'create_version',
      confirm_legacy_name_match: 'true',
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data.blueprint_id).toBe(id);
    expect(ok.body.data.created_version_number).toBe(versions + 1);

    const side = parse(files.get('blueprint_export_manifest.yaml')!.toString());
    side.blueprint_id = 'bp_ffffffffffffffff';
    const foreign = buildZip([
      { name: 'blueprint_manifest.yaml', data: files.get('blueprint_manifest.yaml')! },
      { name: 'blueprint_export_manifest.yaml', data: stringify(side) },
    ]);
    const nf = await upload('/api/blueprints/import', 'olivia', foreign, { collision_strategy: 'create_version' });
    expect(nf.status).toBe(409);
    expect(nf.body.payload.code).toBe('BLUEPRINT_VERSION_TARGET_NOT_UNIQUE');
    // A viewer-only caller has no editable target either.
    const stranger = await upload('/api/blueprints/import', 'sam', exported, { collision_strategy: 'create_version' });
    expect(stranger.status).toBe(409);
    expect(stranger.body.payload.code).toBe('BLUEPRINT_VERSION_TARGET_NOT_UNIQUE');
    const def = buildZip([{ name: 'blueprint_manifest.yaml', data: 'schema_version: 1\nname: data-quality-audit\n' }]);
    const d = await upload('/api/blueprints/import', 'olivia', def, {
      collision_strategy: 'create_version',
      confirm_legacy_name_match: 'true',
    });
    expect(d.status).toBe(409);
    expect(d.body.payload.code).toBe('BLUEPRINT_VERSION_TARGET_NOT_UNIQUE');
    // A standard destination is not enabled implicitly.
    const plain = await readZip(await download('/api/blueprints/ver-standard/export', 'olivia'));
    const std = await upload(
      '/api/blueprints/import',
      'olivia',
      buildZip([...plain].map(([name, data]) => ({ name, data }))),
      { collision_strategy: 'create_version' },
    );
    expect(std.status).toBe(409);
    expect(std.body.payload.code).toBe('BLUEPRINT_NOT_VERSIONED');
  });

  it('deleting a versioned blueprint removes its versions, promotion history, production and blobs', async () => {
    const del = await api('DELETE', '/api/blueprints/ver-import', 'olivia');
    expect(del.status).toBe(200);
    for (const table of ['blueprint_versioning', 'blueprint_versions', 'blueprint_promotions'])
      expect(await count(`select count(*) n from ${table} where blueprint_id = $1`, [id])).toBe(0);
    expect(
      await count(
        `select count(*) n from blueprint_blobs b where not exists (select 1 from blueprint_version_files f where f.blob_sha256 = b.sha256)`,
      ),
    ).toBe(0);
    expect(existsSync(path.join(root, 'default', id))).toBe(false);
    expect((await api('GET', `${v('ver-import')}/summary`, 'olivia')).status).toBe(404);
  });
});

describe('saved versions survive a lost repository across a restart', () => {
  it('answers a retryable 503 while restoring, then the same versions', async () => {
    const id = await createBlueprint('ver-restart');
    expect((await api('POST', `${v('ver-restart')}/enable`, 'olivia')).status).toBe(200);
    expect((await api('POST', `${v('ver-restart')}/versions`, 'olivia', { label: 'one' })).status).toBe(200);
    await api('PATCH', '/api/blueprints/ver-restart', 'olivia', { short_description: 'two' });
    expect((await api('POST', `${v('ver-restart')}/versions`, 'olivia', { label: 'two' })).status).toBe(200);
    expect((await api('POST', `${v('ver-restart')}/promote`, 'olivia', { version_number: 1 })).status).toBe(200);
    const before = await summaryOf('ver-restart');

    // The repository volume is lost; a fresh API process starts with its restore pass held at a gate.
    await rm(path.join(root, 'default', id), { recursive: true, force: true });
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const deps = await buildDeps(stack.config, stack.log);
    const restorer = new VersionRestorer({ gate: () => gate });
    deps.blueprintVersions = restorer;
    const api2 = await startApi(stack.config, stack.log, deps);
    bp.url = api2.url;
    try {
      const busy = await api('GET', `${v('ver-restart')}/summary`, 'olivia');
      expect(busy.status).toBe(503);
      expect(busy.body.error_type).toBe('service_unavailable');
      expect(busy.body.payload).toMatchObject({ code: 'BLUEPRINT_VERSIONS_RESTORING', retryable: true });
      expect(Number(busy.headers.get('retry-after'))).toBeGreaterThan(0);
      const save = await api('POST', `${v('ver-restart')}/versions`, 'olivia', {});
      expect(save.status).toBe(503);
      // Blueprints that are not versioned are not held.
      expect((await api('GET', `${v('ver-standard')}/summary`, 'olivia')).status).toBe(200);

      open();
      await restorer.finished;
      expect(restorer.restoredCount).toBe(2);
      const after = await summaryOf('ver-restart');
      expect(
        after.versions.map((x: Record<string, unknown>) => [x.version_number, x.version_id, x.fingerprint, x.label]),
      ).toEqual(
        before.versions.map((x: Record<string, unknown>) => [x.version_number, x.version_id, x.fingerprint, x.label]),
      );
      expect(after.production).toMatchObject({ version_number: 1 });
      expect(after.promotion_history).toEqual(before.promotion_history);
      // The working copy is the latest saved version again, and the history says so.
      expect(after.working_copy).toMatchObject({ dirty_since_version: false, latest_version_number: 2 });
      const d = await api('GET', '/api/blueprints/ver-restart', 'olivia');
      expect(d.body.data.short_description).toBe('two');
      const h = await messages('ver-restart');
      expect(h[0]).toBe('Restore the working copy of ver-restart from saved version 2 (its storage was lost)');
      const dir = path.join(root, 'default', id);
      for (const x of after.versions)
        expect(await git.resolveRef({ fs, dir, ref: `refs/tags/version/${x.version_number}` })).toBe(x.commit_sha);
      // Restoring version 1 works from the restored repository.
      const r = await api('POST', `${v('ver-restart')}/restore`, 'olivia', { version_number: 1 });
      expect(r.status).toBe(200);
      expect((await api('GET', '/api/blueprints/ver-restart', 'olivia')).body.data.short_description).toBe('first');
    } finally {
      bp.url = stack.url;
      await api2.close();
      await deps.orm.close();
      await deps.temporalConnection.close();
    }
  });
});
