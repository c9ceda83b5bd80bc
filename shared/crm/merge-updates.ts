import type { UpdateDefinition } from '@temporalio/common';
import type { PlatformError } from '../errors.js';
import {
  CRM_MERGE_REFUSAL_TYPE,
  CRM_MERGE_REFUSALS,
  crmMergeWorkflowId,
  type CrmMergeRefusalCode,
} from '../../workflows/crm-merge-definitions.js';
import type { AppDeps } from '../app-deps.js';
import {
  refusalToHttp,
  sendRefusableUpdate,
  type RefusableAnswer,
  type RefusalOf,
  type RefusalTable,
} from '../temporal/refusable-update.js';

/** CRM merge approvals' refusals: the code table and failure type the approval workflow's validators use. */
export const CRM_MERGE_REFUSAL_TABLE: RefusalTable<CrmMergeRefusalCode> = {
  failureType: CRM_MERGE_REFUSAL_TYPE,
  statuses: CRM_MERGE_REFUSALS,
};
export type MergeRefusal = RefusalOf<CrmMergeRefusalCode>;
export type MergeUpdateAnswer<T> = RefusableAnswer<T, CrmMergeRefusalCode>;

/** Sends one update to the approval's workflow; the validator's refusal and "already ended" become data. */
export function sendMergeUpdate<T, A>(
  deps: AppDeps,
  approvalId: string,
  update: UpdateDefinition<T, [A]>,
  arg: A,
): Promise<MergeUpdateAnswer<T>> {
  return sendRefusableUpdate(deps, CRM_MERGE_REFUSAL_TABLE, crmMergeWorkflowId(approvalId), update, arg);
}

/** A CRM merge refusal as an HTTP error (approve; execute answers its refusals in the body). */
export function mergeRefusalError(refusal: MergeRefusal): PlatformError {
  return refusalToHttp(CRM_MERGE_REFUSAL_TABLE, refusal);
}
