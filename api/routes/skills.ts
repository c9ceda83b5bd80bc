import { lstat, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { getVisibleAgent } from '../../shared/agents/registry.js';
import { LlmFailureError, NotFoundError } from '../../shared/errors.js';
import { activeProviders } from '../../shared/llm/active-provider.js';
import { LlmError, notConfigured } from '../../shared/llm/client.js';
import { resolveSkill } from '../../shared/skills/packages.js';
import { SKILL_NAME, readSkillFile } from '../../shared/skills/read.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { sql } from '../../shared/db/sql.js';

/** Where removed skills are moved (not addressable as a skill: names start with a letter or digit). */
export const REMOVED_SKILLS_FOLDER = '.removed';

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
    handler: async ({ params, deps }) => {
      const root = deps.config.skillsDir;
      // Without a skills folder the runtime registry is empty: every name is unknown (404, as the
      // deployment-dependent families answer), with the reason spelled out for the operator.
      if (!root)
        throw new NotFoundError(
          `No skill ${params.skill_name} in the runtime registry: this deployment has no skills folder (PLATFORM_SKILLS_DIR is not set).`,
          { reason: 'no_skills_folder' },
        );
      const folder = path.join(root, params.skill_name);
      const info = await lstat(folder).catch(() => null);
      if (!info || !(info.isDirectory() || info.isSymbolicLink()))
        throw new NotFoundError(`No skill ${params.skill_name} in the runtime registry.`);
      const removedDir = path.join(root, REMOVED_SKILLS_FOLDER);
      await mkdir(removedDir, { recursive: true });
      const target = path.join(removedDir, `${params.skill_name}-${Date.now()}`);
      try {
        await rename(folder, target);
      } catch (err) {
        // Removed meanwhile by another request.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT')
          throw new NotFoundError(`No skill ${params.skill_name} in the runtime registry.`);
        throw err;
      }
      return {
        success: true,
        data: {
          skill_name: params.skill_name,
          removed: true as const,
          moved_to: path.relative(root, target).split(path.sep).join('/'),
        },
      };
    },
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
    handler: async ({ params, em, principal }) => {
      const [row] = await sql<{ managed_source_id: string; commit_sha: string }>(
        em,
        `update agent_skill_packages set removed_at = now(), removed_by = ?
           where tenant = ? and name = ? and removed_at is null returning managed_source_id, commit_sha`,
        [principal.id, principal.tenant, params.skill_name],
      );
      if (!row) throw new NotFoundError(`No imported skill package ${params.skill_name}.`);
      return {
        success: true,
        data: {
          skill_name: params.skill_name,
          removed: true as const,
          managed_source_id: row.managed_source_id,
          commit_sha: row.commit_sha,
        },
      };
    },
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
    handler: async ({ params, body, em, principal, deps }) => {
      const found = await resolveSkill(
        em,
        { skillsDir: deps.config.skillsDir, managedSourcesDir: deps.config.managedSources.dir },
        principal.tenant,
        params.skill_name,
      );
      if (!found) throw new NotFoundError(`No skill ${params.skill_name}.`);
      const skill = await readSkillFile(found.root, params.skill_name, 'SKILL.md');
      let system = skill.content;
      if (body.agent_id) {
        // 404 for an agent the caller may not see (never 403 for a hidden subject).
        const agent = await getVisibleAgent(em, principal, body.agent_id);
        system = `${system}\n\n# Agent instructions\n${agent.instructions}`;
      }
      const active = await activeProviders(deps.config).resolve(em, principal.tenant);
      if (active.source === 'none' || !active.client || !active.chatModel)
        throw new LlmFailureError(notConfigured().failure);
      let r;
      try {
        // Metered: refused at the demo budget cap, as agent threads are, and its spend recorded.
        r = await active.chat(
          { em, tenant: principal.tenant, purpose: 'skill' },
          [
            { role: 'system', content: system },
            { role: 'user', content: body.input },
          ],
          [],
        );
      } catch (err) {
        if (err instanceof LlmError) throw new LlmFailureError(err.failure);
        throw err;
      }
      return {
        success: true,
        data: { skill_name: params.skill_name, output: r.content ?? '', model: r.model, provider: active.label },
      };
    },
  }),
];
