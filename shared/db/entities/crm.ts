import { EntitySchema } from '@mikro-orm/core';

/** A saved CRM connection. Secrets and cached tokens are sealed (AES-256-GCM); `settings` holds no secret. */
export interface CrmConnectionRow {
  id: string;
  tenant: string;
  name: string;
  type: string;
  authMode: string;
  settings: Record<string, unknown>;
  secretsSealed: string;
  mergeEnabled: boolean;
  policy: Record<string, unknown> | null;
  egressHosts: string[];
  testResult: Record<string, unknown> | null;
  tokensSealed: string | null;
  oauthPendingSealed: string | null;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export const CrmConnectionEntity = new EntitySchema<CrmConnectionRow>({
  name: 'CrmConnectionRow',
  tableName: 'crm_connections',
  properties: {
    id: { type: 'string', primary: true },
    tenant: { type: 'string' },
    name: { type: 'string' },
    type: { type: 'string' },
    authMode: { type: 'string' },
    settings: { type: 'json' },
    secretsSealed: { type: 'text' },
    mergeEnabled: { type: 'boolean' },
    policy: { type: 'json', nullable: true },
    egressHosts: { type: 'json' },
    testResult: { type: 'json', nullable: true },
    tokensSealed: { type: 'text', nullable: true },
    oauthPendingSealed: { type: 'text', nullable: true },
    createdBy: { type: 'string' },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});

/** A merge approval: the bound selection, digest and lifetime. Decision and execution live on its Action Review proposal (same id). */
export interface CrmMergeApprovalRow {
  approvalId: string;
  tenant: string;
  connectionName: string;
  recordKind: string;
  survivorId: string;
  loserIds: string[];
  digest: string;
  policyVersion: string;
  projection: Record<string, unknown>;
  ttlSeconds: number;
  expiresAt: Date;
  /** `open` or `expired`; expiry is recorded, never a deleted row. */
  status: string;
  expiredAt: Date | null;
  executionStartedAt: Date | null;
  requestedBy: Record<string, unknown>;
  approvedBy: Record<string, unknown> | null;
  createdAt: Date;
}

export const CrmMergeApprovalEntity = new EntitySchema<CrmMergeApprovalRow>({
  name: 'CrmMergeApprovalRow',
  tableName: 'crm_merge_approvals',
  properties: {
    approvalId: { type: 'string', primary: true },
    tenant: { type: 'string' },
    connectionName: { type: 'string' },
    recordKind: { type: 'string' },
    survivorId: { type: 'string' },
    loserIds: { type: 'json' },
    digest: { type: 'string' },
    policyVersion: { type: 'string' },
    projection: { type: 'json' },
    ttlSeconds: { type: 'integer' },
    expiresAt: { type: 'Date' },
    status: { type: 'string' },
    expiredAt: { type: 'Date', nullable: true },
    executionStartedAt: { type: 'Date', nullable: true },
    requestedBy: { type: 'json' },
    approvedBy: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
  },
});
