import { z } from 'zod';
import { executeSkill, removeImportedSkillPackage, removeRuntimeSkill } from '../../shared/skills/manage.js';
import { SKILL_NAME } from '../../shared/skills/read.js';
import { defineRoute, successEnvelope } from '../http/route.js';

/**
 * The runtime skill registry (issue 12): the skill folders of `PLATFORM_SKILLS_DIR`, which the
 * gateway's `read_skill` serves. `DELETE /api/skills/{skill_name}` takes a skill out of it. The
 * folder is moved aside to `<dir>/.removed/<skill_name>-<epoch ms>` rather than erased, so an operator
 * can restore it; nothing serves it any more.
 */
const SkillName = z.string().regex(SKILL_NAME, 'a skill folder name (letters, digits, ".", "_", "-")');

export const skillRoutes = [
  defineRoute({
    method: 'delete',
    path: '/api/skills/:skill_name',
    operationId: 'removeRuntimeSkill',
    tags: ['skills'],
    summary: 'Remove a skill from the runtime registry (the skills folder read_skill serves)',
    description:
      'Needs `manage_skills`. The skill folder is moved to `.removed/<skill_name>-<epoch ms>` inside `PLATFORM_SKILLS_DIR` (recoverable by an operator); `read_skill` answers 404 for it afterwards. A deployment without a skills folder has an empty registry: 404 with `payload.reason` `no_skills_folder`.',
    access: { kind: 'authenticated', permission: 'manage_skills' },
    params: z.object({
      skill_name: z.string().regex(SKILL_NAME, 'a skill folder name (letters, digits, ".", "_", "-")'),
    }),
    responses: {
      200: {
        description: 'Removed from the runtime registry',
        schema: successEnvelope(z.object({ skill_name: z.string(), removed: z.literal(true), moved_to: z.string() })),
      },
      404: { description: 'No such skill in the runtime registry (also when the deployment has no skills folder)' },
    },
    handler: async ({ params, deps }) => ({
      success: true,
      data: await removeRuntimeSkill(deps.config.skillsDir, params.skill_name),
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/agent-skills/:skill_name',
    operationId: 'removeImportedSkillPackage',
    tags: ['skills'],
    summary: 'Remove an agent-skill package imported by a managed source',
    description:
      'Needs `manage_skills`. `read_skill` and skill execution no longer serve the package. A tombstone is kept: later syncs of the source leave it removed while the skill folder is unchanged, and import it again once the source changes that folder (or removes and re-adds it). 404 when no imported package has this name (or it is already removed).',
    access: { kind: 'authenticated', permission: 'manage_skills' },
    params: z.object({ skill_name: SkillName }),
    responses: {
      200: {
        description: 'Removed (tombstoned until the source changes the skill)',
        schema: successEnvelope(
          z.object({
            skill_name: z.string(),
            removed: z.literal(true),
            managed_source_id: z.string(),
            commit_sha: z.string(),
          }),
        ),
      },
      404: { description: 'No imported package of this name' },
    },
    handler: async ({ params, em, principal }) => ({
      success: true,
      data: await removeImportedSkillPackage(em, principal, params.skill_name),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/skills/:skill_name/execute',
    operationId: 'executeSkill',
    tags: ['skills'],
    summary: 'Run a skill as one language-model turn through the active chat provider',
    description:
      "Needs `manage_skills`. The system prompt is the skill's SKILL.md (the runtime skills folder first, then imported packages), followed by the instructions of `agent_id` when given; the user message is `input`. No tools are offered. 404 for an unknown skill or agent; 502 (`llm_error`, `payload.llm_failure.kind`, e.g. `not_configured` when no chat provider is configured) when the provider call fails.",
    access: { kind: 'authenticated', permission: 'manage_skills' },
    params: z.object({ skill_name: SkillName }),
    body: z.object({
      input: z.string().min(1).max(20_000),
      agent_id: z.string().min(1).max(200).optional(),
    }),
    responses: {
      200: {
        description: "The model's answer",
        schema: successEnvelope(
          z.object({ skill_name: z.string(), output: z.string(), model: z.string(), provider: z.string() }),
        ),
      },
      404: { description: 'Unknown skill (or its SKILL.md is missing), or unknown agent_id' },
      413: { description: 'SKILL.md is larger than the skill file limit' },
      502: { description: 'The chat provider is not configured or its call failed (`llm_error`)' },
    },
    handler: async ({ params, body, em, principal, deps }) => ({
      success: true,
      data: await executeSkill(deps, em, principal, params.skill_name, body),
    }),
  }),
];
