import type { MikroORM } from '@mikro-orm/postgresql';
import type { PrincipalRef } from '../shared/auth/principal.js';
import { sql } from '../shared/db/sql.js';

/** Projection writes of the CRM merge approval workflow (idempotent by approval id). */
export function createCrmMergeActivities(deps: { orm: MikroORM }) {
  return {
    async recordMergeApproved({
      approvalId,
      approvedBy,
    }: {
      approvalId: string;
      approvedBy: PrincipalRef;
    }): Promise<void> {
      await sql(deps.orm.em.fork(), `update crm_merge_approvals set approved_by = ?::jsonb where approval_id = ?`, [
        JSON.stringify(approvedBy),
        approvalId,
      ]);
    },

    /**
     * Records expiry unless an execution already started (the executor's claim and this update lock
     * the same row, so exactly one of them wins). Answers whether the approval is now expired.
     */
    async expireMergeApproval({ approvalId }: { approvalId: string }): Promise<{ expired: boolean }> {
      const rows = await sql<{ status: string }>(
        deps.orm.em.fork(),
        `update crm_merge_approvals set status = 'expired', expired_at = coalesce(expired_at, now())
         where approval_id = ? and execution_started_at is null returning status`,
        [approvalId],
      );
      return { expired: rows.length > 0 };
    },
  };
}

export type CrmMergeActivities = ReturnType<typeof createCrmMergeActivities>;
