import { z } from 'zod';
import {
  blueprintChain,
  listRecords,
  recordDetail,
  RECORDS_LIST_LIMIT,
  systemTestLiteReport,
} from '../../shared/missions/records.js';

import { MISSION_STATUSES, PHASE_FAILURE_CODES } from '../../workflows/mission-definitions.js';
import { defineRoute, routeArea, queryBoolean, successEnvelope } from '../http/route.js';

import { Goal, Note, ProjectRecordItem, recordFields } from '../../shared/missions/record-views.js';
import { ProjectId } from '../../shared/missions/views.js';

const { tags, authed, err } = routeArea('projects');

const ProjectRecordDetail = z
  .strictObject({
    ...recordFields,
    parameters: z.record(z.string(), z.unknown()),
    note_sequence: z.number().int().describe('Sequence of the newest note (0 when none)'),
    goals: z.array(Goal),
    notes: z.array(Note),
    assets: z.array(z.string()),
    parameter_words: z.array(z.string()),
    scope: z.strictObject({
      blueprint_name: z.string(),
      blueprint_commit: z.string(),
      blueprint_version: z
        .number()
        .int()
        .nullable()
        .describe("The saved version run (a versioned blueprint's production version at start); null otherwise"),
      phases: z.array(z.string()),
    }),
    phase_outcomes: z
      .array(
        z.strictObject({
          phase: z.string(),
          status: z.enum(['planned', 'running', 'completed', 'failed']),
          reason_code: z.enum(PHASE_FAILURE_CODES).nullable().describe('Why a failed phase could not run'),
          reason: z.string().nullable(),
        }),
      )
      .describe('Each phase and how it went; a failed one says why it could not run'),
    plan_banner: z.string().nullable(),
    closed_reason: z.string().nullable(),
    live_successor: z.strictObject({ id: z.string(), name: z.string() }).nullable(),
    live_successor_undetermined: z.boolean(),
    live_successor_looked_up: z.boolean(),
  })
  .meta({ id: 'ProjectRecordDetail' });

const RecordsList = z.strictObject({
  items: z.array(ProjectRecordItem),
  people: z.record(z.string(), z.string().nullable()).describe('Person id → display name (only with include_people)'),
  truncated: z.boolean(),
  generated_at: z.string(),
});

const ChainNode = z.strictObject({
  phase: z.string().nullable(),
  agent_id: z.string(),
  thread_id: z.string(),
  root: z.boolean(),
  status: z.string().describe('completed, active, or the ended mission status'),
});

const Report = z.strictObject({
  project_id: z.string(),
  report: z.literal('system-test-lite'),
  format: z.literal('markdown'),
  generated_at: z.string(),
  summary: z.strictObject({
    goals_total: z.number().int(),
    goals_met_or_waived: z.number().int(),
    phases_failed: z.number().int(),
    notes: z.number().int(),
    questions: z.number().int(),
  }),
  markdown: z.string().describe('Mission content escaped for Markdown and HTML'),
});

const params = z.object({ project_id: ProjectId });
const notFound = err('No such mission you may see');

export const projectRecordRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/projects/records',
    operationId: 'listProjectRecords',
    summary: `Project records (read-only): the newest ${RECORDS_LIST_LIMIT} visible missions, truncated when more`,
    tags,
    access: authed,
    query: z.object({
      thread_id: z.string().min(1).max(200).optional().describe('Only missions that opened this thread'),
      include_people: queryBoolean(false).describe('Add the people map'),
      status: z.enum(MISSION_STATUSES).optional(),
    }),
    responses: { 200: { description: 'Project records', schema: successEnvelope(RecordsList) } },
    handler: async ({ deps, em, principal, query }) => ({
      success: true,
      data: await listRecords(deps, em, principal, query),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/records/:project_id',
    operationId: 'getProjectRecord',
    summary: 'One project record with goals, notes and server records',
    tags,
    access: authed,
    params,
    responses: {
      200: { description: 'Project record', schema: successEnvelope(ProjectRecordDetail) },
      404: notFound,
    },
    handler: async ({ deps, em, principal, params }) => ({
      success: true,
      data: await recordDetail(deps, em, principal, params.project_id),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:project_id/blueprint-chain',
    operationId: 'getProjectBlueprintChain',
    summary: 'The threads the mission opened, root first, in phase order (empty without a root thread)',
    tags,
    access: authed,
    params,
    responses: {
      200: {
        description: 'Blueprint chain',
        schema: successEnvelope(z.strictObject({ project_id: z.string(), nodes: z.array(ChainNode) })),
      },
      404: notFound,
    },
    handler: async ({ deps, em, principal, params }) => ({
      success: true,
      data: await blueprintChain(deps, em, principal, params.project_id),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:project_id/reports/system-test-lite',
    operationId: 'getProjectSystemTestLiteReport',
    summary: 'A fixed Markdown report from the mission goals, notes and questions (content escaped: untrusted)',
    tags,
    access: authed,
    params,
    responses: { 200: { description: 'Report', schema: successEnvelope(Report) }, 404: notFound },
    handler: async ({ deps, em, principal, params }) => ({
      success: true,
      data: await systemTestLiteReport(deps, em, principal, params.project_id),
    }),
  }),
];
