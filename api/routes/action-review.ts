import { z } from 'zod';
import { ACTION_TYPES, ACTION_TYPE_DESCRIPTION, type ActionType } from '../../shared/action-review/action-types.js';
import { PayloadSchemas } from '../../shared/action-review/payloads.js';
import { PROPOSAL_STATUSES } from '../../shared/action-review/types.js';
import { createProposal, createProposalIdempotently } from '../../shared/action-review/create.js';
import { FULL_DETAIL, proposalDetail } from '../../shared/action-review/detail.js';
import { listVisibleProposals } from '../../shared/action-review/list.js';
import {
  ProposalDetailSchema,
  ProposalIdParams,
  ProposalRowViewSchema,
  rowView,
} from '../../shared/action-review/views.js';
import { findVisibleProposal, THREAD_SUBJECT } from '../../shared/action-review/subject-probes.js';
import { withStatements } from '../../shared/action-review/statements.js';
import { defineRoute, queryBoolean, successEnvelope } from '../http/route.js';
import { actionReviewDecisionRoutes } from './action-review-decisions.js';

const ProposalFields = z.object({
  expected_effect: z.string().trim().min(1).max(20_000).describe('What the reviewer should expect to happen'),
  requested_statement: z.string().max(100_000).optional(),
  bot_id: z.string().trim().min(1).max(200).optional(),
  thread_id: z.string().trim().min(1).max(200).optional().describe('The conversation the decision is handed back into'),
  subject: z
    .object({ kind: z.enum([THREAD_SUBJECT]), id: z.string().min(1).max(200) })
    .optional()
    .describe('Must be visible to the caller'),
  execution_origin: z
    .enum(['any', 'proposal_thread'])
    .optional()
    .describe(
      '`proposal_thread` (default with a thread): tool-call executions only from that thread; people may always execute from the inbox',
    ),
});

const proposalVariant = <T extends ActionType>(actionType: T) =>
  ProposalFields.extend({
    action_type: z.literal(actionType).describe(ACTION_TYPE_DESCRIPTION),
    payload: PayloadSchemas[actionType] as (typeof PayloadSchemas)[T],
  });

/**
 * A create's optional idempotency key (printable ASCII, 1 to 255 characters): a retry with the same key and the
 * same proposal answers the proposal the first request created, so a create whose answer was lost (a dropped
 * connection, an API replica that died) can be sent again without proposing twice.
 */
const CreateProposalHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, 'printable ASCII without spaces, 1 to 255 characters')
    .optional()
    .describe(
      'Names this create for retries: the same key with the same body answers the proposal created first ' +
        '(also while that request is still creating it); with a different body 409 `idempotency_key_reused`. ' +
        "Keys are the caller's own: another caller's same key names another proposal.",
    ),
});

/**
 * One variant per action type, each with that type's payload schema, so the published document is a
 * `oneOf` discriminated by `action_type` and a request valid against it is one the validator accepts.
 */
export const CreateProposalBody = z.discriminatedUnion(
  'action_type',
  ACTION_TYPES.map(proposalVariant) as unknown as [
    ReturnType<typeof proposalVariant<ActionType>>,
    ...ReturnType<typeof proposalVariant<ActionType>>[],
  ],
);

const csv = <T extends readonly [string, ...string[]]>(values: T) =>
  z
    .string()
    .meta({
      pattern: `^((${values.map((v) => v.replace(/\./g, '\\.')).join('|')})(,(${values.map((v) => v.replace(/\./g, '\\.')).join('|')}))*)?$`,
    })
    .optional()
    .transform((v) =>
      v
        ? v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : [],
    )
    .pipe(z.array(z.enum(values)));

const ListQuery = z.object({
  status: csv(PROPOSAL_STATUSES).describe('Comma-separated statuses'),
  action_type: csv(ACTION_TYPES).describe(`Comma-separated action types. ${ACTION_TYPE_DESCRIPTION}`),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  dossier_scope: z.enum(['headline', 'full']).default('headline'),
  include_statement: queryBoolean(false),
});

const ListResponse = z.object({
  success: z.literal(true),
  proposals: z.array(ProposalRowViewSchema),
  total_count: z.number().int().describe('Visible proposals among those scanned'),
  offset: z.number().int(),
  limit: z.number().int(),
  truncated: z
    .boolean()
    .describe('More proposals exist than were looked at (probe budget of 100 subjects, or the scan ceiling)'),
  incomplete_reason: z
    .enum(['probe_failure', 'probe_budget', 'handler_unavailable', 'row_unreadable', 'scan_ceiling'])
    .nullable(),
  visible_threads_only: z
    .boolean()
    .describe('Always true: only proposals whose conversation thread and subject the caller may see'),
});

const DetailQuery = z.object({
  include_events: queryBoolean(true),
  view: z.enum(['full', 'summary']).default('full'),
  include_package_signability: queryBoolean(false),
  include_statement: queryBoolean(false),
});

const access = { kind: 'authenticated', permission: 'APPROVE_AGENT_ACTION' } as const;
const tags = ['action-review'];

export const actionReviewRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/action-review/proposals',
    operationId: 'createActionReviewProposal',
    summary: 'Create a proposal (starts workflow action-review/<proposal_id>)',
    description: `The body is one variant per action type, each with its payload schema. ${ACTION_TYPE_DESCRIPTION}`,
    tags,
    access,
    headers: CreateProposalHeaders,
    body: CreateProposalBody,
    successStatus: 201,
    responses: {
      201: {
        description:
          'Created, status requested; with an `Idempotency-Key` already used for the same proposal, that proposal ' +
          'again (response header `Idempotent-Replayed: true`)',
        schema: successEnvelope(ProposalDetailSchema),
        headers: {
          'Idempotent-Replayed': {
            description:
              '`true` when this answer is the proposal an earlier create with the same key made (absent otherwise)',
            schema: z.literal('true'),
          },
        },
      },
      404: { description: 'The subject or thread is not visible to the caller' },
      409: {
        description:
          'The `Idempotency-Key` was used before for a different create of the caller (`conflict`, ' +
          '`payload.code` `idempotency_key_reused`, `payload.proposal_id`); nothing written',
      },
      413: { description: 'The stored form of the proposal exceeds ACTION_REVIEW_MAX_PROPOSAL_BYTES' },
    },
    handler: async ({ headers, body, principal, deps, em, koa }) => {
      const input = {
        actionType: body.action_type,
        payload: body.payload,
        expectedEffect: body.expected_effect,
        requestedStatement: body.requested_statement ?? null,
        botId: body.bot_id ?? null,
        threadId: body.thread_id ?? null,
        subject: body.subject ?? null,
        executionOrigin: body.execution_origin ?? null,
      };
      // Validated by the route's `headers` schema before the handler runs.
      const key = headers['idempotency-key'] as string | undefined;
      let row;
      if (key === undefined) row = await createProposal(deps, em, principal, input);
      else {
        const created = await createProposalIdempotently(deps, em, principal, input, key);
        row = created.row;
        if (created.replayed) koa.set('Idempotent-Replayed', 'true');
      }
      return { success: true, data: await proposalDetail(em, principal, row, FULL_DETAIL, deps.config) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/action-review/proposals',
    operationId: 'listActionReviewProposals',
    ownShape:
      'Action Review endpoints: the inbox list answers success, proposals, total_count, offset, limit, truncated, incomplete_reason, visible_threads_only',
    summary: 'The inbox: proposals visible to the caller, newest first',
    tags,
    access,
    query: ListQuery,
    responses: { 200: { description: 'One page', schema: ListResponse } },
    handler: async ({ query, principal, em }) => {
      const list = await listVisibleProposals(em, principal, {
        status: query.status,
        actionType: query.action_type,
        offset: query.offset,
        limit: query.limit,
      });
      const rows = query.include_statement ? await withStatements(em, list.rows) : list.rows;
      return {
        success: true,
        proposals: rows.map((r) =>
          rowView(r, { scope: query.dossier_scope, includeStatement: query.include_statement }),
        ),
        total_count: list.totalCount,
        offset: query.offset,
        limit: query.limit,
        truncated: list.truncated,
        incomplete_reason: list.incompleteReason,
        visible_threads_only: true,
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/action-review/proposals/:proposal_id',
    operationId: 'getActionReviewProposal',
    summary: 'One proposal with its event trail',
    tags,
    access,
    params: ProposalIdParams,
    query: DetailQuery,
    responses: {
      200: {
        description: 'The proposal',
        schema: successEnvelope(ProposalDetailSchema),
      },
      404: { description: 'Unknown, hidden or another tenant’s proposal' },
      409: {
        description:
          '`proposal_text_unavailable` (with include_statement=true): the statement is stored by reference and cannot be rejoined',
      },
    },
    handler: async ({ params, query, principal, em, deps }) => {
      const row = await findVisibleProposal(em, principal, params.proposal_id);
      const proposal = await proposalDetail(
        em,
        principal,
        row,
        {
          includeEvents: query.include_events,
          summary: query.view === 'summary',
          includeStatement: query.include_statement,
          includePackageSignability: query.include_package_signability,
        },
        deps.config,
      );
      return { success: true, data: proposal };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/action-review/proposals/:proposal_id/status',
    operationId: 'getActionReviewProposalStatus',
    summary: 'The compact status view (list-row shape with effective_status)',
    tags,
    access,
    params: ProposalIdParams,
    query: z.object({ include_statement: queryBoolean(false) }),
    responses: {
      200: { description: 'Status', schema: successEnvelope(ProposalRowViewSchema) },
      404: { description: 'Unknown, hidden or another tenant’s proposal' },
    },
    handler: async ({ params, query, principal, em }) => {
      const found = await findVisibleProposal(em, principal, params.proposal_id);
      const [row] = query.include_statement ? await withStatements(em, [found]) : [found];
      return { success: true, data: rowView(row!, { scope: 'full', includeStatement: query.include_statement }) };
    },
  }),
  ...actionReviewDecisionRoutes,
];
