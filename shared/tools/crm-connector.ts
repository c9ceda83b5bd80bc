import { z } from 'zod';
import { previewMerge, previewView } from '../crm/merge-preview.js';
import { checkSelection, MergeSelectionSchema } from '../crm/merge-selection.js';
import { executeApproval, requestApproval } from '../crm/merge-approvals.js';
import {
  CRM_TOOL_LIMITS,
  RecordActionInputs,
  runRecordAction,
  WRITABLE_KINDS,
  WRITE_PERMISSION,
} from '../crm/record-tools.js';
import { defineTool } from './registry.js';
import { CrmConnectorResult } from './results.js';

const Input = z.discriminatedUnion('action', [
  MergeSelectionSchema.extend({ action: z.literal('preview_merge') }).strict(),
  MergeSelectionSchema.extend({
    action: z.literal('request_merge_approval'),
    expected_digest: z.string().max(200).optional(),
    ttl_seconds: z.number().int().min(1).optional(),
  }).strict(),
  z.strictObject({
    action: z.literal('execute_merge'),
    approval_id: z.string().min(1).max(100),
    connection_name: z.string().trim().min(1).max(100),
  }),
  ...RecordActionInputs,
]);

/**
 * The `crm_connector` tool (group `crm_connector_tools`): merge preview, approval request and
 * execution, plus bounded reads (SELECT only, row cap) and single-record field updates (people only).
 */
export const crmConnectorTool = defineTool({
  name: 'crm_connector',
  description:
    `CRM: preview_merge, request_merge_approval, execute_merge (approved merges only, once); ` +
    `query (SELECT only, max_rows default ${CRM_TOOL_LIMITS.defaultQueryRows}, at most ${CRM_TOOL_LIMITS.maxQueryRows}; truncated tells when more matched), ` +
    `get_record (1 to ${CRM_TOOL_LIMITS.maxFields} fields), ` +
    `update_record (people with ${WRITE_PERMISSION} only, agents go through Action Review; kinds ${WRITABLE_KINDS.join(', ')}; ` +
    `1 to ${CRM_TOOL_LIMITS.maxFields} fields, values up to ${CRM_TOOL_LIMITS.maxValueChars} characters, ${CRM_TOOL_LIMITS.maxUpdateChars} in all).`,
  input: Input,
  result: CrmConnectorResult,
  principalKinds: ['agent', 'person'],
  // The REST routes' permissions, action by action: reading a connection is not approving a merge.
  permission: (input) => (input.action === 'execute_merge' ? 'APPROVE_AGENT_ACTION' : 'view_connections'),
  async handler({ input, principal, deps, em }) {
    switch (input.action) {
      case 'preview_merge':
        return previewView(await previewMerge(em, deps.config, principal.tenant, checkSelection(input)));
      case 'request_merge_approval': {
        const { approval, preview } = await requestApproval(deps, em, principal, input);
        return {
          approval_id: approval.approval_id,
          expires_at: approval.expires_at,
          digest: approval.digest,
          approval,
          preview,
        };
      }
      case 'execute_merge':
        return executeApproval(deps, em, principal, input.approval_id, input.connection_name, {
          surface: 'tool_call',
          threadId: principal.threadId ?? null,
        });
      default:
        return runRecordAction(input, principal, deps, em);
    }
  },
});
