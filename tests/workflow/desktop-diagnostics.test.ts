/**
 * The automatic desktop diagnostics attempt with a stub activity, in virtual time: the activity's
 * outcome is the workflow's result and its `PlatformStatus`, and a failed upload is never sent twice
 * (one attempt, the workflow fails with status `failed`).
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { AutoDiagnosticsOutcome } from '../../workflows/desktop-diagnostics-definitions.js';
import { lifecycleAttributes, recorded, runStubbed, useTimeSkipping } from './support.js';

const temporal = useTimeSkipping();

/** Stubs: the attempt answers `outcome`, or throws when it is an Error. */
function diagnosticsStubs(outcome: AutoDiagnosticsOutcome | Error) {
  return recorded({
    desktopDiagnosticsAutoAttempt: async () => {
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  });
}

const attempt = (stubs: ReturnType<typeof diagnosticsStubs>) =>
  runStubbed(temporal.env, stubs.activities, 'desktopDiagnosticsWorkflow', {
    workflowId: `desktop-diagnostics-test/${randomUUID()}`,
    args: [],
  });

describe('desktopDiagnosticsWorkflow', () => {
  it('answers what the attempt sent and shows `sent`', async () => {
    const sent: AutoDiagnosticsOutcome = {
      outcome: 'sent',
      result: {
        preview_id: 'pv_1',
        upload_id: 'up_1',
        gzip: true,
        chunks_sent: 1,
        bytes_sent: 2048,
        chunk_bytes: 4_000_000,
        truncated: false,
      },
    };
    const stubs = diagnosticsStubs(sent);
    const { handle, result } = await attempt(stubs);
    expect(result).toEqual(sent);
    expect(stubs.count('desktopDiagnosticsAutoAttempt')).toBe(1);
    expect((await lifecycleAttributes(handle)).status).toBe('sent');
  });

  it('answers an attempt that sent nothing (too soon) and shows it as the status', async () => {
    const stubs = diagnosticsStubs({ outcome: 'too_soon' });
    const { handle, result } = await attempt(stubs);
    expect(result).toEqual({ outcome: 'too_soon' });
    expect(stubs.count('desktopDiagnosticsAutoAttempt')).toBe(1);
    expect((await lifecycleAttributes(handle)).status).toBe('too_soon');
  });

  it('fails after a single attempt when the upload throws, never retrying it, and shows `failed`', async () => {
    const stubs = diagnosticsStubs(new Error('provisioner unreachable'));
    const { handle, result } = await attempt(stubs);
    expect(result).toBeInstanceOf(WorkflowFailedError);
    expect(stubs.count('desktopDiagnosticsAutoAttempt')).toBe(1);
    expect((await handle.describe()).status.name).toBe('FAILED');
    expect((await lifecycleAttributes(handle)).status).toBe('failed');
  });
});
