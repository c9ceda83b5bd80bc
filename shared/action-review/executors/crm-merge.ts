import { randomUUID } from 'node:crypto';
import { CrmMergeApprovalEntity } from '../../db/entities/index.js';
import { CrmApiError } from '../../crm/errors.js';
import { computePreview, mergeConnection } from '../../crm/merge-preview.js';
import { checkSelection } from '../../crm/merge-selection.js';
import { updateRecord } from '../../crm/rest.js';
import { CrmSession } from '../../crm/session.js';
import { mergeRecords } from '../../crm/soap.js';
import { describeError } from '../../log.js';
import { neverSent, refusedBeforeChange, summary } from './crm-failures.js';
import { EffectOutcomeUnknownError, notApplied, type Executor, type ExecutorContext } from './types.js';
import { sql } from '../../db/sql.js';
import { ActionReviewCodes } from '../refusals.js';
import { CrmCodes } from '../../crm/error-codes.js';

/** Logs a failure that becomes `not_applied` (nothing else would) and answers its summary with the log line's error_id. */
function logged(ctx: ExecutorContext, what: string, err: unknown): string {
  const errorId = err instanceof CrmApiError ? err.errorId : randomUUID();
  ctx.log.warn(`crm merge: ${what}`, { proposal_id: ctx.proposalId, error_id: errorId, ...describeError(err) });
  return `${summary(err)}, error_id ${errorId}`;
}

/**
 * The approved CRM merge (the approval with the proposal's id binds connection, records and digest):
 * claim within the lifetime, re-read the records and re-check the digest, PATCH the survivor's
 * merged fields per the policy, then the SOAP `merge`. Anything refused before a write is
 * `not_applied`; once a write may have happened an unknown or failed outcome throws, so the proposal
 * goes to `reconciliation_required` and the merge is never called twice.
 */
export const crmMergeExecutor: Executor<'crm.merge.v1'> = {
  actionType: 'crm.merge.v1',
  async execute(payload, ctx) {
    const approval = await ctx.em.findOne(CrmMergeApprovalEntity, { approvalId: ctx.proposalId, tenant: ctx.tenant });
    if (!approval)
      return notApplied(
        ActionReviewCodes.crm_approval_missing,
        'This proposal has no CRM merge approval; request one with POST /api/crm/merge/approvals.',
      );
    if (payload.connection_name && payload.connection_name !== approval.connectionName) {
      return notApplied(
        CrmCodes.connection_mismatch,
        `The approval is bound to connection "${approval.connectionName}".`,
      );
    }
    const claimed = await sql<{ approval_id: string }>(
      ctx.em,
      `update crm_merge_approvals set execution_started_at = coalesce(execution_started_at, now())
       where approval_id = ? and status = 'open' and expires_at > now() returning approval_id`,
      [approval.approvalId],
    );
    if (claimed.length === 0)
      return notApplied(
        CrmCodes.approval_expired,
        `The approval expired at ${approval.expiresAt.toISOString()}; nothing was written. Request a new approval.`,
      );

    const selection = checkSelection({
      connection_name: approval.connectionName,
      record_kind: approval.recordKind,
      survivor_id: approval.survivorId,
      loser_ids: approval.loserIds,
    });
    let session: CrmSession;
    let preview;
    try {
      const conn = await mergeConnection(ctx.em, ctx.config, ctx.tenant, approval.connectionName);
      session = new CrmSession(conn, ctx.em, ctx.config);
      preview = await computePreview(session, conn.policy, selection);
    } catch (err) {
      return notApplied(
        ActionReviewCodes.records_unreadable,
        `The records could not be re-read before writing (${logged(ctx, 'records unreadable', err)}); nothing was written.`,
      );
    }
    if (preview.digest !== approval.digest) {
      return notApplied(
        CrmCodes.stale_digest,
        'The records (or the policy version) changed after the preview; nothing was written. Preview again and request a new approval.',
      );
    }
    ctx.heartbeat();

    const writes = preview.projection.writes;
    const wrote = Object.keys(writes).length > 0;
    if (wrote) {
      try {
        await updateRecord(session, selection.kind, selection.survivorId, writes);
      } catch (err) {
        if (neverSent(err))
          return notApplied(
            ActionReviewCodes.crm_unreachable,
            `The CRM could not be reached (${logged(ctx, 'CRM unreachable', err)}); nothing was written.`,
          );
        if (err instanceof CrmApiError && err.httpStatus >= 400 && err.httpStatus < 500) {
          return notApplied(
            ActionReviewCodes.survivor_update_refused,
            `The CRM refused the survivor's update (${logged(ctx, 'survivor update refused', err)}); nothing was written.`,
          );
        }
        throw new EffectOutcomeUnknownError(
          `The survivor's update failed after it was sent (${summary(err)}); check the survivor's fields.`,
          { cause: err },
        );
      }
    }
    ctx.heartbeat();

    let result;
    try {
      result = await mergeRecords(session, {
        kind: selection.kind,
        masterId: selection.survivorId,
        loserIds: selection.loserIds,
      });
    } catch (err) {
      if (!wrote && refusedBeforeChange(err))
        return notApplied(
          ActionReviewCodes.merge_refused,
          `The CRM refused the merge (${logged(ctx, 'merge refused', err)}); nothing was written.`,
        );
      const after = wrote ? "after the survivor's fields were written" : 'after it was sent';
      throw new EffectOutcomeUnknownError(
        `The merge call failed ${after} (${summary(err)}); the merge may have happened: check the records before anything else.`,
        { cause: err },
      );
    }
    if (!result.success) {
      // The status codes are structured; the messages beside them may quote records, so they are logged.
      const codes = [...new Set(result.errors.map((e) => e.statusCode))].join(', ');
      ctx.log.warn('crm merge: the CRM refused the merge', { proposal_id: ctx.proposalId, errors: result.errors });
      if (!wrote)
        return notApplied(
          ActionReviewCodes.merge_refused,
          `The CRM refused the merge (${codes}); nothing was written.`,
        );
      throw new EffectOutcomeUnknownError(
        `The CRM refused the merge after the survivor's fields were written (${codes}); check the survivor's fields.`,
      );
    }
    return {
      outcome: 'executed',
      result: {
        approval_id: approval.approvalId,
        connection_name: approval.connectionName,
        record_kind: selection.kind,
        survivor_id: result.id ?? selection.survivorId,
        merged_record_ids: result.mergedRecordIds,
        updated_related_ids: result.updatedRelatedIds,
        fields_written: writes,
        digest: approval.digest,
      },
    };
  },
};
