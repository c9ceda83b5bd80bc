import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { PrincipalRef } from '../shared/auth/principal.js';
import type { ActionType } from '../shared/action-review/action-types.js';
import { EFFECT_OUTCOME_UNKNOWN, type EffectFailureDetails } from '../shared/action-review/effect-failure.js';
import { runExecutor } from '../shared/action-review/executors/index.js';
import { EffectOutcomeUnknownError } from '../shared/action-review/executors/types.js';
import type { EffectOutcome, ProposalEvent, ProposalProgress, ProposalRecord } from '../shared/action-review/types.js';
import type { AppConfig } from '../shared/config.js';
import { describeError, type Logger } from '../shared/log.js';
import type { Settings } from '../shared/settings/store.js';
import { withHeartbeat } from './heartbeat.js';
import { execSql } from '../shared/db/sql.js';

export interface RecordCreatedInput {
  record: ProposalRecord;
  progress: ProposalProgress;
  event: ProposalEvent;
}

export interface RecordTransitionInput {
  proposalId: string;
  tenant: string;
  progress: ProposalProgress;
  event: ProposalEvent;
  /** Set on a decision in a conversation: the hand-back to deliver, written with the decision. */
  handback: {
    threadId: string;
    decision: 'approved' | 'rejected';
    reason: string | null;
    decidedByLabel: string;
  } | null;
}

export interface RunEffectInput {
  proposalId: string;
  tenant: string;
  actionType: ActionType;
  payload: unknown;
  executedBy: PrincipalRef;
}

const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));
async function insertEvent(em: EntityManager, proposalId: string, e: ProposalEvent) {
  await execSql(
    em,
    `insert into action_review_events (proposal_id, seq, type, actor, reason, detail, occurred_at)
     values (?, ?, ?, ?::jsonb, ?, ?::jsonb, ?) on conflict (proposal_id, seq) do nothing`,
    [proposalId, e.seq, e.type, json(e.actor), e.reason, json(e.detail), e.occurredAt],
  );
}

/** Projection writes (idempotent: keyed by proposal id and event sequence) and the one-attempt effect. */
export function createActionReviewActivities(deps: {
  orm: MikroORM;
  config: AppConfig;
  log: Logger;
  settings?: Settings;
  temporal?: Client;
}) {
  return {
    async recordProposalCreated({ record: r, progress: p, event }: RecordCreatedInput): Promise<void> {
      await deps.orm.em.fork().transactional(async (em) => {
        await execSql(
          em,
          `insert into action_review_proposals (proposal_id, tenant, action_type, status, version, payload, payload_digest,
             expected_effect, requested_statement, statement_ref, requester, requester_kind, bot_id, thread_id, subject_kind,
             subject_id, execution_origin, claimed, created_at, updated_at)
           values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?, ?, false, ?, ?)
           on conflict (proposal_id) do nothing`,
          [
            r.proposalId,
            r.tenant,
            r.actionType,
            p.status,
            p.version,
            JSON.stringify(r.payload),
            r.payloadDigest,
            r.expectedEffect,
            r.requestedStatement,
            r.statementRef ?? null,
            json(r.requester),
            r.requesterKind,
            r.botId,
            r.threadId,
            r.subject?.kind ?? null,
            r.subject?.id ?? null,
            r.executionOrigin,
            r.createdAt,
            p.updatedAt,
          ],
        );
        await insertEvent(em, r.proposalId, event);
      });
    },

    async recordProposalTransition({
      proposalId,
      tenant,
      progress: p,
      event,
      handback,
    }: RecordTransitionInput): Promise<void> {
      await deps.orm.em.fork().transactional(async (em) => {
        // A late retry of an older transition never overwrites a newer state.
        await execSql(
          em,
          `update action_review_proposals set status = ?, version = ?, decided_by = ?::jsonb, decision_reason = ?, decided_at = ?,
             claimed = ?, final_status = ?, execution_receipt = ?::jsonb, execution_refusal_reason = ?, execution_refusal_detail = ?,
             execution_error_detail = ?, resolved_by = ?::jsonb, resolution_note = ?, updated_at = ?
           where proposal_id = ? and version < ?`,
          [
            p.status,
            p.version,
            json(p.decidedBy),
            p.decisionReason,
            p.decidedAt,
            p.claimed,
            p.finalStatus,
            json(p.executionReceipt),
            p.executionRefusalReason,
            p.executionRefusalDetail,
            p.executionErrorDetail,
            json(p.resolvedBy),
            p.resolutionNote,
            p.updatedAt,
            proposalId,
            p.version,
          ],
        );
        await insertEvent(em, proposalId, event);
        if (handback) {
          await execSql(
            em,
            `insert into action_review_handbacks (proposal_id, tenant, thread_id, decision, reason, decided_by_label, created_at)
             values (?, ?, ?, ?, ?, ?, ?) on conflict (proposal_id) do nothing`,
            [
              proposalId,
              tenant,
              handback.threadId,
              handback.decision,
              handback.reason,
              handback.decidedByLabel,
              event.occurredAt,
            ],
          );
        }
      });
    },

    /**
     * Runs the effect once (the workflow schedules it with one attempt). Heartbeats while it runs so
     * a dead worker is noticed; any failure after the effect may have started is reported as such.
     */
    async runProposalEffect(input: RunEffectInput): Promise<EffectOutcome> {
      const ctx = Context.current();
      try {
        return await withHeartbeat(1_000, () =>
          runExecutor(input.actionType, input.payload, {
            proposalId: input.proposalId,
            tenant: input.tenant,
            executedBy: input.executedBy,
            em: deps.orm.em.fork(),
            config: deps.config,
            signal: ctx.cancellationSignal,
            heartbeat: () => ctx.heartbeat(),
            log: deps.log,
            ...(deps.settings ? { settings: deps.settings } : {}),
            ...(deps.temporal ? { temporal: deps.temporal } : {}),
          }),
        );
      } catch (err) {
        // People see the executor's classified sentence (or a generic one) and an error_id; the raw
        // failure, whatever the target system said, is logged under that id.
        const errorId = randomUUID();
        const summary =
          err instanceof EffectOutcomeUnknownError
            ? err.message
            : 'The effect failed unexpectedly after it may have started; its outcome is unknown.';
        deps.log.warn('action review effect outcome unknown', {
          proposal_id: input.proposalId,
          action_type: input.actionType,
          error_id: errorId,
          ...describeError(err),
        });
        const details: EffectFailureDetails = { summary, error_id: errorId };
        throw ApplicationFailure.create({
          type: EFFECT_OUTCOME_UNKNOWN,
          message: summary,
          details: [details],
          nonRetryable: true,
        });
      }
    },
  };
}

export type ActionReviewActivities = ReturnType<typeof createActionReviewActivities>;
