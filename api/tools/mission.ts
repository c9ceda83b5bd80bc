import { z } from 'zod';
import { BlueprintName } from '../../shared/blueprints/manifest.js';
import { STATUS_ACTIONS } from '../../workflows/mission-definitions.js';
import {
  answerQuestions,
  describeProjects,
  setProjectStatus,
  startMission,
  visibleProject,
} from '../missions/service.js';
import { defineTool } from './registry.js';

const ProjectId = z.string().regex(/^prj_[0-9a-f]{32}$/);

const MissionToolInput = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('START'),
    blueprint_name: BlueprintName,
    name: z.string().trim().min(1).max(200).optional(),
    parameters: z
      .record(z.string().min(1).max(100), z.union([z.string().max(4000), z.number(), z.boolean(), z.null()]))
      .optional(),
  }),
  z.object({ action: z.literal('STATUS'), project_id: ProjectId }),
  z.object({
    action: z.literal('ANSWER'),
    project_id: ProjectId,
    question_set_id: z.string().min(1).max(200),
    answers: z
      .array(z.object({ question_id: z.string().min(1).max(63), answer: z.string().min(1).max(10000) }))
      .min(1)
      .max(50),
  }),
  z.object({
    action: z.literal('SET_STATUS'),
    project_id: ProjectId,
    status_action: z.enum(STATUS_ACTIONS),
    reason: z.string().max(2000).optional(),
  }),
]);

/**
 * The `mission` tool (group `missions`): START a mission from a blueprint, read its STATUS, ANSWER
 * its open questions, SET_STATUS (pause, resume, cancel, close). Same rules and shapes as the
 * `/api/projects` routes (`api/missions/service.ts`).
 */
export const missionTool = defineTool({
  name: 'mission',
  description:
    'Missions: START one from a blueprint (blueprint_name), read its STATUS, ANSWER questions of its open question set, SET_STATUS (status_action pause | resume | cancel | close).',
  input: MissionToolInput,
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
    }
  },
});
