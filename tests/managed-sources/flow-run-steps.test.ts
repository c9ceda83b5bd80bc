/**
 * The flow step activity against real PostgreSQL (issue 31, item 3), with a toolbox that counts the
 * calls: an outcome is recorded by the attempt that ran the step, so a re-attempt (Temporal retries
 * an activity whose worker died after it recorded) answers that outcome and calls nothing; a step
 * left `running` by a dead worker runs again under the same idempotency key; a step whose run was
 * cancelled runs nothing, and a late outcome is not written over `cancelled`.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlowActivities } from '../../activities/flows.js';
import type { ActivityDeps } from '../../activities/deps.js';
import type { AppConfig } from '../../shared/config.js';
import { initOrm } from '../../shared/db/orm.js';
import type { FlowRunStatus } from '../../shared/flows/definition.js';
import { recordStepOutcome } from '../../shared/flows/store.js';
import { createLogger } from '../../shared/log.js';
import type { Principal } from '../../shared/auth/principal.js';
import { createTestDatabase, query, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
let orm: MikroORM;
const calls: Array<{ name: string; args: unknown; principal: Principal; key: string }> = [];
let activities: ReturnType<typeof createFlowActivities>;
const RUN = 'frun_00000000000000000000000000000001';

const step = (index: number, status = 'pending', attempts = 0) =>
  query(
    db.url,
    `insert into flow_run_steps (run_id, step_index, name, kind, definition, run_concurrently, status, attempts)
     values ($1, $2, $3, 'tool', $4, false, $5, $6)`,
    [RUN, index, `s${index}`, JSON.stringify({ tool: 'echo_tool', arguments: { n: index } }), status, attempts],
  );
const row = async (index: number) =>
  (
    await query<{ status: string; attempts: number; result: unknown }>(
      db.url,
      'select status, attempts, result from flow_run_steps where run_id = $1 and step_index = $2',
      [RUN, index],
    )
  )[0]!;
const finish = (status: FlowRunStatus) =>
  new MockActivityEnvironment().run(activities.flowRunFinish, { runId: RUN, status });
const runStep = (stepIndex: number) =>
  new MockActivityEnvironment().run(activities.flowRunStep, { runId: RUN, stepIndex });

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await initOrm({ clientUrl: db.url, poolMax: 2 });
  const deps = {
    orm,
    config: {} as AppConfig,
    log: createLogger({ level: 'error', sink: () => {} }),
    toolbox: {
      specs: () => [],
      invoke: async (name: string, args: unknown, principal: Principal, key: string) => {
        calls.push({ name, args, principal, key });
        return { ok: true, result: { echoed: args } };
      },
    },
  } as unknown as ActivityDeps;
  activities = createFlowActivities(deps);
  await query(
    db.url,
    `insert into flow_runs (run_id, tenant, source_id, flow_name, commit_sha, content_hash, status, started_by,
       started_by_roles, created_at)
     values ($1, 't1', 'src_0000000000000001', 'f', 'c', 'h', 'running', 'dev', '["developer"]', now())`,
    [RUN],
  );
  await step(0);
  await step(1, 'running', 1);
  await step(2, 'running', 1);
});
afterAll(async () => {
  await orm?.close();
  await db?.drop();
});

describe('the flow step activity', () => {
  it('runs a step once as its starter and answers the recorded outcome on a re-attempt', async () => {
    expect(await runStep(0)).toBe('succeeded');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      name: 'echo_tool',
      args: { n: 0 },
      key: `flow-run/${RUN}/step/0`,
      principal: { kind: 'person', id: 'dev', tenant: 't1', roles: ['developer'] },
    });
    expect(calls[0]!.principal.permissions.has('manage_flows')).toBe(true);
    expect(await row(0)).toEqual({ status: 'succeeded', attempts: 1, result: { echoed: { n: 0 } } });

    expect(await runStep(0)).toBe('succeeded');
    expect(calls).toHaveLength(1);
    expect((await row(0)).attempts).toBe(1);
  });

  it('runs again a step a dead worker left running, under the same idempotency key', async () => {
    expect(await runStep(1)).toBe('succeeded');
    expect(calls.map((c) => c.key)).toEqual([`flow-run/${RUN}/step/0`, `flow-run/${RUN}/step/1`]);
    expect(await row(1)).toMatchObject({ status: 'succeeded', attempts: 2 });
  });

  it('runs nothing once the run is cancelled, and keeps `cancelled` over a late outcome', async () => {
    await finish('cancelled');
    expect(await row(2)).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(await runStep(2)).toBe('cancelled');
    expect(calls).toHaveLength(2);
    const late = await recordStepOutcome(orm.em.fork(), { runId: RUN, stepIndex: 2 }, { ok: true, result: 'late' });
    expect(late).toBe('cancelled');
    expect(await row(2)).toMatchObject({ status: 'cancelled', result: null });
    // A second finish changes nothing.
    const again = await finish('succeeded');
    expect(again).toBe('cancelled');
  });
});
