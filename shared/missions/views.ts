// The wire shapes of a mission project, shared by the project routes and the `mission` tool.
import { z } from 'zod';
import { MISSION_STATUSES, WAITING_STATES } from '../../workflows/mission-definitions.js';

export const ProjectId = z
  .string()
  .regex(/^prj_[0-9a-f]{32}$/)
  .describe('Mission project id: `prj_` + 32 lowercase hex');
export const QuestionSetId = z
  .string()
  .regex(/^qs_[0-9a-f]{32}_[a-z0-9][a-z0-9_-]{0,62}$/)
  .describe('Question set id: `qs_` + the project hex + `_` + the phase id');

export const Stats = z.object({
  phases_total: z.number().int(),
  phases_done: z.number().int(),
  goals_total: z.number().int(),
  goals_met: z.number().int(),
  questions_open: z.number().int(),
});

export const ProjectView = z
  .object({
    id: z.string(),
    name: z.string(),
    blueprint_name: z.string(),
    blueprint_id: z.string(),
    blueprint_commit: z
      .string()
      .describe(
        "The blueprint commit snapshotted at start: the production version's commit for a versioned blueprint, the working-copy HEAD otherwise (`builtin-…` for built-ins)",
      ),
    blueprint_version: z
      .number()
      .int()
      .nullable()
      .describe(
        "The saved version the mission runs: a versioned blueprint's production version at start; null for a standard or built-in blueprint",
      ),
    status: z.enum(MISSION_STATUSES),
    waiting_state: z.enum(WAITING_STATES),
    closed_reason: z.string().nullable(),
    requested_by: z.string(),
    requested_by_display_name: z.string().nullable(),
    requested_by_email: z.string().nullable(),
    root_thread_id: z.string().nullable(),
    blueprint_phase: z.string().nullable().describe('Id of the phase the mission is in (or ended in)'),
    progress: z.number().min(0).max(1).describe('Phases done / phases total'),
    elapsed_time: z.number().int().describe('Seconds since start (until close for ended missions)'),
    agents: z.array(z.string()).describe('Agents whose threads the mission opened'),
    stats: Stats,
    started_at: z.string(),
    updated_at: z.string(),
    closed_at: z.string().nullable(),
  })
  .meta({ id: 'Project' });

export const StatusResult = z.object({
  project_id: z.string(),
  previous_status: z.enum(MISSION_STATUSES),
  status: z.enum(MISSION_STATUSES),
  reason: z.string().nullable(),
  project: ProjectView,
});

export const AnswersResult = z.object({
  project_id: z.string(),
  question_set_id: z.string(),
  answered: z.array(z.string()),
  remaining: z.number().int().describe('Open questions left in the set'),
  resumed: z.boolean().describe('The set is complete and the mission continues'),
});
