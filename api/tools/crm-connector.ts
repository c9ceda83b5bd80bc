import { z } from 'zod';
import { loadConnection } from '../../shared/crm/store.js';
import { previewMerge, previewView } from '../../shared/crm/merge-preview.js';
import { checkSelection, MergeSelectionSchema } from '../../shared/crm/merge-selection.js';
import { getRecord, queryRecords, updateRecord } from '../../shared/crm/rest.js';
import { CrmSession } from '../../shared/crm/session.js';
import { FieldName } from '../../shared/crm/survivorship.js';
import { BadRequestError } from '../../shared/errors.js';
import { executeApproval, requestApproval } from '../crm/merge-approvals.js';
import { defineTool } from './registry.js';

/** Bounds on the plain reads and writes, so one call cannot pull or change a whole org. */
export const CRM_TOOL_LIMITS = { maxQueryRows: 200, defaultQueryRows: 50, maxFields: 50, maxSoqlChars: 4_000 } as const;

const Conn = z.string().trim().min(1).max(100);
const RecordId = z.string().regex(/^[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?$/);
const Kind = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/);

const Input = z.discriminatedUnion('action', [
  MergeSelectionSchema.extend({ action: z.literal('preview_merge') }),
  MergeSelectionSchema.extend({ action: z.literal('request_merge_approval'), expected_digest: z.string().max(200).optional(), ttl_seconds: z.number().int().min(1).optional() }),
  z.object({ action: z.literal('execute_merge'), approval_id: z.string().min(1).max(100), connection_name: Conn }),
  z.object({ action: z.literal('query'), connection_name: Conn, soql: z.string().min(1).max(CRM_TOOL_LIMITS.maxSoqlChars), max_rows: z.number().int().min(1).max(CRM_TOOL_LIMITS.maxQueryRows).default(CRM_TOOL_LIMITS.defaultQueryRows) }),
  z.object({ action: z.literal('get_record'), connection_name: Conn, record_kind: Kind, record_id: RecordId, fields: z.array(FieldName).min(1).max(CRM_TOOL_LIMITS.maxFields) }),
  z.object({ action: z.literal('update_record'), connection_name: Conn, record_kind: Kind, record_id: RecordId, fields: z.record(FieldName, z.union([z.string().max(32_000), z.number(), z.boolean(), z.null()])) }),
]);

/**
 * The `crm_connector` tool (group `crm_connector_tools`): merge preview, approval request and
 * execution, plus bounded reads (SELECT only, row cap) and single-record field updates.
 */
export const crmConnectorTool = defineTool({
  name: 'crm_connector',
  description: `CRM: preview_merge, request_merge_approval, execute_merge (approved merges only, once); query (SELECT, at most ${CRM_TOOL_LIMITS.maxQueryRows} rows), get_record, update_record (one record, at most ${CRM_TOOL_LIMITS.maxFields} fields).`,
  input: Input,
  principalKinds: ['agent', 'person'],
  permission: 'view_connections',
  async handler({ input, principal, deps, em }) {
    switch (input.action) {
      case 'preview_merge':
        return previewView(await previewMerge(em, deps.config, principal.tenant, checkSelection(input)));
      case 'request_merge_approval': {
        const { approval, preview } = await requestApproval(deps, em, principal, input);
        return { approval_id: approval.approval_id, expires_at: approval.expires_at, digest: approval.digest, approval, preview };
      }
      case 'execute_merge':
        return executeApproval(deps, em, principal, input.approval_id, input.connection_name, { surface: 'tool_call', threadId: principal.threadId ?? null });
    }
    const session = new CrmSession(await loadConnection(em, deps.config, principal.tenant, input.connection_name), em, deps.config);
    switch (input.action) {
      case 'query': {
        if (!/^\s*select\s/i.test(input.soql)) throw new BadRequestError('Only SELECT queries are allowed.', { fields: [{ field: 'body.arguments.soql', message: 'must start with SELECT' }] });
        const result = await queryRecords(session, input.soql, input.max_rows);
        return { total_size: result.totalSize, returned: result.records.length, truncated: result.truncated, max_rows: input.max_rows, records: result.records };
      }
      case 'get_record':
        return getRecord(session, input.record_kind, input.record_id, input.fields);
      case 'update_record': {
        const n = Object.keys(input.fields).length;
        if (n === 0 || n > CRM_TOOL_LIMITS.maxFields) throw new BadRequestError(`Update 1 to ${CRM_TOOL_LIMITS.maxFields} fields.`, { fields: [{ field: 'body.arguments.fields', message: 'size' }] });
        await updateRecord(session, input.record_kind, input.record_id, input.fields);
        return { updated: true, record_id: input.record_id, fields: Object.keys(input.fields) };
      }
    }
  },
});
