import { EntitySchema } from '@mikro-orm/core';

/** A flow of a managed source as last promoted (issue 12): the content hash and commit it was promoted at. */
export interface ManagedFlowRow {
  sourceId: string;
  flowName: string;
  tenant: string;
  contentHash: string;
  commitSha: string;
  manifestPath: string;
  promotedAt: Date;
  promotedBy: string;
}

export const ManagedFlowEntity = new EntitySchema<ManagedFlowRow>({
  name: 'ManagedFlowRow',
  tableName: 'managed_flows',
  properties: {
    sourceId: { type: 'string', primary: true },
    flowName: { type: 'string', primary: true },
    tenant: { type: 'string' },
    contentHash: { type: 'string' },
    commitSha: { type: 'string' },
    manifestPath: { type: 'text' },
    promotedAt: { type: 'Date' },
    promotedBy: { type: 'string' },
  },
});
