/**
 * The pending rename of a remote-backed blueprint in virtual time: hourly backstop polls, the sync
 * signal that cuts a wait short, and the drop at the deadline. Stub activities count each check.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlueprintRenameCheck, BlueprintRenameInput } from '../../workflows/blueprint-rename-definitions.js';
import {
  BLUEPRINT_RENAME_POLL_SECONDS,
  BLUEPRINT_RENAME_SYNCED_SIGNAL,
  blueprintRenameWorkflowId,
} from '../../workflows/blueprint-rename-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker, timerSeconds, timersFired } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

/** Stubs whose check answers the given results in turn (the last one repeats). */
function renameStubs(...answers: BlueprintRenameCheck[]) {
  return recorded({
    blueprintRenameCheck: async () => (answers.length > 1 ? answers.shift() : answers[0]),
    blueprintRenameExpire: async () => undefined,
  });
}

async function input(blueprintId: string, hours: number): Promise<BlueprintRenameInput> {
  const now = await env.currentTimeMs();
  return {
    tenant: 't1',
    blueprintId,
    oldName: 'orders',
    newName: 'sales_orders',
    newPath: 'blueprints/sales_orders',
    deadlineMs: now + hours * 3600_000,
  };
}

describe('blueprintRenameWorkflow', () => {
  it('polls hourly while the sync has not seen the rename, then drops it at the deadline', async () => {
    const stubs = renameStubs({ status: 'waiting', reason: 'missions in flight' });
    const { worker, taskQueue } = await stubWorker(env, stubs.activities);
    const handle = await env.client.workflow.start('blueprintRenameWorkflow', {
      taskQueue,
      workflowId: blueprintRenameWorkflowId('bp_expire'),
      args: [await input('bp_expire', 3)],
    });
    expect(await worker.runUntil(handle.result())).toEqual({ status: 'expired', reason: 'missions in flight' });
    // Checks at 0 h, 1 h, 2 h and at the deadline (a little under 3 h after the start).
    expect(stubs.count('blueprintRenameCheck')).toBe(4);
    expect(stubs.count('blueprintRenameExpire')).toBe(1);
    const timers = await timerSeconds(handle);
    expect(timers.slice(0, 2)).toEqual([BLUEPRINT_RENAME_POLL_SECONDS, BLUEPRINT_RENAME_POLL_SECONDS]);
    expect(timers).toHaveLength(3);
    expect(timers[2]).toBeLessThanOrEqual(BLUEPRINT_RENAME_POLL_SECONDS);
  });

  it('applies the rename when a sync signals it, without waiting for the poll', async () => {
    const stubs = renameStubs(
      { status: 'waiting', reason: null },
      { status: 'applied', blueprint_name: 'sales_orders' },
    );
    const { worker, taskQueue } = await stubWorker(env, stubs.activities);
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('blueprintRenameWorkflow', {
        taskQueue,
        workflowId: blueprintRenameWorkflowId('bp_signal'),
        args: [await input('bp_signal', 24 * 30)],
      });
      await expect.poll(() => stubs.count('blueprintRenameCheck')).toBe(1);
      await handle.signal(BLUEPRINT_RENAME_SYNCED_SIGNAL);
      const r = await handle.result();
      expect(await timersFired(handle)).toBe(0);
      return r;
    });
    expect(result).toEqual({ status: 'applied', blueprint_name: 'sales_orders' });
    expect(stubs.count('blueprintRenameCheck')).toBe(2);
    expect(stubs.count('blueprintRenameExpire')).toBe(0);
  });

  it('ends at once when the blueprint or its pending rename is gone', async () => {
    const stubs = renameStubs({ status: 'gone' });
    const { worker, taskQueue } = await stubWorker(env, stubs.activities);
    const handle = await env.client.workflow.start('blueprintRenameWorkflow', {
      taskQueue,
      workflowId: blueprintRenameWorkflowId('bp_gone'),
      args: [await input('bp_gone', 24)],
    });
    expect(await worker.runUntil(handle.result())).toEqual({ status: 'gone' });
    expect(stubs.count('blueprintRenameCheck')).toBe(1);
    expect(stubs.count('blueprintRenameExpire')).toBe(0);
    expect(await timerSeconds(handle)).toEqual([]);
  });
});
