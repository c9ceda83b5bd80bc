import { column, table, type Row } from './table.js';

/** A flow of a managed source as last promoted (issue 12): the content hash and commit it was promoted at. */
export const ManagedFlowEntity = table('ManagedFlowRow', 'managed_flows', {
  sourceId: column.string().primary(),
  flowName: column.string().primary(),
  tenant: column.string(),
  contentHash: column.string(),
  commitSha: column.string(),
  manifestPath: column.text(),
  promotedAt: column.date(),
  promotedBy: column.string(),
});
export type ManagedFlowRow = Row<typeof ManagedFlowEntity>;
