/**
 * The managed-source auto-sync check with stub activities, in virtual time: every candidate looked at
 * once, an eligible one synced in a child `source-sync/<source_id>/<job_id>` (on the same stubs), one
 * with a sync already running skipped, an ineligible one recorded as such, then the release poll; a
 * failed child sync shows the check as `completed_with_failures`.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { AutoSyncCandidate, AutoSyncInput } from '../../workflows/managed-source-lifecycle-definitions.js';
import { sourceSyncWorkflowId, type SourceSyncInput } from '../../workflows/source-sync-definitions.js';
import { lifecycleAttributes, recorded, runStubbed, useTimeSkipping } from './support.js';

const temporal = useTimeSkipping();

const candidate = (sourceId: string, eligible = true): AutoSyncCandidate => ({
  sourceId,
  tenant: 't1',
  eligible,
  ineligibleReason: eligible ? null : 'pending_deletion',
});

/**
 * Stubs: `candidates` listed; a job starts for every source but those in `running` (a sync already
 * running); the child sync of a source in `gitFails` fails with a classified git error.
 */
function autoSyncStubs(candidates: AutoSyncCandidate[], opts: { running?: string[]; gitFails?: string[] } = {}) {
  const jobs = new Map<string, string>();
  return recorded({
    autoSyncList: async () => candidates,
    autoSyncStartJob: async (c: AutoSyncCandidate) => {
      if (opts.running?.includes(c.sourceId)) return null;
      const jobId = `job-${randomUUID()}`;
      jobs.set(c.sourceId, jobId);
      return jobId;
    },
    autoSyncRecord: async () => undefined,
    managedReleasePoll: async () => ({ checked: 0 }),
    // The child sourceSyncWorkflow runs on the same worker, in its one-activity shape: it records the sync itself.
    managedSyncPrepare: async ({ sourceId }: SourceSyncInput) => {
      if (opts.gitFails?.includes(sourceId))
        throw ApplicationFailure.nonRetryable('authentication failed', 'GIT_AUTH_FAILED');
      return { refusal: null, result: { source_id: sourceId, outcome: 'updated' } };
    },
    managedSyncFail: async ({ sourceId, errorCode }: SourceSyncInput & { errorCode: string }) => ({
      source_id: sourceId,
      outcome: 'failed',
      errorCode,
    }),
  });
}

const check = (stubs: ReturnType<typeof autoSyncStubs>, input: AutoSyncInput) =>
  runStubbed(temporal.env, stubs.activities, 'managedSourceAutoSyncWorkflow', {
    workflowId: `managed-source-auto-sync-test/${randomUUID()}`,
    args: [input],
  });

describe('managedSourceAutoSyncWorkflow', () => {
  it('syncs each eligible source in a child, skips a running one, records every candidate, then polls releases', async () => {
    const input: AutoSyncInput = { tenant: 't1' };
    const stubs = autoSyncStubs(
      [candidate('ms_a'), candidate('ms_gone', false), candidate('ms_busy'), candidate('ms_b')],
      {
        running: ['ms_busy'],
      },
    );
    const { handle, result } = await check(stubs, input);
    expect(result).toEqual({ checked: 4, synced: 2, skipped: 1, not_eligible: 1 });
    expect(stubs.calls.autoSyncList).toEqual([input]);
    expect(stubs.count('autoSyncStartJob')).toBe(3);
    // Each child sync ran once, in order, as an auto sync of its job.
    const synced = stubs.calls.managedSyncPrepare as SourceSyncInput[];
    expect(synced.map((s) => [s.sourceId, s.trigger])).toEqual([
      ['ms_a', 'auto_sync'],
      ['ms_b', 'auto_sync'],
    ]);
    expect(stubs.count('managedSyncFail')).toBe(0);
    // Every candidate's outcome recorded, the synced ones with their job and the child's result.
    expect(stubs.calls.autoSyncRecord).toEqual([
      { candidate: candidate('ms_a'), jobId: synced[0]!.jobId, result: { source_id: 'ms_a', outcome: 'updated' } },
      { candidate: candidate('ms_gone', false), jobId: null, result: null },
      { candidate: candidate('ms_busy'), jobId: null, result: null },
      { candidate: candidate('ms_b'), jobId: synced[1]!.jobId, result: { source_id: 'ms_b', outcome: 'updated' } },
    ]);
    expect(stubs.calls.managedReleasePoll).toEqual([input]);
    expect((await lifecycleAttributes(handle)).status).toBe('completed');
    // The child is found under its sync id with the source's tenant, id and outcome.
    const child = temporal.env.client.workflow.getHandle(sourceSyncWorkflowId('ms_a', synced[0]!.jobId));
    expect(await lifecycleAttributes(child)).toEqual({ tenant: 't1', resourceId: 'ms_a', status: 'updated' });
  });

  it('records a failed child sync and shows the check `completed_with_failures`', async () => {
    const stubs = autoSyncStubs([candidate('ms_ok'), candidate('ms_auth')], { gitFails: ['ms_auth'] });
    const { handle, result } = await check(stubs, {});
    expect(result).toEqual({ checked: 2, synced: 2, skipped: 0, not_eligible: 0 });
    expect(stubs.count('managedSyncPrepare')).toBe(2);
    expect(stubs.calls.managedSyncFail).toMatchObject([{ sourceId: 'ms_auth', errorCode: 'GIT_AUTH_FAILED' }]);
    expect(stubs.calls.autoSyncRecord).toMatchObject([
      { candidate: { sourceId: 'ms_ok' }, result: { outcome: 'updated' } },
      { candidate: { sourceId: 'ms_auth' }, result: { outcome: 'failed', errorCode: 'GIT_AUTH_FAILED' } },
    ]);
    expect(stubs.count('managedReleasePoll')).toBe(1);
    expect((await lifecycleAttributes(handle)).status).toBe('completed_with_failures');
  });

  it('with no candidates, syncs nothing and still polls releases', async () => {
    const stubs = autoSyncStubs([]);
    const { handle, result } = await check(stubs, {});
    expect(result).toEqual({ checked: 0, synced: 0, skipped: 0, not_eligible: 0 });
    expect(stubs.count('autoSyncStartJob')).toBe(0);
    expect(stubs.count('autoSyncRecord')).toBe(0);
    expect(stubs.calls.managedReleasePoll).toEqual([{}]);
    expect((await lifecycleAttributes(handle)).status).toBe('completed');
  });
});
