import { z } from 'zod';
import { FLOW_RUN_STATUSES } from '../../shared/flows/definition.js';
import { cancelFlowRun, getFlowRun, listFlowRuns, startFlowRun } from '../../shared/flows/runs.js';
import { FlowRunDetailView, FlowRunView } from '../../shared/flows/views.js';
import { defineRoute, errorResponse as err, successEnvelope } from '../http/route.js';

/**
 * Flow runs (issue 31, item 3; the spec shows no paths, these are ours): start a run of a promoted
 * flow of a managed source, read it with its steps' outcomes, list runs, cancel one. All need
 * `manage_flows` and see only the caller's tenant.
 */
const SourceId = z.string().regex(/^src_[0-9a-f]{16}$/, 'a managed source id');
const FlowName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a flow name (its folder under flows_root)');
const RunId = z.string().regex(/^frun_[0-9a-f]{32}$/, 'a flow run id');
const runParams = z.object({ run_id: RunId });

const base = {
  tags: ['flows'],
  access: { kind: 'authenticated' as const, permission: 'manage_flows' as const },
};
const common = {
  401: err('Not signed in, or not acting as a person (`authentication`)'),
  403: err('Without `manage_flows` (`forbidden`)'),
};

export const flowRunRoutes = [
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/flows/runs',
    operationId: 'startFlowRun',
    summary: 'Start a run of a promoted flow (workflow `flow-run/<run_id>`)',
    description:
      'Runs the manifest the flow was promoted with: its `steps` in order; consecutive `run_concurrently: true` steps run at most 8 at once. A `tool` step calls a platform tool (as `POST /api/tool_call` does) as the person who started the run; a step of another kind fails with `FLOW_STEP_UNSUPPORTED`. A failed step ends the run `failed`; the steps not started are `skipped`.',
    body: z.object({ source_id: SourceId, flow_name: FlowName }).strict(),
    successStatus: 201,
    responses: {
      201: { description: 'Started; every step `pending`', schema: successEnvelope(FlowRunDetailView) },
      400: err(
        'The promoted manifest cannot run (`FLOW_INVALID`: no `steps` list, a malformed step), or a malformed field',
      ),
      ...common,
      404: err("No such flow in one of the caller's tenant's sources (`FLOW_UNKNOWN`)"),
      409: err(
        'The flow is synced but not promoted (`FLOW_NOT_PROMOTED`), or its promoted manifest is no longer available (`FLOW_DEFINITION_UNAVAILABLE`: promote it again)',
      ),
    },
    handler: async ({ body, principal, deps, em }) => ({
      success: true,
      data: await startFlowRun(deps, em, principal, { sourceId: body.source_id, flowName: body.flow_name }),
    }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/flows/runs',
    operationId: 'listFlowRuns',
    summary: "The tenant's flow runs, newest first",
    query: z.object({
      source_id: SourceId.optional(),
      flow_name: FlowName.optional(),
      status: z.enum(FLOW_RUN_STATUSES).optional(),
      limit: z.coerce.number().int().min(1).max(200).default(50),
    }),
    responses: {
      200: {
        description: 'Runs without their steps; `truncated` when more match',
        schema: successEnvelope(z.object({ runs: z.array(FlowRunView), truncated: z.boolean() })),
      },
      ...common,
    },
    handler: async ({ query, principal, deps, em }) => ({
      success: true,
      data: await listFlowRuns(deps, em, principal, {
        sourceId: query.source_id,
        flowName: query.flow_name,
        status: query.status,
        limit: query.limit,
      }),
    }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/flows/runs/:run_id',
    operationId: 'getFlowRun',
    summary: "A flow run's status with each step's outcome",
    params: runParams,
    responses: {
      200: { description: 'The run and its steps in order', schema: successEnvelope(FlowRunDetailView) },
      ...common,
      404: err("No such run in the caller's tenant"),
    },
    handler: async ({ params, principal, deps, em }) => ({
      success: true,
      data: await getFlowRun(deps, em, principal, params.run_id),
    }),
  }),
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/flows/runs/:run_id/cancel',
    operationId: 'cancelFlowRun',
    summary: 'Cancel a running flow run',
    description:
      'Running steps are cancelled (a tool call already under way may still take effect; its outcome is not recorded over `cancelled`) and no other step starts. Answers once the run ended (or, after 20 s, with `cancel_pending` true).',
    params: runParams,
    responses: {
      200: {
        description: 'Cancelled (or still ending: `cancel_pending`)',
        schema: successEnvelope(FlowRunDetailView.extend({ cancel_pending: z.boolean() })),
      },
      ...common,
      404: err("No such run in the caller's tenant"),
      409: err('The run already ended (`FLOW_RUN_FINISHED`)'),
    },
    handler: async ({ params, principal, deps, em }) => ({
      success: true,
      data: await cancelFlowRun(deps, em, principal, params.run_id),
    }),
  }),
];
