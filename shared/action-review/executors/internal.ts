import type { ActionType } from '../action-types.js';
import type { Payload } from '../payloads.js';
import type { Executor, ExecutorContext } from './types.js';
import { sql } from '../../db/sql.js';

/**
 * Internal action types apply their effect to the platform's own tables, keyed by proposal id:
 * the insert is idempotent, so a lost acknowledgement can never write twice.
 */

export const learningAdoptExecutor: Executor<'learning.adopt.v1'> = {
  actionType: 'learning.adopt.v1',
  async execute(payload, ctx) {
    await sql(
      ctx.em,
      `insert into adopted_learnings (proposal_id, tenant, learning_id, title, content, adopted_by)
       values (?, ?, ?, ?, ?, ?) on conflict (proposal_id) do nothing`,
      [ctx.proposalId, ctx.tenant, payload.learning_id, payload.title, payload.content, ctx.executedBy.id],
    );
    return { outcome: 'executed', result: { adopted_learning_id: payload.learning_id, table: 'adopted_learnings' } };
  },
};

type ProverType = Extract<ActionType, `prover.${string}`>;

async function recordProverDecision(
  ctx: ExecutorContext,
  actionType: ProverType,
  subjectId: string,
  decision: Record<string, unknown>,
) {
  await sql(
    ctx.em,
    `insert into prover_decisions (proposal_id, tenant, action_type, subject_id, decision, decided_by)
     values (?, ?, ?, ?, ?::jsonb, ?) on conflict (proposal_id) do nothing`,
    [ctx.proposalId, ctx.tenant, actionType, subjectId, JSON.stringify(decision), ctx.executedBy.id],
  );
  return {
    outcome: 'executed' as const,
    result: { prover_decision: actionType, subject_id: subjectId, table: 'prover_decisions' },
  };
}

/** Each Prover type records its decision against its subject; which field is the subject differs by type. */
function proverExecutor<T extends ProverType>(actionType: T, subjectOf: (p: Payload<T>) => string): Executor<T> {
  return {
    actionType,
    execute: (payload, ctx) =>
      recordProverDecision(ctx, actionType, subjectOf(payload), payload as Record<string, unknown>),
  };
}

export const proverExecutors: { [T in ProverType]: Executor<T> } = {
  'prover.request_finding_evidence.v1': proverExecutor('prover.request_finding_evidence.v1', (p) => p.finding_id),
  'prover.approve_view_test_cases.v1': proverExecutor('prover.approve_view_test_cases.v1', (p) => p.view_id),
  'prover.approve_disposition_package.v1': proverExecutor('prover.approve_disposition_package.v1', (p) => p.package_id),
  'prover.approve_composite_bundle.v1': proverExecutor('prover.approve_composite_bundle.v1', (p) => p.bundle_id),
  'prover.decide_improvement_docket_entry.v1': proverExecutor(
    'prover.decide_improvement_docket_entry.v1',
    (p) => p.entry_id,
  ),
};
