/**
 * The CRM merge approval's Updates and settle signal, driven only through its public definitions, on
 * the shared dev server (awaiting an Update does not skip time) with stub activities. The TTL expiry
 * in virtual time is tests/crm/ttl.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { PrincipalRef } from '../../shared/auth/principal.js';
import {
  CRM_MERGE_REFUSAL_TYPE,
  approveMergeUpdate,
  claimMergeUpdate,
  crmMergeStateQuery,
  crmMergeWorkflowId,
  mergeSettledSignal,
  type CrmMergeState,
  type CrmMergeWorkflowInput,
} from '../../workflows/crm-merge-definitions.js';
import { installQuietRuntime } from '../helpers/temporal.js';
import { recorded, stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  installQuietRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
});
afterAll(async () => env?.teardown());

const rita: PrincipalRef = { kind: 'person', id: 'rita', tenant: 't1', label: 'rita', credential: 'idp_jwt' };
const bot: PrincipalRef = { ...rita, id: 'bot', kind: 'agent' };

/** The refusal code of a refused Update. */
const refusalOf = (err: unknown) => {
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (err as WorkflowUpdateFailedError).cause as { type?: string; details?: unknown[] };
  expect(cause.type).toBe(CRM_MERGE_REFUSAL_TYPE);
  return cause.details?.[0];
};

describe('crmMergeApprovalWorkflow Updates (dev server)', () => {
  it('approves by a person, refuses an agent and another connection, then claims and settles', async () => {
    const stubs = recorded({
      recordMergeApproved: async () => undefined,
      expireMergeApproval: async () => ({ expired: true }),
    });
    const { worker, taskQueue } = await stubWorker(env, stubs.activities);
    const approvalId = randomUUID();
    const input: CrmMergeWorkflowInput = {
      approvalId,
      tenant: 't1',
      connectionName: 'crm_main',
      ttlSeconds: 3600,
      settleWaitSeconds: 3600,
    };
    const final = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('crmMergeApprovalWorkflow', {
        taskQueue,
        workflowId: crmMergeWorkflowId(approvalId),
        args: [input],
      });
      const byAgent = await handle.executeUpdate(approveMergeUpdate, { args: [{ caller: bot }] }).catch((e) => e);
      expect(refusalOf(byAgent)).toBe('person_only');
      expect(await handle.executeUpdate(approveMergeUpdate, { args: [{ caller: rita }] })).toMatchObject({
        phase: 'open',
        approvedBy: { id: 'rita' },
      });
      const elsewhere = await handle
        .executeUpdate(claimMergeUpdate, { args: [{ caller: rita, connectionName: 'crm_other' }] })
        .catch((e) => e);
      expect(refusalOf(elsewhere)).toBe('connection_mismatch');
      expect(await handle.query(crmMergeStateQuery)).toMatchObject({ phase: 'open' });
      expect(
        await handle.executeUpdate(claimMergeUpdate, { args: [{ caller: rita, connectionName: 'crm_main' }] }),
      ).toMatchObject({ phase: 'executing' });
      // A second claim answers the state without claiming again.
      expect(
        await handle.executeUpdate(claimMergeUpdate, { args: [{ caller: rita, connectionName: 'crm_main' }] }),
      ).toMatchObject({ phase: 'executing' });
      await handle.signal(mergeSettledSignal, { finalStatus: 'executed' });
      const accepted = (await handle.fetchHistory()).events!.filter(
        (e) => e.workflowExecutionUpdateAcceptedEventAttributes,
      );
      // The approval and the two claims; the refused ones leave no trace.
      expect(accepted).toHaveLength(3);
      return (await handle.result()) as CrmMergeState;
    });
    expect(final).toEqual({ phase: 'settled', approvedBy: rita, finalStatus: 'executed' });
    expect(stubs.calls.recordMergeApproved).toEqual([{ approvalId, approvedBy: rita }]);
    expect(stubs.count('expireMergeApproval')).toBe(0);
  });
});
