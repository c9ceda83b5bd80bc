/**
 * Hidden blueprints are purged once their missions have ended (issue 14): a blueprint deleted while
 * missions referenced it is hidden; when none of its missions is running or paused, the purge (the
 * workflow `blueprintHiddenPurgeWorkflow`, started by the Schedule `blueprint-hidden-purge`) removes
 * its row, versions and repository and keeps the missions' records. Missions are `projects` rows.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createBlueprintPurgeActivities } from '../../activities/blueprint-purge.js';
import { blueprintPurgeSchedule } from '../../shared/blueprints/purge-schedule.js';
import { ensureIntervalSchedule } from '../../shared/temporal/interval-schedule.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import type { Stack } from '../helpers/stack.js';
import { startTimeSkipping, uniqueTaskQueue } from '../helpers/temporal.js';
import { startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;
let root: string;

beforeAll(async () => {
  bp = await startBlueprintStack();
  ({ stack, root } = bp);
});
afterAll(async () => bp?.close());

const api = (method: string, p: string, body?: unknown) => bp.api(method, p, undefined, body);
const createBlueprint = (name: string) => bp.createBlueprint(name);
const insertMission = (name: string, blueprintId: string, status: string) =>
  bp.insertMission(name, blueprintId, status);
const rowOf = (id: string) => bp.blueprintRow(id);
const purge = () =>
  createBlueprintPurgeActivities({
    orm: stack.api.deps.orm,
    config: stack.config,
    log: stack.log,
  }).purgeHiddenBlueprints();

describe('purge of hidden blueprints', () => {
  it('keeps a hidden blueprint while a mission runs or is paused, purges it once they ended, keeps the mission records', async () => {
    const id = await createBlueprint('purge-me');
    // A saved version too: it goes with the blueprint.
    expect((await api('POST', '/api/blueprints/purge-me/versioning/enable')).status).toBe(200);
    expect((await api('POST', '/api/blueprints/purge-me/versioning/versions', {})).status).toBe(200);
    const running = await insertMission('purge-me', id, 'running');
    const paused = await insertMission('purge-me', id, 'paused');
    const done = await insertMission('purge-me', id, 'completed');
    const del = await api('DELETE', '/api/blueprints/purge-me');
    expect(del.body.data).toMatchObject({ outcome: 'hidden', mission_count: 3 });

    // A visible blueprint without missions and a hidden one with open missions are never purged.
    const visible = await createBlueprint('purge-visible');

    expect((await purge()).purged.map((p) => p.blueprint_id)).not.toContain(id);
    expect(await rowOf(id)).toEqual({ name: 'purge-me', hidden: true });

    await query(stack.db.url, `update projects set status = 'cancelled' where id = $1`, [running]);
    expect((await purge()).purged.map((p) => p.blueprint_id)).not.toContain(id); // still paused
    expect(await rowOf(id)).toEqual({ name: 'purge-me', hidden: true });

    await query(stack.db.url, `update projects set status = 'closed' where id = $1`, [paused]);
    const r = await purge();
    expect(r.purged).toContainEqual({ blueprint_id: id, tenant: 'default', name: 'purge-me' });
    expect(await rowOf(id)).toBeUndefined();
    expect(existsSync(path.join(root, 'default', id))).toBe(false);
    expect(
      (await query(stack.db.url, 'select count(*)::int as n from blueprint_versions where blueprint_id = $1', [id]))[0],
    ).toEqual({ n: 0 });
    // The missions' records stay.
    const kept = await query(
      stack.db.url,
      'select id, blueprint_name from projects where blueprint_id = $1 order by id',
      [id],
    );
    expect(kept.map((k) => (k as { id: string }).id).sort()).toEqual([running, paused, done].sort());
    // The name is free again; the visible blueprint is untouched; a repeat purges nothing more.
    expect(await rowOf(visible)).toEqual({ name: 'purge-visible', hidden: false });
    expect((await purge()).purged.map((p) => p.blueprint_id)).not.toContain(id);
    expect((await api('POST', '/api/blueprints/', { blueprint_name: 'purge-me' })).status).toBe(201);
  });

  it('ensures the hourly Schedule that starts the purge workflow (idempotent)', async () => {
    const client = stack.api.deps.temporal;
    const scheduleId = `blueprint-hidden-purge-${uniqueTaskQueue()}`;
    expect(await ensureIntervalSchedule(client, stack.config, blueprintPurgeSchedule(scheduleId))).toBe('created');
    expect(await ensureIntervalSchedule(client, stack.config, blueprintPurgeSchedule(scheduleId))).toBe('updated');
    const handle = client.schedule.getHandle(scheduleId);
    try {
      const d = await handle.describe();
      expect(d.action).toMatchObject({ type: 'startWorkflow', workflowType: 'blueprintHiddenPurgeWorkflow' });
      expect(d.spec.intervals?.[0]?.every).toBe(3_600_000);
    } finally {
      await handle.delete();
    }
  });
});

describe('blueprintHiddenPurgeWorkflow', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await startTimeSkipping();
  });
  afterAll(async () => env?.teardown());

  it('runs the purge activity once and answers what it purged', async () => {
    const taskQueue = uniqueTaskQueue();
    let calls = 0;
    const purged = [{ blueprint_id: 'bp_1', tenant: 't1', name: 'old' }];
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: { purgeHiddenBlueprints: async () => (calls++, { purged }) },
    });
    const handle = await env.client.workflow.start('blueprintHiddenPurgeWorkflow', {
      taskQueue,
      workflowId: 'blueprint-hidden-purge-run',
      args: [],
    });
    expect(await worker.runUntil(handle.result())).toEqual({ purged });
    expect(calls).toBe(1);
    await recordHistory('blueprint-hidden-purge', handle);
  });
});
