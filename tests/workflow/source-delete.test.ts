/**
 * Deletion of a managed source with stub activities, in virtual time: the cleanup of what it imported
 * retried with backoff until it succeeds, and only then the row removed.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceDeleteInput } from '../../workflows/managed-source-lifecycle-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

/** Stubs: the cleanup fails `failures` times, then removes two agents and a role; the removal is recorded in order. */
function deleteStubs(failures: number) {
  const order: string[] = [];
  let failed = 0;
  const stubs = recorded({
    managedDeleteCleanup: async () => {
      order.push('cleanup');
      if (failed++ < failures) throw new Error('agent store unavailable');
      return { agents: 2, roles: 1 };
    },
    managedDeleteRemove: async () => void order.push('remove'),
  });
  return { ...stubs, order };
}

async function deleteSource(stubs: ReturnType<typeof deleteStubs>) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const input: SourceDeleteInput = { sourceId: `ms_${randomUUID()}`, tenant: 't1' };
  const handle = await env.client.workflow.start('sourceDeleteWorkflow', {
    taskQueue,
    workflowId: `source-delete-test/${input.sourceId}`,
    args: [input],
  });
  return { input, result: await worker.runUntil(handle.result()) };
}

describe('sourceDeleteWorkflow', () => {
  it('cleans up what the source imported, then removes the row', async () => {
    const stubs = deleteStubs(0);
    const { input, result } = await deleteSource(stubs);
    expect(result).toEqual({ source_id: input.sourceId, deleted: true, removed_agents: 2, removed_roles: 1 });
    expect(stubs.order).toEqual(['cleanup', 'remove']);
    expect(stubs.calls.managedDeleteRemove).toEqual([input]);
  });

  it('retries a failing cleanup with backoff and removes the row only after it succeeded', async () => {
    const stubs = deleteStubs(4);
    const { result } = await deleteSource(stubs);
    expect(result).toMatchObject({ deleted: true, removed_agents: 2 });
    expect(stubs.order).toEqual(['cleanup', 'cleanup', 'cleanup', 'cleanup', 'cleanup', 'remove']);
  });
});
