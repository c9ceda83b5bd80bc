import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import { ConflictError, ForbiddenError, PlatformError } from '../../shared/errors.js';
import {
  CRM_MERGE_REFUSAL_TYPE,
  CRM_MERGE_REFUSALS,
  crmMergeWorkflowId,
  type CrmMergeRefusalCode,
} from '../../workflows/crm-merge-definitions.js';
import { isClosedWorkflow } from '../action-review/updates.js';
import type { AppDeps } from '../deps.js';

export type MergeUpdateAnswer<T> =
  | { ok: true; value: T }
  | { ok: false; refusal: { code: CrmMergeRefusalCode; message: string } }
  | { ok: false; closed: true };

const isRefusal = (v: unknown): v is CrmMergeRefusalCode =>
  typeof v === 'string' && Object.hasOwn(CRM_MERGE_REFUSALS, v);
/** Sends one update to the approval's workflow; the validator's refusal and "already ended" become data. */
export async function sendMergeUpdate<T, A>(
  deps: AppDeps,
  approvalId: string,
  update: UpdateDefinition<T, [A]>,
  arg: A,
): Promise<MergeUpdateAnswer<T>> {
  try {
    return {
      ok: true,
      value: await deps.temporal.workflow
        .getHandle(crmMergeWorkflowId(approvalId))
        .executeUpdate(update, { args: [arg] }),
    };
  } catch (err) {
    if (
      err instanceof WorkflowUpdateFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === CRM_MERGE_REFUSAL_TYPE
    ) {
      const code = err.cause.details?.[0];
      if (isRefusal(code)) return { ok: false, refusal: { code, message: err.cause.message } };
    }
    if (isClosedWorkflow(err)) return { ok: false, closed: true };
    throw err;
  }
}

/** The one place a CRM merge refusal becomes an HTTP error. */
export function mergeRefusalError(refusal: { code: CrmMergeRefusalCode; message: string }): PlatformError {
  const payload = { code: refusal.code };
  const status = CRM_MERGE_REFUSALS[refusal.code];
  if (status === 403) return new ForbiddenError(refusal.message, payload);
  if (status === 410) return new PlatformError('gone', refusal.message, payload);
  return new ConflictError(refusal.message, payload);
}
