import { z } from 'zod';
import { PlatformError } from '../../../shared/errors.js';
import { readSkillFile } from '../../../shared/skills/read.js';
import { defineMcpAction } from './registry.js';

export const readSkillAction = defineMcpAction({
  name: 'read_skill',
  versions: ['v1', 'v2'],
  description: 'Read a file of a skill (default SKILL.md); paths stay inside the skill.',
  params: z.object({ skill_name: z.string().min(1).max(128), relative_path: z.string().max(1_000).optional() }),
  handler: async ({ deps, params }) => {
    if (!deps.config.skillsDir)
      throw new PlatformError(
        'not_available_here',
        'No skills are installed on this deployment (PLATFORM_SKILLS_DIR is not set).',
      );
    return readSkillFile(deps.config.skillsDir, params.skill_name, params.relative_path || 'SKILL.md');
  },
});
