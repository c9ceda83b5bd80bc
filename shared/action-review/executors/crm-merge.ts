import { notApplied, type Executor } from './types.js';

/** Wired to the CRM merge capability once that exists; until then it refuses before writing anything. */
export const crmMergeExecutor: Executor<'crm.merge.v1'> = {
  actionType: 'crm.merge.v1',
  execute: async () =>
    notApplied('crm_merge_unavailable', 'The CRM merge capability is not available in this deployment yet; nothing was written to the CRM.'),
};
