import type { ActionType } from '../action-types.js';
import type { Payload } from '../payloads.js';
import type { Executor, ExecutorContext } from './types.js';
import { sql, textArray } from '../../db/sql.js';
import { PROVER_SUBJECTS } from '../prover-subjects.js';

/**
 * Internal action types apply their effect to the platform's own tables, keyed by proposal id:
 * the insert is idempotent, so a lost acknowledgement can never write twice.
 */

export const learningAdoptExecutor: Executor<'learning.adopt.v1'> = {
  actionType: 'learning.adopt.v1',
  async execute(payload, ctx) {
    await sql(
      ctx.em,
      `insert into adopted_learnings (proposal_id, tenant, learning_id, title, content, adopted_by, agent_ids)
       values (?, ?, ?, ?, ?, ?, ?::text[]) on conflict (proposal_id) do nothing`,
      [
        ctx.proposalId,
        ctx.tenant,
        payload.learning_id,
        payload.title,
        payload.content,
        ctx.executedBy.id,
        payload.agent_ids ? textArray(payload.agent_ids) : null,
      ],
    );
    return {
      outcome: 'executed',
      result: {
        adopted_learning_id: payload.learning_id,
        table: 'adopted_learnings',
        agent_ids: payload.agent_ids ?? null,
      },
    };
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

/** Each Prover type records its decision against its subject (`PROVER_SUBJECTS` says which field names it). */
function proverExecutor<T extends ProverType>(actionType: T): Executor<T> {
  const { kind, of } = PROVER_SUBJECTS[actionType];
  return {
    actionType,
    execute: async (payload, ctx) => {
      const done = await recordProverDecision(
        ctx,
        actionType,
        (of as (p: Payload<T>) => string)(payload),
        payload as Record<string, unknown>,
      );
      return { ...done, result: { ...done.result, subject_kind: kind } };
    },
  };
}

export const proverExecutors: { [T in ProverType]: Executor<T> } = {
  'prover.request_finding_evidence.v1': proverExecutor('prover.request_finding_evidence.v1'),
  'prover.approve_view_test_cases.v1': proverExecutor('prover.approve_view_test_cases.v1'),
  'prover.approve_disposition_package.v1': proverExecutor('prover.approve_disposition_package.v1'),
  'prover.approve_composite_bundle.v1': proverExecutor('prover.approve_composite_bundle.v1'),
  'prover.decide_improvement_docket_entry.v1': proverExecutor('prover.decide_improvement_docket_entry.v1'),
};
