import { z } from 'zod';
import { callerOf } from '../../shared/demo/versions.js';
import { prepareTicketRca, resetTicketRca, ticketRcaStatus } from '../../shared/demo/ticket-rca-service.js';
import { defineRoute, successEnvelope, type AnyRoute } from '../http/route.js';
import { CODE_AGENT_RUN_STATUSES } from '../../shared/code-agent/runs.js';
import { TICKET_RCA_FAILURE_CODES, TICKET_RCA_STATES } from '../../workflows/ticket-rca-definitions.js';

/**
 * The ticket-RCA presenter vignette (spec: "Demo and presenter routes", Errors: the ticket-vignette
 * codes): `POST /api/demo/ticket-rca/prepare`, `POST /api/demo/ticket-rca/reset`,
 * `GET /api/demo/ticket-rca/status`. Access `presenter` (the internal token, or a person with
 * `present_demos` and the role `staff` or `admin`). Logic in shared/demo/ticket-rca-service.ts.
 */
const tags = ['demo'];
const OWN_SHAPE =
  'Errors: the ticket-vignette codes (prepare and reset failures answer 200 `success` false with `error.code`)';
const PresenterSessionId = z
  .string()
  .min(1)
  .max(128)
  .describe('The presenter session this action belongs to (shared field of the presenter routes)');

const Session = z
  .object({
    presenter_session_id: z.string(),
    state: z.enum(TICKET_RCA_STATES),
    attempt: z.number().int().describe('How many times this session was prepared'),
    project_key: z.string().nullable(),
    issue_type: z.string().nullable(),
    demo_version_id: z.string().nullable(),
    ticket_key: z.string().nullable().describe('The ticket filed in the tracker'),
    run_id: z.string().nullable().describe('The code-agent run analysing it'),
    run_status: z.enum(CODE_AGENT_RUN_STATUSES).nullable(),
    error: z
      .object({ code: z.string(), message: z.string() })
      .nullable()
      .describe(
        'Why the session `failed` (a tracker or launcher code, `CODE_AGENT_RUN_FAILED`), or `TICKET_COMMENT_FAILED` on a `completed` one whose analysis could not be posted',
      ),
    prepared_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'TicketRcaSession' });

const Failure = z
  .object({
    success: z.literal(false),
    error: z.object({ code: z.enum(TICKET_RCA_FAILURE_CODES), message: z.string() }),
  })
  .meta({ id: 'TicketRcaFailure' });

const ResetResult = z.object({
  session: Session,
  ticket_key: z.string().nullable().describe('The ticket the reset labelled `demo-reset` (null when none)'),
  ticket_labelled: z.boolean(),
  run_id: z.string().nullable(),
  run_cancel_requested: z.boolean().describe('The run was still going and was asked to cancel'),
});

export const demoTicketRcaRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/demo/ticket-rca/prepare',
    operationId: 'prepareTicketRca',
    summary: 'Prepare the ticket-RCA vignette: file a support ticket and start the code agent’s root-cause analysis',
    description:
      'Checks in order, answering the first failure as `{success: false, error: {code, message}}` with nothing written: ' +
      'the demo version (when given) exists, has profile `ticket-rca`, is `ready` and its bindings still exist ' +
      '(`DEMO_VERSION_BINDING_INVALID`, `DEMO_VERSION_PROFILE_UNAVAILABLE`); the tracker connection ' +
      '(`enhancements.tracker_automation.connection_name`) is usable and lists the project’s issue types ' +
      '(`TICKETING_SETUP_REQUIRED`); the project offers `issue_type` (`TICKETING_ISSUE_TYPE_UNAVAILABLE`); a code-agent ' +
      'launcher is usable (`CODING_AGENT_UNSUPPORTED`); no other presenter session of the tenant is `preparing` or ' +
      '`running` (`BUILD_PROVIDER_BUSY`). Then the session is `preparing` and workflow ' +
      '`ticket-rca/<tenant>/<presenter_session_id>` files the ticket, starts the run (`running`) and records ' +
      '`completed` or `failed`. A session already preparing or running answers as it is.',
    ownShape: OWN_SHAPE,
    successFalseAt2xx: OWN_SHAPE,
    tags,
    access: { kind: 'presenter' },
    body: z.object({
      presenter_session_id: PresenterSessionId,
      project_key: z
        .string()
        .regex(/^[A-Z][A-Z0-9_]{1,9}$/, 'a tracker project key')
        .describe('The tracker project the ticket is filed in'),
      issue_type: z.string().min(1).max(100).default('Bug').describe('The issue type of the ticket'),
      summary: z
        .string()
        .min(1)
        .max(255)
        .default('Customer report: the monthly export shows wrong totals')
        .describe('The ticket’s summary (the support request the agent analyses)'),
      demo_version_id: z.uuid().optional(),
    }),
    responses: {
      200: {
        description: 'The session (`success` true), or the first check that failed (`success` false)',
        schema: z.union([successEnvelope(Session), Failure]),
      },
    },
    handler: async ({ body, principal, deps, em }) => prepareTicketRca(deps, em, callerOf(principal, deps), body),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/ticket-rca/status',
    operationId: 'getTicketRcaStatus',
    summary: 'State of a presenter session’s ticket vignette (`idle` when never prepared or reset)',
    tags,
    access: { kind: 'presenter' },
    query: z.object({ presenter_session_id: PresenterSessionId }),
    responses: { 200: { description: 'The session', schema: successEnvelope(Session) } },
    handler: async ({ query, principal, deps, em }) => ({
      success: true,
      data: await ticketRcaStatus(em, callerOf(principal, deps), query.presenter_session_id),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/demo/ticket-rca/reset',
    operationId: 'resetTicketRca',
    summary:
      'Reset the ticket vignette: stop the lifecycle and the run, label the ticket `demo-reset`, clear the session',
    description:
      'Idempotent: an idle or unknown session answers `idle` and changes nothing. `TICKETING_SETUP_REQUIRED` when there ' +
      'is a ticket to label (or a lifecycle that may file one) and no usable tracker connection (nothing changed), or ' +
      'when the tracker refuses the label (the run is stopped, the session is `failed` and a later reset labels it).',
    ownShape: OWN_SHAPE,
    successFalseAt2xx: OWN_SHAPE,
    tags,
    access: { kind: 'presenter' },
    body: z.object({ presenter_session_id: PresenterSessionId }),
    responses: {
      200: {
        description: 'The cleared session (`success` true), or why it could not be reset (`success` false)',
        schema: z.union([successEnvelope(ResetResult), Failure]),
      },
    },
    handler: async ({ body, principal, deps, em }) =>
      resetTicketRca(deps, em, callerOf(principal, deps), body.presenter_session_id),
  }),
];
