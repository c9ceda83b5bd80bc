import { z } from 'zod';
import {
  answerQuestions,
  awaitingInput,
  listProjects,
  setProjectStatus,
  startMission,
  AWAITING_INPUT_MAX_MISSIONS,
  AWAITING_INPUT_ROWS_PER_STATE,
  PROJECT_LIST_LIMIT,
} from '../../shared/missions/service.js';
import { BlueprintName } from '../../shared/blueprints/manifest.js';
import { STATUS_ACTIONS } from '../../workflows/mission-definitions.js';
import { defineRoute, routeArea, successEnvelope } from '../http/route.js';
import { AnswersResult, ProjectId, ProjectView, QuestionSetId, StatusResult } from '../../shared/missions/views.js';

const { tags, authed, err } = routeArea('projects');

const ProjectListResponse = successEnvelope(
  z
    .object({
      items: z.array(ProjectView),
      truncated: z.boolean().describe(`More than ${PROJECT_LIST_LIMIT} visible missions (the newest are listed)`),
    })
    .meta({ id: 'ProjectListResponse' }),
);

const QuestionView = z.object({
  question_set_id: z.string(),
  question_id: z.string(),
  phase: z.string(),
  priority: z.enum(['high', 'normal', 'low']),
  category: z.string().nullable(),
  content: z.string().describe('Untrusted text from the blueprint'),
  expected_response_type: z.enum(['text', 'choice', 'boolean']).optional(),
  options: z.array(z.string()),
  recommended: z.string().nullable(),
});

const AwaitingInputResponse = z
  .object({
    success: z.literal(true),
    items: z.array(ProjectView.extend({ questions: z.array(QuestionView) })),
    truncated: z.boolean(),
  })
  .meta({ id: 'AwaitingInputResponse' });

const ParamValue = z.union([z.string().max(4000), z.number(), z.boolean(), z.null()]);

export const StartBody = z
  .object({
    blueprint_name: BlueprintName,
    name: z.string().trim().min(1).max(200).optional(),
    parameters: z
      .record(z.string().min(1).max(100), ParamValue)
      .optional()
      .describe('Values the mission records for its agents (strings, numbers, booleans, null)'),
  })
  .strict();

const StatusBody = z
  .object({
    action: z.enum(STATUS_ACTIONS),
    reason: z.string().max(2000).optional(),
  })
  .strict();

const AnswersBody = z
  .object({
    answers: z
      .array(z.object({ question_id: z.string().min(1).max(63), answer: z.string().min(1).max(10000) }).strict())
      .min(1)
      .max(50),
  })
  .strict();

export const projectRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/projects',
    operationId: 'startMission',
    summary: 'Start a mission from a blueprint (workflow mission/<project_id>)',
    description:
      'The caller must be allowed to execute the blueprint (view access: owner, grant, view_all_blueprints, administrator; built-ins, hidden ones included, for everyone). The blueprint is snapshotted at start: a versioned blueprint runs its production version (its saved files; blueprint_version and blueprint_commit name it), and with no production version assigned the start is 404 BLUEPRINT_PRODUCTION_NOT_ASSIGNED and nothing is written; a standard blueprint runs its working copy at its current commit (blueprint_version null). Every agent its phases name must exist (409 unknown_agents); a prompt file missing from the commit is 409 blueprint_prompt_missing.',
    tags,
    access: authed,
    body: StartBody,
    bodyKind: 'config',
    successStatus: 201,
    responses: {
      201: { description: 'Mission started', schema: successEnvelope(ProjectView) },
      404: err(
        'No blueprint of that name you may view, or a versioned blueprint with no production version (payload.code BLUEPRINT_PRODUCTION_NOT_ASSIGNED)',
      ),
      409: err('A named agent does not exist, or a prompt file is missing (payload.code)'),
    },
    handler: async ({ deps, em, principal, body }) => ({
      success: true,
      data: await startMission(deps, em, principal, body),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects',
    operationId: 'listProjects',
    summary: `Missions the caller may see (requester, administrator, or blueprint view access), newest first, at most ${PROJECT_LIST_LIMIT}`,
    tags,
    access: authed,
    responses: { 200: { description: 'Missions', schema: ProjectListResponse } },
    handler: async ({ deps, em, principal }) => ({ success: true, data: await listProjects(deps, em, principal) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/awaiting-input',
    operationId: 'listProjectsAwaitingInput',
    summary: `Missions waiting for people (IN_PROGRESS_NEEDING_INPUT or STUCK) with their open questions`,
    description: `Reads at most ${AWAITING_INPUT_ROWS_PER_STATE} rows per waiting status and describes at most ${AWAITING_INPUT_MAX_MISSIONS} visible missions; truncated is true when either limit cut the answer.`,
    tags,
    access: authed,
    ownShape: 'Projects endpoints: awaiting-input answers success, items, truncated',
    responses: { 200: { description: 'Missions awaiting input', schema: AwaitingInputResponse } },
    handler: async ({ deps, em, principal }) => awaitingInput(deps, em, principal),
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:project_id/status',
    operationId: 'setProjectStatus',
    summary: 'Pause, resume, cancel or close a mission (an Update to its workflow)',
    description:
      'Transitions: pause running→paused; resume paused→running; cancel and close running|paused→cancelled|closed (reason kept as closed_reason). Anything else is 409 invalid_transition. Only the requester or an administrator may steer.',
    tags,
    access: authed,
    params: z.object({ project_id: ProjectId }),
    body: StatusBody,
    bodyKind: 'config',
    responses: {
      200: { description: 'Persisted result', schema: successEnvelope(StatusResult) },
      409: err('Invalid transition (payload.code invalid_transition)'),
    },
    handler: async ({ deps, em, principal, params, body }) => ({
      success: true,
      data: await setProjectStatus(deps, em, principal, params.project_id, body),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:project_id/questions/:question_set_id/answers',
    operationId: 'answerProjectQuestions',
    summary: 'Answer questions of an open question set; a complete set resumes the mission',
    tags,
    access: authed,
    params: z.object({ project_id: ProjectId, question_set_id: QuestionSetId }),
    body: AnswersBody,
    bodyKind: 'config',
    responses: {
      200: { description: 'Answers recorded', schema: successEnvelope(AnswersResult) },
      409: err('The set is already answered, or the mission has ended'),
    },
    handler: async ({ deps, em, principal, params, body }) => ({
      success: true,
      data: await answerQuestions(deps, em, principal, params.project_id, params.question_set_id, body.answers),
    }),
  }),
];
