/**
 * Mission-aware rename and delete (spec, Blueprints: rename "rejects ... blueprints with in-flight
 * missions"; DELETE "permanently deletes a custom blueprint without missions; with missions it is
 * hidden instead"). Missions are simulated by inserting `projects` rows directly.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { Stack } from '../helpers/stack.js';
import { startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;
let root: string;

beforeAll(async () => {
  bp = await startBlueprintStack({ users: { root: ['admin'] } });
  ({ stack, root } = bp);
});
afterAll(async () => bp?.close());

const api = (method: string, p: string, body?: unknown) => bp.api(method, p, 'root', body);
const createBlueprint = (name: string) => bp.createBlueprint(name);
const insertMission = (name: string, blueprintId: string, status: string) =>
  bp.insertMission(name, blueprintId, status);

const inventory = async () =>
  ((await api('GET', '/api/blueprints/')).body.data.blueprints as Array<{ blueprint_name: string }>).map(
    (b) => b.blueprint_name,
  );

const rowOf = (id: string) => bp.blueprintRow(id);

describe('rename with missions', () => {
  it('refuses a blueprint with a running mission (409 BLUEPRINT_HAS_ACTIVE_MISSIONS) and changes nothing', async () => {
    const id = await createBlueprint('running-bp');
    await insertMission('running-bp', id, 'running');
    const r = await api('POST', '/api/blueprints/running-bp/rename', { new_name: 'running-bp-2' });
    expect(r.status).toBe(409);
    expect(r.body.error_type).toBe('conflict');
    expect(r.body.payload).toMatchObject({ code: 'BLUEPRINT_HAS_ACTIVE_MISSIONS', active_missions: 1 });
    expect(await rowOf(id)).toEqual({ name: 'running-bp', hidden: false });
    expect((await api('GET', '/api/blueprints/running-bp')).body.data.manifest.name).toBe('running-bp');
    expect((await api('GET', '/api/blueprints/running-bp/history')).body.data.commits).toHaveLength(1);
  });

  it('refuses a blueprint with a paused mission', async () => {
    const id = await createBlueprint('paused-bp');
    await insertMission('paused-bp', id, 'completed');
    await insertMission('paused-bp', id, 'paused');
    const r = await api('POST', '/api/blueprints/paused-bp/rename', { new_name: 'paused-bp-2' });
    expect(r.status).toBe(409);
    expect(r.body.payload).toMatchObject({ code: 'BLUEPRINT_HAS_ACTIVE_MISSIONS', active_missions: 1 });
    expect(await rowOf(id)).toEqual({ name: 'paused-bp', hidden: false });
  });

  it('allows a rename when the missions have finished (completed, cancelled, closed)', async () => {
    const id = await createBlueprint('done-bp');
    for (const s of ['completed', 'cancelled', 'closed']) await insertMission('done-bp', id, s);
    const r = await api('POST', '/api/blueprints/done-bp/rename', { new_name: 'done-bp-renamed' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ blueprint_id: id, blueprint_name: 'done-bp-renamed', status: 'renamed' });
    expect(await rowOf(id)).toEqual({ name: 'done-bp-renamed', hidden: false });
  });

  it("does not count another blueprint's running missions", async () => {
    const other = await createBlueprint('other-bp');
    await insertMission('other-bp', other, 'running');
    const id = await createBlueprint('free-bp');
    const r = await api('POST', '/api/blueprints/free-bp/rename', { new_name: 'free-bp-renamed' });
    expect(r.status).toBe(200);
    expect(await rowOf(id)).toEqual({ name: 'free-bp-renamed', hidden: false });
  });
});

describe('delete with missions', () => {
  it('hides a blueprint that a (finished) mission references instead of deleting it', async () => {
    const id = await createBlueprint('hidden-bp');
    const mission = await insertMission('hidden-bp', id, 'completed');
    const r = await api('DELETE', '/api/blueprints/hidden-bp');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      blueprint_name: 'hidden-bp',
      blueprint_id: id,
      deleted: false,
      outcome: 'hidden',
      mission_count: 1,
    });
    // The row and working copy stay (the mission still resolves it) ...
    expect(await rowOf(id)).toEqual({ name: 'hidden-bp', hidden: true });
    expect(existsSync(path.join(root, 'default', id, '.git'))).toBe(true);
    // ... but it is gone from the inventory and the blueprint routes.
    expect(await inventory()).not.toContain('hidden-bp');
    expect((await api('GET', '/api/blueprints/hidden-bp')).status).toBe(404);
    expect((await api('GET', '/api/blueprints/hidden-bp/files/blueprint_manifest.yaml')).status).toBe(404);
    expect((await api('POST', '/api/blueprints/hidden-bp/rename', { new_name: 'hidden-bp-2' })).status).toBe(404);
    expect((await api('DELETE', '/api/blueprints/hidden-bp')).status).toBe(404);
    // A file read naming one of its missions still reaches it; another mission id does not.
    const f = await api('GET', `/api/blueprints/hidden-bp/files/blueprint_manifest.yaml?mission_id=${mission}`);
    expect(f.status).toBe(200);
    const other = await api(
      'GET',
      `/api/blueprints/hidden-bp/files/blueprint_manifest.yaml?mission_id=prj_${'f'.repeat(32)}`,
    );
    expect(other.status).toBe(404);
    // No new mission starts from it.
    const start = await api('POST', '/api/projects', { blueprint_name: 'hidden-bp' });
    expect(start.status).toBe(404);
    expect(
      (await query(stack.db.url, 'select count(*)::int as n from projects where blueprint_id = $1', [id]))[0],
    ).toEqual({ n: 1 });
    // Its name stays taken while it is hidden.
    const again = await api('POST', '/api/blueprints/', { blueprint_name: 'hidden-bp' });
    expect(again.status).toBe(409);
    expect(again.body.payload.code).toBe('BLUEPRINT_NAME_TAKEN');
    expect(await rowOf(id)).toEqual({ name: 'hidden-bp', hidden: true });
  });

  it('hides a blueprint with a running mission too', async () => {
    const id = await createBlueprint('busy-bp');
    await insertMission('busy-bp', id, 'running');
    const r = await api('DELETE', `/api/blueprints/busy-bp?blueprint_id=${id}`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ deleted: false, outcome: 'hidden', mission_count: 1 });
    expect(await rowOf(id)).toEqual({ name: 'busy-bp', hidden: true });
  });

  it('deletes a blueprint without missions permanently', async () => {
    const id = await createBlueprint('gone-bp');
    const r = await api('DELETE', '/api/blueprints/gone-bp');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      blueprint_name: 'gone-bp',
      blueprint_id: id,
      deleted: true,
      outcome: 'deleted',
      mission_count: 0,
    });
    expect(await rowOf(id)).toBeUndefined();
    expect(existsSync(path.join(root, 'default', id))).toBe(false);
    expect(await inventory()).not.toContain('gone-bp');
    expect((await api('POST', '/api/blueprints/', { blueprint_name: 'gone-bp' })).status).toBe(201);
  });
});
