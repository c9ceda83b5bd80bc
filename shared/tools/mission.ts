import { z } from 'zod';
import { BlueprintName } from '../blueprints/manifest.js';
import { STATUS_ACTIONS } from '../../workflows/mission-definitions.js';
import {
  answerQuestions,
  describeProjects,
  setProjectStatus,
  startMission,
  visibleProject,
} from '../missions/service.js';
import { GOAL_STATUSES, SERVER_RECORD_KINDS, SERVER_RECORD_STATES, VERIFICATIONS } from '../missions/records-store.js';
import { BadRequestError } from '../errors.js';
import { addNote, addServerRecord } from '../missions/records.js';
import { defineTool } from './registry.js';
import { MissionResult } from './results.js';

const ProjectId = z.string().regex(/^prj_[0-9a-f]{32}$/);

const MissionToolInput = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('START'),
    blueprint_name: BlueprintName,
    name: z.string().trim().min(1).max(200).optional(),
    parameters: z
      .record(z.string().min(1).max(100), z.union([z.string().max(4000), z.number(), z.boolean(), z.null()]))
      .optional(),
  }),
  z.strictObject({ action: z.literal('STATUS'), project_id: ProjectId }),
  z.strictObject({
    action: z.literal('ANSWER'),
    project_id: ProjectId,
    question_set_id: z.string().min(1).max(200),
    answers: z
      .array(z.strictObject({ question_id: z.string().min(1).max(63), answer: z.string().min(1).max(10000) }))
      .min(1)
      .max(50),
  }),
  z.strictObject({
    action: z.literal('SET_STATUS'),
    project_id: ProjectId,
    status_action: z.enum(STATUS_ACTIONS),
    reason: z.string().max(2000).optional(),
  }),
  z.strictObject({
    action: z.literal('RECORD_NOTE'),
    project_id: ProjectId,
    goal: z.string().min(1).max(200),
    status: z.enum(GOAL_STATUSES),
    evidence: z.string().min(1).max(500).optional(),
    asset: z.string().min(1).max(500).optional(),
    finding: z.string().min(1).max(10000).optional(),
    waive_reason: z.string().min(1).max(2000).optional(),
    person_turn: z.boolean().optional(),
    verification: z.enum(VERIFICATIONS).optional(),
    verification_reason: z.string().min(1).max(2000).optional(),
    input_versions: z.record(z.string().min(1).max(200), z.string().max(200)).optional(),
  }),
  z.strictObject({
    action: z.literal('RECORD_SERVER_RECORD'),
    project_id: ProjectId,
    goal: z.string().min(1).max(200),
    kind: z.enum(SERVER_RECORD_KINDS),
    evidence_id: z.string().min(1).max(500),
    asset_id: z.string().min(1).max(500).optional(),
    target_table: z.string().min(1).max(500).optional(),
    state: z.enum(SERVER_RECORD_STATES),
    reason: z.string().max(2000).optional(),
  }),
]);

/**
 * The `mission` tool (group `missions`): START a mission from a blueprint, read its STATUS, ANSWER
 * its open questions, SET_STATUS (pause, resume, cancel, close). Same rules and shapes as the
 * `/api/projects` routes (`shared/missions/service.ts`). RECORD_NOTE appends a note to a goal (and
 * moves the goal to the note's status); RECORD_SERVER_RECORD reports a copy, notebook or job-run
 * record (`shared/missions/records.ts`): the requester, an administrator, or one of the mission's agents.
 */
export const missionTool = defineTool({
  name: 'mission',
  description:
    'Missions: START one from a blueprint (blueprint_name), read its STATUS, ANSWER questions of its open question set, SET_STATUS (status_action pause | resume | cancel | close), RECORD_NOTE (goal, status planned | in_progress | met | waived with waive_reason, evidence, asset, finding, verification passed | failed | inconclusive with verification_reason, person_turn, input_versions), RECORD_SERVER_RECORD (goal, kind, evidence_id, state, asset_id, target_table, reason).',
  input: MissionToolInput,
  result: MissionResult,
  principalKinds: ['person', 'agent'],
  async handler({ input, principal, deps, em }) {
    switch (input.action) {
      case 'START':
        return startMission(deps, em, principal, input);
      case 'STATUS':
        return (await describeProjects(em, [await visibleProject(deps, em, principal, input.project_id)]))[0];
      case 'ANSWER':
        return answerQuestions(deps, em, principal, input.project_id, input.question_set_id, input.answers);
      case 'SET_STATUS':
        return setProjectStatus(deps, em, principal, input.project_id, {
          action: input.status_action,
          ...(input.reason !== undefined ? { reason: input.reason } : {}),
        });
      case 'RECORD_NOTE': {
        const { action: _a, project_id, ...note } = input;
        if (note.status === 'waived' && !note.waive_reason)
          throw new BadRequestError('A waiver needs a waive_reason.', {
            fields: [{ field: 'waive_reason', message: 'required when status is waived' }],
          });
        if (note.status !== 'waived' && note.waive_reason)
          throw new BadRequestError('waive_reason goes only with status waived.', {
            fields: [{ field: 'waive_reason', message: 'only with status waived' }],
          });
        if (note.verification_reason && !note.verification)
          throw new BadRequestError('verification_reason needs a verification.', {
            fields: [{ field: 'verification_reason', message: 'only with verification' }],
          });
        return addNote(deps, em, principal, project_id, note);
      }
      case 'RECORD_SERVER_RECORD': {
        const { action: _a, project_id, ...record } = input;
        return addServerRecord(deps, em, principal, project_id, record);
      }
    }
  },
});
