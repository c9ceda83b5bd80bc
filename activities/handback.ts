import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { HandbackRowEntity, type HandbackRow } from '../shared/db/entities/index.js';
import type { Logger } from '../shared/log.js';
import { execSql, sql } from '../shared/db/sql.js';

export interface DeliverResult {
  delivered: boolean;
  messageId: string | null;
}

/** The message a decision becomes in the agent's conversation. */
export function handbackMessage(h: HandbackRow): string {
  const verdict = h.decision === 'approved' ? 'approved' : 'rejected';
  return `Action Review: proposal ${h.proposalId} was ${verdict} by ${h.decidedByLabel}.${h.reason ? ` Reason: ${h.reason}` : ''}`;
}

/** Delivers decisions into the conversation store; idempotent by proposal, so retries never duplicate. */
export function createHandbackActivities(deps: { orm: MikroORM; log: Logger }) {
  return {
    async deliverHandback({ proposalId }: { proposalId: string }): Promise<DeliverResult> {
      const em = deps.orm.em.fork();
      try {
        return await em.transactional(async (tx) => {
          const h = await tx.findOne(HandbackRowEntity, { proposalId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
          if (!h) return { delivered: false, messageId: null }; // no conversation raised it: nothing to hand back
          if (h.status === 'delivered') return { delivered: true, messageId: h.messageId };
          const messageId = randomUUID();
          await execSql(
            tx,
            `insert into conversation_messages (id, thread_id, role, author_kind, author_id, content, metadata, idempotency_key)
             values (?, ?, 'platform', 'system', 'action-review', ?, ?::jsonb, ?)`,
            [
              messageId,
              h.threadId,
              handbackMessage(h),
              JSON.stringify({
                kind: 'action_review_decision',
                proposal_id: proposalId,
                decision: h.decision,
                reason: h.reason,
                decided_by: h.decidedByLabel,
              }),
              `action-review-handback:${proposalId}`,
            ],
          );
          h.status = 'delivered';
          h.messageId = messageId;
          h.deliveredAt = new Date();
          h.attempts += 1;
          h.lastError = null;
          return { delivered: true, messageId };
        });
      } catch (err) {
        // Keep the failure visible to operators; the caller (workflow retry or sweep) tries again.
        const message = err instanceof Error ? err.message.slice(0, 1000) : String(err);
        await sql(
          deps.orm.em.fork(),
          `update action_review_handbacks set attempts = attempts + 1, last_error = ? where proposal_id = ? and status = 'pending'`,
          [message, proposalId],
        ).catch(() => undefined);
        deps.log.warn('hand-back delivery failed', { proposal_id: proposalId, error_message: message });
        throw err;
      }
    },

    async listPendingHandbacks({ limit }: { limit: number }): Promise<string[]> {
      const rows = await deps.orm.em
        .fork()
        .find(
          HandbackRowEntity,
          { status: 'pending' },
          { orderBy: { createdAt: 'asc' }, limit, fields: ['proposalId'] },
        );
      return rows.map((r) => r.proposalId);
    },
  };
}

export type HandbackActivities = ReturnType<typeof createHandbackActivities>;
