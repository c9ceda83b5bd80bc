import { z } from 'zod';
import { previewMerge, previewView } from '../../shared/crm/merge-preview.js';
import { checkSelection, MergeSelectionSchema } from '../../shared/crm/merge-selection.js';
import { listApprovals } from '../../shared/crm/approval-list.js';
import { ApprovalViewSchema } from '../../shared/crm/approval-views.js';
import {
  approvalWithProposal,
  executeApproval,
  findApproval,
  requestApproval,
} from '../../shared/crm/merge-approvals.js';
import { approveApproval, rejectApproval } from '../../shared/crm/merge-decisions.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { workflowUrl } from '../../shared/temporal/workflow-url.js';
import { ExecuteResponse, PreviewSchema } from '../../shared/crm/approval-views.js';

const tags = ['crm-merge'];
const WorkflowUrl = z
  .string()
  .nullable()
  .describe('The Temporal UI page of the crm-merge workflow; null when TEMPORAL_UI_URL is not configured');

const IdParams = z.object({ approval_id: z.string().min(1).max(100) });
const view = { kind: 'authenticated', permission: 'view_connections' } as const;
const RequestBody = MergeSelectionSchema.extend({
  expected_digest: z
    .string()
    .max(200)
    .optional()
    .describe('The digest from a preview; a mismatch with a fresh preview answers 409 stale_digest'),
  ttl_seconds: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Approval lifetime; default 3600, capped by CRM_MAX_APPROVAL_TTL_SECONDS (86400)'),
});
const rules =
  'Kinds Lead, Contact, Account; one survivor; one or two losers; distinct ids; merge_enabled on the connection. A refusal names the rule (payload.rule).';

const personOnly = { kind: 'authenticated', permission: 'APPROVE_AGENT_ACTION', principalKinds: ['person'] } as const;

/** Approve and reject: the same person-only guard, body and refusals; both decide the crm.merge.v1 proposal. */
/** The refusals of a decision: only approving is bound to the lifetime (a rejection stays possible after it). */
function decisionRefusals(approve: boolean): Record<number, { description: string }> {
  const refusals: Record<number, { description: string }> = {
    403: { description: 'Not a person, or missing APPROVE_AGENT_ACTION' },
    404: { description: 'Unknown, hidden or another tenant’s approval' },
    409: { description: 'already_decided' },
  };
  if (approve) refusals[410] = { description: 'approval_expired' };
  return refusals;
}

const DECISION_DESCRIPTIONS = {
  approve: 'Needs APPROVE_AGENT_ACTION. Also approves the crm.merge.v1 proposal.',
  reject:
    'Needs APPROVE_AGENT_ACTION. Also rejects the crm.merge.v1 proposal (the decision and reason are handed back to a requesting agent); executing afterwards is refused. Allowed at any point of the lifetime.',
};

const DECIDE = { approve: approveApproval, reject: rejectApproval };

function decisionRoute(kind: 'approve' | 'reject') {
  const approve = kind === 'approve';
  return defineRoute({
    method: 'post',
    path: `/api/crm/merge/approvals/:approval_id/${kind}`,
    operationId: approve ? 'approveCrmMerge' : 'rejectCrmMerge',
    summary: `${approve ? 'Approve' : 'Reject'} (genuinely authenticated people only; agents, the system identity and app-only tokens are refused)`,
    description: DECISION_DESCRIPTIONS[kind],
    tags,
    access: personOnly,
    params: IdParams,
    body: z.object({ reason: z.string().trim().max(4_000).optional() }),
    responses: {
      200: {
        description: approve ? 'Approved' : 'Rejected',
        schema: successEnvelope(z.object({ approval: ApprovalViewSchema })),
      },
      ...decisionRefusals(approve),
    },
    handler: async ({ params, body, deps, em, principal }) => ({
      success: true as const,
      data: { approval: await DECIDE[kind](deps, em, principal, params.approval_id, body.reason || null) },
    }),
  });
}

export const crmMergeRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/crm/merge/preview',
    operationId: 'previewCrmMerge',
    summary: 'Project the merged survivor from fresh records with the survivorship policy; nothing is written',
    description: `${rules} The digest is SHA-256 over connection, kind, survivor, losers (in order), policy version and the records' LastModifiedDate stamps. Needs view_connections.`,
    tags,
    access: view,
    body: MergeSelectionSchema,
    responses: {
      200: {
        description: 'Projection and digest',
        schema: successEnvelope(PreviewSchema),
      },
      400: { description: 'A merge rule is broken (payload.rule)' },
      404: { description: 'No connection with that name in your tenant (`not_found`)' },
      409: { description: 'merge_not_enabled' },
    },
    handler: async ({ body, deps, em, principal }) => ({
      success: true,
      data: previewView(await previewMerge(em, deps.config, principal.tenant, checkSelection(body))),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/crm/merge/approvals',
    operationId: 'requestCrmMergeApproval',
    summary: 'Request approval: starts workflow crm-merge/<approval_id> holding the approval for its lifetime',
    description: `${rules} The approval also appears in Action Review as a crm.merge.v1 proposal with the same id (one inbox). Expiry is a recorded state. Needs view_connections.`,
    tags,
    access: view,
    body: RequestBody,
    successStatus: 201,
    responses: {
      201: {
        description: 'Awaiting approval',
        schema: successEnvelope(
          z.object({
            approval_id: z.string(),
            expires_at: z.string(),
            digest: z.string(),
            ttl_seconds: z.number().int(),
            workflow_url: WorkflowUrl,
            approval: ApprovalViewSchema,
            preview: PreviewSchema,
          }),
        ),
      },
      400: { description: 'A merge rule is broken' },
      404: { description: 'No connection with that name in your tenant (`not_found`)' },
      409: { description: 'stale_digest or merge_not_enabled' },
    },
    handler: async ({ body, deps, em, principal }) => {
      const { approval, preview } = await requestApproval(deps, em, principal, body);
      return {
        success: true,
        data: {
          approval_id: approval.approval_id,
          expires_at: approval.expires_at,
          digest: approval.digest,
          ttl_seconds: approval.ttl_seconds,
          workflow_url: workflowUrl(deps.config, approval.workflow_id),
          approval,
          preview,
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/crm/merge/approvals',
    operationId: 'listCrmMergeApprovals',
    summary: 'Approvals the caller may see, newest first; the read performs on-demand stale-claim recovery',
    description:
      'Visibility is Action Review’s: an approval whose crm.merge.v1 proposal the caller cannot see (e.g. raised in another person’s private thread) is left out. An open approval past its lifetime whose workflow is gone is released as expired; an execution claim whose workflow died is marked reconciliation_required.',
    tags,
    access: view,
    query: z.object({
      offset: z.coerce.number().int().min(0).default(0),
      limit: z.coerce.number().int().min(1).max(200).default(50),
    }),
    responses: {
      200: {
        description: 'Approvals',
        schema: successEnvelope(
          z.object({
            approvals: z.array(ApprovalViewSchema),
            total_count: z.number().int().describe('Visible approvals'),
            offset: z.number().int(),
            limit: z.number().int(),
            truncated: z
              .boolean()
              .describe('True when approvals exist that were not looked at (probe budget or scan ceiling)'),
            incomplete_reason: z
              .string()
              .nullable()
              .describe('Why the list is incomplete, as in the Action Review inbox'),
            recovered_stale_claims: z.number().int(),
          }),
        ),
      },
    },
    handler: async ({ query, deps, em, principal }) => ({
      success: true,
      data: await listApprovals(deps, em, principal, query),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/crm/merge/approvals/:approval_id',
    operationId: 'getCrmMergeApproval',
    summary: 'One approval',
    tags,
    access: view,
    params: IdParams,
    responses: {
      200: {
        description: 'Approval',
        schema: successEnvelope(z.object({ approval: ApprovalViewSchema, workflow_url: WorkflowUrl })),
      },
      404: { description: 'Unknown, hidden or another tenant’s approval' },
    },
    handler: async ({ params, em, principal, deps }) => {
      const approval = await approvalWithProposal(em, await findApproval(em, principal, params.approval_id));
      return { success: true, data: { approval, workflow_url: workflowUrl(deps.config, approval.workflow_id) } };
    },
  }),
  decisionRoute('approve'),
  decisionRoute('reject'),
  defineRoute({
    method: 'post',
    path: '/api/crm/merge/approvals/:approval_id/execute',
    operationId: 'executeCrmMerge',
    summary:
      'Execute once: digest re-checked on fresh records, survivor fields PATCHed per policy, then the SOAP merge',
    description:
      'Needs APPROVE_AGENT_ACTION. Changed records answer final_status not_applied (stale_digest) with nothing written; an unknown outcome becomes reconciliation_required and is never retried.',
    tags,
    access: { kind: 'authenticated', permission: 'APPROVE_AGENT_ACTION' },
    params: IdParams,
    body: z.object({
      connection_name: z.string().min(1).max(100).describe('Must equal the connection the approval is bound to'),
    }),
    ownShape: 'Action Review endpoints: the execute response (success, claimed, final_status, refusal_reason, …)',
    successFalseAt2xx:
      'Action Review endpoints: the execute response (`success`, `claimed`, `final_status`, `refusal_reason`), which a CRM merge execute answers too',
    responses: {
      200: {
        description:
          'Outcome (a repeat answers the recorded one), or a refusal before anything is claimed, answered as Action Review’s execute answers it: success false, claimed false, refusal_reason not_approved, connection_mismatch, approval_expired or execution_origin_required, refusal_detail',
        schema: ExecuteResponse,
      },
      404: { description: 'Unknown, hidden or another tenant’s approval' },
    },
    handler: async ({ params, body, deps, em, principal }) =>
      executeApproval(deps, em, principal, params.approval_id, body.connection_name, {
        surface: 'api',
        threadId: null,
      }),
  }),
];
