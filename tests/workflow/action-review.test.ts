/**
 * The Action Review proposal workflow on its own: the real workflow bundle, stub activities that
 * count their calls, and the shared dev server (awaiting an Update does not skip time on the
 * time-skipping server, so Updates are tested here). No API, no PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RecordCreatedInput, RecordTransitionInput, RunEffectInput } from '../../activities/action-review.js';
import type { PrincipalRef } from '../../shared/auth/principal.js';
import type { EffectOutcome, ProposalRecord } from '../../shared/action-review/types.js';
import { REFUSAL_FAILURE_TYPE } from '../../shared/action-review/refusals.js';
import type { actionReviewProposalWorkflow } from '../../workflows/action-review.js';
import {
  approveAndExecuteUpdate,
  approveUpdate,
  executeUpdate,
  proposalWorkflowId,
  reconcileUpdate,
  type ExecuteArgs,
} from '../../workflows/action-review-definitions.js';
import { installQuietRuntime } from '../helpers/temporal.js';
import { stubWorker } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  installQuietRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await env?.teardown();
});

const person = (id: string): PrincipalRef => ({ kind: 'person', id, tenant: 't1', label: id, credential: 'idp_jwt' });
const rita = person('rita');
const ravi = person('ravi');
const fromInbox: ExecuteArgs = { caller: ravi, origin: { surface: 'api', threadId: null } };
const decision = { caller: ravi, reason: null, expectedVersion: null, expectedPayloadDigest: null };

/** A gate a stub activity waits on, opened by the test. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Stub activities: what the projection received, and how often the effect ran. */
function stubs(effect: (input: RunEffectInput) => Promise<EffectOutcome>) {
  const calls = {
    created: [] as RecordCreatedInput[],
    transitions: [] as RecordTransitionInput[],
    effects: [] as RunEffectInput[],
  };
  const holds = new Map<string, Promise<void>>();
  return {
    calls,
    /** Holds the projection of the transition of this type until the promise settles. */
    hold(type: string, until: Promise<void>) {
      holds.set(type, until);
    },
    activities: {
      async recordProposalCreated(input: RecordCreatedInput) {
        calls.created.push(input);
      },
      async recordProposalTransition(input: RecordTransitionInput) {
        calls.transitions.push(input);
        await holds.get(input.event.type);
      },
      async runProposalEffect(input: RunEffectInput) {
        calls.effects.push(input);
        return effect(input);
      },
    },
  };
}

type ProposalHandle = WorkflowHandle<typeof actionReviewProposalWorkflow>;

async function withProposal(
  activities: Record<string, (...args: never[]) => Promise<unknown>>,
  body: (handle: ProposalHandle) => Promise<void>,
) {
  const { worker, taskQueue } = await stubWorker(env, activities);
  const proposalId = randomUUID();
  const record: ProposalRecord = {
    proposalId,
    tenant: 't1',
    actionType: 'ticket.write.v1',
    payload: { title: 'Broken export', body: 'The header row is missing.', labels: [] },
    payloadDigest: 'digest',
    expectedEffect: 'One issue is created.',
    requestedStatement: null,
    requester: rita,
    requesterKind: 'person',
    botId: null,
    threadId: null,
    subject: null,
    executionOrigin: 'any',
    createdAt: new Date().toISOString(),
  };
  await worker.runUntil(async () => {
    const handle = await env.client.workflow.start<typeof actionReviewProposalWorkflow>(
      'actionReviewProposalWorkflow',
      {
        taskQueue,
        workflowId: proposalWorkflowId(proposalId),
        args: [{ record, runtime: { effectTimeoutSeconds: 30, effectHeartbeatSeconds: 10, handbackMaxAttempts: 3 } }],
      },
    );
    await body(handle);
  });
}

/** The ids of every Update the history accepted. */
async function acceptedUpdateIds(handle: ProposalHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const id = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId;
    return id ? [id] : [];
  });
}

const executed: EffectOutcome = { outcome: 'executed', result: { ticket_id: 'ISSUE-1' } };

describe('actionReviewProposalWorkflow with stub activities', () => {
  it('claim race: of two concurrent executes one claims and runs the effect, the other answers its outcome', async () => {
    const release = gate();
    const s = stubs(async () => {
      await release.opened;
      return executed;
    });
    await withProposal(s.activities, async (handle) => {
      await handle.executeUpdate(approveUpdate, { args: [decision] });
      const first = await handle.startUpdate(executeUpdate, {
        args: [fromInbox],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      const second = await handle.startUpdate(executeUpdate, {
        args: [{ ...fromInbox, caller: rita }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      release.open();
      const answers = await Promise.all([first.result(), second.result()]);
      expect(answers.map((a) => a.replayed).sort()).toEqual([false, true]);
      for (const a of answers)
        expect(a).toMatchObject({ claimed: true, finalStatus: 'executed', result: { ticket_id: 'ISSUE-1' } });
      expect(s.calls.effects).toHaveLength(1);
      expect(s.calls.transitions.map((t) => t.event.type)).toEqual(['approved', 'execution_claimed', 'executed']);
      const done = await handle.result();
      expect(done.progress).toMatchObject({ status: 'executed', claimed: true, version: 4 });
    });
  });

  it('claim race: an execute that claims while approve-and-execute records its approval wins; the approval reports claim_lost', async () => {
    const approvalProjected = gate();
    const s = stubs(async () => executed);
    s.hold('approved', approvalProjected.opened);
    await withProposal(s.activities, async (handle) => {
      const both = await handle.startUpdate(approveAndExecuteUpdate, {
        args: [{ ...decision, origin: fromInbox.origin }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      // The approval is applied in the workflow (its projection is held), so this execute is valid and claims.
      const plain = await handle.startUpdate(executeUpdate, {
        args: [fromInbox],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      approvalProjected.open();
      const [decided, execution] = await Promise.all([both.result(), plain.result()]);
      expect(execution).toMatchObject({ claimed: true, finalStatus: 'executed', replayed: false, refusalReason: null });
      expect(decided.execution).toMatchObject({
        claimed: true,
        finalStatus: 'executed',
        replayed: true,
        refusalReason: 'claim_lost',
      });
      expect(s.calls.effects).toHaveLength(1);
    });
  });

  it('replayed execute: an execute arriving after the effect ran answers the recorded outcome; the effect runs once', async () => {
    const finalProjected = gate();
    const s = stubs(async () => ({
      outcome: 'not_applied',
      reason: 'tracker_refused',
      detail: 'The tracker answered 422; nothing was written.',
    }));
    s.hold('not_applied', finalProjected.opened);
    await withProposal(s.activities, async (handle) => {
      await handle.executeUpdate(approveUpdate, { args: [decision] });
      const first = await handle.startUpdate(executeUpdate, {
        args: [fromInbox],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      // The effect has answered; its outcome is being recorded when the second execute arrives.
      await expect
        .poll(() => s.calls.transitions.map((t) => t.event.type))
        .toEqual(['approved', 'execution_claimed', 'not_applied']);
      expect(s.calls.effects).toHaveLength(1);
      const second = await handle.startUpdate(executeUpdate, {
        args: [{ ...fromInbox, caller: rita }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      finalProjected.open();
      const original = await first.result();
      expect(original).toMatchObject({
        claimed: true,
        finalStatus: 'not_applied',
        replayed: false,
        refusalReason: 'tracker_refused',
      });
      expect(await second.result()).toEqual({ ...original, replayed: true });
      expect(s.calls.effects).toHaveLength(1);
      expect(s.calls.effects[0]).toMatchObject({ actionType: 'ticket.write.v1', executedBy: { id: 'ravi' } });
      expect((await handle.result()).progress).toMatchObject({
        status: 'not_applied',
        executionRefusalReason: 'tracker_refused',
      });
    });
  });

  it('failed effect: the attempt is not retried and the proposal requires reconciliation, then a person resolves it', async () => {
    const s = stubs(async () => {
      throw ApplicationFailure.create({
        type: 'TrackerDown',
        message: 'connect ECONNREFUSED 10.0.0.1:443',
        nonRetryable: false,
      });
    });
    await withProposal(s.activities, async (handle) => {
      await handle.executeUpdate(approveUpdate, { args: [decision] });
      const outcome = await handle.executeUpdate(executeUpdate, { args: [fromInbox] });
      expect(outcome).toMatchObject({
        claimed: true,
        finalStatus: 'reconciliation_required',
        replayed: false,
        result: null,
      });
      expect(outcome.errorDetail).toMatch(
        /^The effect attempt failed; it may have been applied\. \(error_id [0-9a-f-]{36}\)$/,
      );
      expect(outcome.errorDetail).not.toContain('ECONNREFUSED');
      expect(s.calls.effects).toHaveLength(1);
      const repeat = await handle.executeUpdate(executeUpdate, { args: [fromInbox] });
      expect(repeat).toEqual({ ...outcome, replayed: true });
      expect(s.calls.effects).toHaveLength(1);
      const resolved = await handle.executeUpdate(reconcileUpdate, {
        args: [{ caller: rita, finalStatus: 'not_applied', note: 'checked the tracker' }],
      });
      expect(resolved).toMatchObject({ status: 'resolved', finalStatus: 'not_applied' });
      expect(s.calls.transitions.map((t) => t.event.type)).toEqual([
        'approved',
        'execution_claimed',
        'reconciliation_required',
        'reconciled',
      ]);
      expect((await handle.result()).progress.status).toBe('resolved');
    });
  });

  it('a refused Update leaves no trace: no accepted event in history, no projection, no state change', async () => {
    const s = stubs(async () => executed);
    await withProposal(s.activities, async (handle) => {
      const updateId = `refused-${randomUUID()}`;
      const refused = await handle
        .executeUpdate(executeUpdate, { args: [fromInbox], updateId })
        .catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = (refused as WorkflowUpdateFailedError).cause;
      expect(cause).toBeInstanceOf(ApplicationFailure);
      expect(cause).toMatchObject({ type: REFUSAL_FAILURE_TYPE, details: ['not_approved'] });
      // An agent may not decide: refused by the validator too.
      const byAgent = await handle
        .executeUpdate(approveUpdate, {
          args: [{ ...decision, caller: { ...ravi, kind: 'agent' } }],
          updateId: `${updateId}-agent`,
        })
        .catch((err: unknown) => err);
      expect((byAgent as WorkflowUpdateFailedError).cause).toMatchObject({ details: ['person_only'] });

      const approvedId = `approve-${randomUUID()}`;
      await handle.executeUpdate(approveUpdate, { args: [decision], updateId: approvedId });
      const accepted = await acceptedUpdateIds(handle);
      expect(accepted).toContain(approvedId);
      expect(accepted).not.toContain(updateId);
      expect(accepted).not.toContain(`${updateId}-agent`);
      const history = JSON.stringify(await handle.fetchHistory());
      expect(history).not.toContain(updateId);
      expect(s.calls.effects).toHaveLength(0);
      expect(s.calls.transitions.map((t) => t.event.type)).toEqual(['approved']);
      expect(s.calls.transitions[0].progress.version).toBe(2);
      await handle.terminate('test done');
    });
  });
});
