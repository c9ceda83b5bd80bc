import { lstat, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { NotFoundError, PlatformError } from '../../shared/errors.js';
import { SKILL_NAME } from '../../shared/skills/read.js';
import { defineRoute, successEnvelope } from '../http/route.js';

/** Where removed skills are moved (not addressable as a skill: names start with a letter or digit). */
export const REMOVED_SKILLS_FOLDER = '.removed';

/**
 * The runtime skill registry (issue 12): the skill folders of `PLATFORM_SKILLS_DIR`, which the
 * gateway's `read_skill` serves. `DELETE /api/skills/{skill_name}` takes a skill out of it. The
 * folder is moved aside to `<dir>/.removed/<skill_name>-<epoch ms>` rather than erased, so an operator
 * can restore it; nothing serves it any more.
 */
export const skillRoutes = [
  defineRoute({
    method: 'delete',
    path: '/api/skills/:skill_name',
    operationId: 'removeRuntimeSkill',
    tags: ['skills'],
    summary: 'Remove a skill from the runtime registry (the skills folder read_skill serves)',
    description:
      'Needs `manage_skills`. The skill folder is moved to `.removed/<skill_name>-<epoch ms>` inside `PLATFORM_SKILLS_DIR` (recoverable by an operator); `read_skill` answers 404 for it afterwards. 501 when the deployment has no skills folder.',
    access: { kind: 'authenticated', permission: 'manage_skills' },
    params: z.object({
      skill_name: z.string().regex(SKILL_NAME, 'a skill folder name (letters, digits, ".", "_", "-")'),
    }),
    responses: {
      200: {
        description: 'Removed from the runtime registry',
        schema: successEnvelope(z.object({ skill_name: z.string(), removed: z.literal(true), moved_to: z.string() })),
      },
      404: { description: 'No such skill in the runtime registry' },
      501: { description: 'No skills folder on this deployment (`PLATFORM_SKILLS_DIR` unset)' },
    },
    handler: async ({ params, deps }) => {
      const root = deps.config.skillsDir;
      if (!root)
        throw new PlatformError(
          'not_available_here',
          'No skills are installed on this deployment (PLATFORM_SKILLS_DIR is not set).',
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
];
