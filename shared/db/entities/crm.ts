import { column, table, type Row } from './table.js';

/** A saved CRM connection. Secrets and cached tokens are sealed (AES-256-GCM); `settings` holds no secret. */
export const CrmConnectionEntity = table('CrmConnectionRow', 'crm_connections', {
  id: column.string().primary(),
  tenant: column.string(),
  name: column.string(),
  type: column.string(),
  authMode: column.string(),
  settings: column.json<Record<string, unknown>>(),
  secretsSealed: column.text(),
  mergeEnabled: column.boolean(),
  policy: column.json<Record<string, unknown>>().nullable(),
  egressHosts: column.json<string[]>(),
  testResult: column.json<Record<string, unknown>>().nullable(),
  tokensSealed: column.text().nullable(),
  oauthPendingSealed: column.text().nullable(),
  createdBy: column.string(),
  createdAt: column.date(),
  updatedAt: column.date(),
});
export type CrmConnectionRow = Row<typeof CrmConnectionEntity>;

/** A merge approval: the bound selection, digest and lifetime. Decision and execution live on its Action Review proposal (same id). */
export const CrmMergeApprovalEntity = table('CrmMergeApprovalRow', 'crm_merge_approvals', {
  approvalId: column.string().primary(),
  tenant: column.string(),
  connectionName: column.string(),
  recordKind: column.string(),
  survivorId: column.string(),
  loserIds: column.json<string[]>(),
  digest: column.string(),
  policyVersion: column.string(),
  projection: column.json<Record<string, unknown>>(),
  ttlSeconds: column.integer(),
  expiresAt: column.date(),
  /** `open` or `expired`; expiry is recorded, never a deleted row. */
  status: column.string(),
  expiredAt: column.date().nullable(),
  executionStartedAt: column.date().nullable(),
  requestedBy: column.json<Record<string, unknown>>(),
  approvedBy: column.json<Record<string, unknown>>().nullable(),
  createdAt: column.date(),
});
export type CrmMergeApprovalRow = Row<typeof CrmMergeApprovalEntity>;
