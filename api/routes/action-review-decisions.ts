import { z } from 'zod';
import { FINAL_STATUSES, RECONCILED_STATUSES } from '../../shared/action-review/types.js';
import {
  approveAndExecuteProposal,
  decideProposal,
  reconcileVisibleProposal,
} from '../../shared/action-review/decide.js';
import { executeProposal } from '../../shared/action-review/execute.js';
import { ProposalDetailSchema, ProposalIdParams } from '../../shared/action-review/views.js';
import { defineRoute } from '../http/route.js';
import { ExecuteResponse } from '../../shared/action-review/views.js';

const DecideBody = z.object({
  reason: z.string().trim().max(4_000).optional(),
  expected_version: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('`decision_context.expected_version` from the detail you reviewed; 409 if the proposal moved on'),
  expected_payload_digest: z
    .string()
    .max(200)
    .optional()
    .describe('`decision_context.payload_digest` from the detail you reviewed; 409 if it no longer matches'),
});

const ExecutionFields = {
  claimed: z.boolean(),
  final_status: z.enum(FINAL_STATUSES).nullable(),
  execution_refusal_reason: z
    .string()
    .nullable()
    .describe('claim_lost, outcome_not_recorded, or the executor’s not_applied reason'),
  execution_refusal_detail: z.string().nullable(),
  execution_error_detail: z.string().nullable(),
  execution_result: z.record(z.string(), z.unknown()).nullable(),
};

const DecisionResponse = z
  .object({
    success: z.boolean(),
    decided: z.boolean(),
    refusal_reason: z.string().nullable(),
    proposal: ProposalDetailSchema,
    ...Object.fromEntries(Object.entries(ExecutionFields).map(([k, v]) => [k, v.optional()])),
  })
  .describe('Execution fields are present when approving is the action');

const ApproveAndExecuteResponse = z.object({
  success: z.boolean(),
  decided: z.boolean(),
  refusal_reason: z.string().nullable(),
  ...ExecutionFields,
  proposal: ProposalDetailSchema.nullable(),
});

const ReconcileBody = z.object({
  final_status: z
    .enum(RECONCILED_STATUSES)
    .describe('What the person found: the effect was applied (executed) or not (not_applied)'),
  note: z.string().trim().max(4_000).optional(),
});

const ReconcileResponse = z.object({
  resolved: z.boolean(),
  final_status: z.string().nullable(),
  refusal_reason: z.string().nullable(),
  proposal: ProposalDetailSchema,
});

const personAccess = { kind: 'authenticated', permission: 'APPROVE_AGENT_ACTION', principalKinds: ['person'] } as const;
const tags = ['action-review'];

const DECIDE_RESPONSES = {
  200: { description: 'Decided', schema: DecisionResponse },
  403: { description: 'Not a person (agent, system identity, app-only token) or missing APPROVE_AGENT_ACTION' },
  404: { description: 'Unknown, hidden or another tenant’s proposal' },
  409: {
    description:
      '`payload.code`: already_decided or decision_context_mismatch; on approve also proposal_text_unavailable (the statement is stored by reference and cannot be rejoined: reject stays possible)',
  },
};

function decideRoute(kind: 'approve' | 'reject') {
  return defineRoute({
    method: 'post',
    path: `/api/action-review/proposals/:proposal_id/${kind}`,
    operationId: `${kind}ActionReviewProposal`,
    ownShape:
      'Action Review endpoints: the response fields each route lists (success, proposal, decided, claimed, final_status, …)',
    summary:
      kind === 'approve'
        ? 'Approve (person-only); applies the change too when approving is the action'
        : 'Reject (person-only)',
    tags,
    access: personAccess,
    params: ProposalIdParams,
    body: DecideBody,
    responses: DECIDE_RESPONSES,
    handler: async ({ params, body, principal, deps, em }) =>
      decideProposal(deps, em, principal, params.proposal_id, kind, body),
  });
}

export const actionReviewDecisionRoutes = [
  decideRoute('approve'),
  decideRoute('reject'),
  defineRoute({
    method: 'post',
    path: '/api/action-review/proposals/:proposal_id/approve-and-execute',
    operationId: 'approveAndExecuteActionReviewProposal',
    ownShape:
      'Action Review endpoints: the response fields each route lists (success, proposal, decided, claimed, final_status, …)',
    summary: 'Approve and execute in one request (person-only); refusals answer 200 with success false',
    successFalseAt2xx:
      'Action Review endpoints: approve-and-execute, "refusals use HTTP 200 with `success` false" (and an execution not `executed`)',
    tags,
    access: personAccess,
    params: ProposalIdParams,
    body: DecideBody,
    responses: {
      200: { description: 'Outcome, or a refusal with success false', schema: ApproveAndExecuteResponse },
      403: { description: 'Not a person, or missing APPROVE_AGENT_ACTION' },
      404: { description: 'Unknown, hidden or another tenant’s proposal' },
      409: { description: '`proposal_text_unavailable`: the statement is stored by reference and cannot be rejoined' },
    },
    handler: async ({ params, body, principal, deps, em }) =>
      approveAndExecuteProposal(deps, em, principal, params.proposal_id, body),
  }),
  defineRoute({
    method: 'post',
    path: '/api/action-review/proposals/:proposal_id/execute',
    operationId: 'executeActionReviewProposal',
    ownShape:
      'Action Review endpoints: the response fields each route lists (success, proposal, decided, claimed, final_status, …)',
    summary: 'Execute an approved proposal once; a repeat answers the recorded outcome without running the effect',
    successFalseAt2xx:
      'Action Review endpoints: the execute response (`success`, `claimed`, `final_status`, `refusal_reason`); Errors: `execution_origin_required`, execute refused with `claimed` false',
    tags,
    access: { kind: 'authenticated', permission: 'APPROVE_AGENT_ACTION' },
    params: ProposalIdParams,
    responses: {
      200: {
        description: 'Outcome, or a refusal (success false; claimed false before the grant is claimed)',
        schema: ExecuteResponse,
      },
      404: { description: 'Unknown, hidden or another tenant’s proposal' },
    },
    handler: ({ params, principal, deps, em }) =>
      executeProposal(deps, em, principal, params.proposal_id, { surface: 'api', threadId: null }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/action-review/proposals/:proposal_id/reconcile',
    operationId: 'reconcileActionReviewProposal',
    ownShape:
      'Action Review endpoints: the response fields each route lists (success, proposal, decided, claimed, final_status, …)',
    summary: 'Record what a person found after reconciliation_required and resolve with a final_status',
    tags,
    access: personAccess,
    params: ProposalIdParams,
    body: ReconcileBody,
    responses: {
      200: { description: 'Resolved, or refused (resolved false, refusal_reason)', schema: ReconcileResponse },
      403: { description: 'Not a person, or missing APPROVE_AGENT_ACTION' },
      404: { description: 'Unknown, hidden or another tenant’s proposal' },
    },
    handler: async ({ params, body, principal, deps, em }) =>
      reconcileVisibleProposal(deps, em, principal, params.proposal_id, body),
  }),
];
