import { ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  checkDecision,
  checkExecute,
  checkReconcile,
  initialProgress,
  originAllowed,
} from '../../shared/action-review/checks.js';
import { canonicalJson, proposalDigest } from '../../shared/action-review/digest.js';
import { classifyEffectFailure, EFFECT_OUTCOME_UNKNOWN } from '../../shared/action-review/effect-failure.js';
import { runExecutor } from '../../shared/action-review/executors/index.js';
import type { ProposalRecord } from '../../shared/action-review/types.js';
import { filterVisible, pickIncompleteReason } from '../../shared/action-review/visibility.js';
import type { PrincipalRef } from '../../shared/auth/principal.js';
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/log.js';
import { freePort } from '../../scripts/lib/net.js';

const person: PrincipalRef = { kind: 'person', id: 'p', tenant: 't', label: 'P', credential: 'idp_jwt' };
const agent: PrincipalRef = { kind: 'agent', id: 'bot', tenant: 't', label: 'agent bot', credential: 'sandbox_token' };
const record: ProposalRecord = {
  proposalId: '00000000-0000-4000-8000-000000000001',
  tenant: 't',
  actionType: 'ticket.write.v1',
  payload: {},
  payloadDigest: 'sha256:abc',
  expectedEffect: 'e',
  requestedStatement: null,
  requester: agent,
  requesterKind: 'agent',
  botId: 'bot',
  threadId: 'th-1',
  subject: null,
  executionOrigin: 'proposal_thread',
  createdAt: '2026-01-01T00:00:00.000Z',
};
const noPin = { expectedVersion: null, expectedPayloadDigest: null };

describe('transition guards', () => {
  it('decisions are person-only, once, and pinned to version and digest', () => {
    const p = initialProgress(record);
    expect(checkDecision(record, p, { caller: agent, ...noPin })?.code).toBe('person_only');
    expect(checkDecision(record, p, { caller: { ...person, kind: 'app' }, ...noPin })?.code).toBe('person_only');
    expect(checkDecision(record, p, { caller: person, ...noPin })).toBeNull();
    expect(checkDecision(record, p, { caller: person, expectedVersion: 2, expectedPayloadDigest: null })?.code).toBe(
      'decision_context_mismatch',
    );
    expect(
      checkDecision(record, p, { caller: person, expectedVersion: 1, expectedPayloadDigest: 'sha256:other' })?.code,
    ).toBe('decision_context_mismatch');
    expect(checkDecision(record, { ...p, status: 'approved' }, { caller: person, ...noPin })?.code).toBe(
      'already_decided',
    );
  });

  it('execution checks the origin before the grant, so a wrong origin never claims', () => {
    const requested = initialProgress(record);
    const elsewhere = { caller: agent, origin: { surface: 'tool_call' as const, threadId: 'th-2' } };
    expect(checkExecute(record, requested, elsewhere)?.code).toBe('execution_origin_required');
    expect(
      checkExecute(record, requested, { caller: agent, origin: { surface: 'tool_call', threadId: 'th-1' } })?.code,
    ).toBe('not_approved');
    expect(
      checkExecute(
        record,
        { ...requested, status: 'approved' },
        { caller: agent, origin: { surface: 'tool_call', threadId: 'th-1' } },
      ),
    ).toBeNull();
    expect(
      originAllowed('proposal_thread', 'th-1', { caller: person, origin: { surface: 'api', threadId: null } }),
    ).toBe(true);
    expect(
      originAllowed('proposal_thread', 'th-1', {
        caller: { ...person, kind: 'system' },
        origin: { surface: 'api', threadId: null },
      }),
    ).toBe(false);
    expect(originAllowed('any', null, elsewhere)).toBe(true);
  });

  it('reconcile needs a person and a reconciliation_required proposal', () => {
    const p = { ...initialProgress(record), status: 'reconciliation_required' as const };
    expect(checkReconcile(p, person)).toBeNull();
    expect(checkReconcile(p, agent)?.code).toBe('person_only');
    expect(checkReconcile({ ...p, status: 'executed' }, person)?.code).toBe('not_reconciliation_required');
  });
});

describe('digest', () => {
  it('is independent of key order and changes with content', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    const d1 = proposalDigest({ actionType: 'x', payload: { a: 1, b: 2 }, expectedEffect: 'e', subject: null });
    expect(proposalDigest({ actionType: 'x', payload: { b: 2, a: 1 }, expectedEffect: 'e', subject: null })).toBe(d1);
    expect(proposalDigest({ actionType: 'x', payload: { a: 1, b: 3 }, expectedEffect: 'e', subject: null })).not.toBe(
      d1,
    );
  });
});

describe('list visibility', () => {
  const viewer = { kind: 'person', id: 'p', tenant: 't' };
  it('reports probe_failure ahead of every other reason and hides rows it could not confirm', async () => {
    const rows = [
      [{ kind: 'thread', id: 'ok' }],
      [{ kind: 'thread', id: 'boom' }],
      [{ kind: 'unknown', id: 'x' }],
      null,
    ];
    const result = await filterVisible(rows, {
      viewer,
      subjectsOf: (row) => row,
      probes: { thread: async (s) => (s.id === 'boom' ? Promise.reject(new Error('down')) : true) },
      budget: 100,
    });
    expect(result.visible).toEqual([rows[0]]);
    expect(pickIncompleteReason(result.reasons)).toBe('probe_failure');
    expect([...result.reasons].sort()).toEqual(['handler_unavailable', 'probe_failure', 'row_unreadable']);
  });

  it('counts distinct subjects against the budget and stops at it', async () => {
    let probes = 0;
    const rows = [['a'], ['a'], ['b'], ['c']].map((ids) => ids.map((id) => ({ kind: 'thread', id })));
    const result = await filterVisible(rows, {
      viewer,
      subjectsOf: (row) => row,
      probes: { thread: async () => (probes++, true) },
      budget: 2,
    });
    expect(probes).toBe(2);
    expect(result).toMatchObject({ truncated: true });
    expect(result.visible).toHaveLength(3);
    expect(pickIncompleteReason(result.reasons)).toBe('probe_budget');
  });
});

describe('executors without a deployment to reach', () => {
  const ctx = (env: Record<string, string> = {}) => ({
    proposalId: record.proposalId,
    tenant: 't',
    executedBy: person,
    em: undefined as never,
    config: loadConfig(env),
    signal: new AbortController().signal,
    heartbeat() {},
    log: createLogger({ sink: () => {} }),
  });

  it('ticket.write.v1 without a tracker answers TICKETING_SETUP_REQUIRED', async () => {
    expect(await runExecutor('ticket.write.v1', { title: 't' }, ctx())).toMatchObject({
      outcome: 'not_applied',
      reason: 'TICKETING_SETUP_REQUIRED',
    });
  });

  it('ticket.write.v1 to a loopback tracker the operator configured is reached without any egress flag', async () => {
    // TICKET_TRACKER_URL is an operator endpoint: loopback is the operator's choice. The closed port
    // proves the request was attempted (unreachable), not refused by the policy.
    const result = await runExecutor(
      'ticket.write.v1',
      { title: 't' },
      ctx({ TICKET_TRACKER_URL: `http://127.0.0.1:${await freePort()}` }),
    );
    expect(result).toMatchObject({ outcome: 'not_applied', reason: 'tracker_unreachable' });
  });

  it('a tracker at an address no policy allows stops the start, naming TICKET_TRACKER_URL', () => {
    expect(() =>
      ctx({ TICKET_TRACKER_URL: 'http://169.254.169.254/api', PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' }),
    ).toThrow(
      /^TICKET_TRACKER_URL is not allowed for outbound requests: address 169\.254\.169\.254 is link-local \(cloud metadata\); outbound requests to it are never allowed/,
    );
  });

  it('re-checks the payload before any effect', async () => {
    expect(await runExecutor('learning.adopt.v1', { title: 'no id' }, ctx())).toMatchObject({
      outcome: 'not_applied',
      reason: 'invalid_payload',
    });
  });

  it('local_cli.run.v1 reports a command that cannot start as not_applied', async () => {
    const result = await runExecutor(
      'local_cli.run.v1',
      { command: 'definitely-not-a-command-xyz', args: [] },
      ctx({ LOCAL_CLI_ALLOWED_COMMANDS: 'definitely-not-a-command-xyz' }),
    );
    expect(result).toMatchObject({ outcome: 'not_applied', reason: 'command_not_started' });
  });
});

describe('what a failed effect attempt tells people (workflow-side, from the failure type only)', () => {
  it('classifies timeouts by kind, keeps the activity’s own classified sentence and id, and never repeats a failure’s text', () => {
    expect(classifyEffectFailure(new TimeoutFailure('activity Heartbeat timeout', undefined, 'HEARTBEAT'))).toEqual({
      summary: 'The effect timed out (heartbeat); it may have been applied.',
      errorId: null,
    });
    expect(
      classifyEffectFailure(new TimeoutFailure('activity StartToClose timeout', undefined, 'START_TO_CLOSE')).summary,
    ).toContain('(start-to-close limit)');
    const ours = ApplicationFailure.create({
      type: EFFECT_OUTCOME_UNKNOWN,
      message: 'raw',
      details: [{ summary: 'The issue tracker answered HTTP 502.', error_id: 'e-1' }],
    });
    expect(classifyEffectFailure(ours)).toEqual({ summary: 'The issue tracker answered HTTP 502.', errorId: 'e-1' });
    // An older activity's failure (message only) or anyone else's: a generic sentence, not its message.
    for (const other of [
      ApplicationFailure.create({ type: EFFECT_OUTCOME_UNKNOWN, message: 'ECONNRESET 10.0.0.7:5432 password=…' }),
      ApplicationFailure.create({ type: 'TypeError', message: 'driver said something' }),
      new Error('pg: connection terminated'),
    ]) {
      expect(classifyEffectFailure(other)).toEqual({
        summary: 'The effect attempt failed; it may have been applied.',
        errorId: null,
      });
    }
    expect(classifyEffectFailure(new CancelledFailure('cancelled')).summary).toMatch(/cancelled/);
  });
});
