import { z } from 'zod';
import { NotFoundError, PlatformError } from '../../../shared/errors.js';
import { readSkillFile } from '../../../shared/skills/read.js';
import { resolveSkill } from '../../../shared/skills/packages.js';
import { defineMcpAction } from './registry.js';

export const readSkillAction = defineMcpAction({
  name: 'read_skill',
  versions: ['v1', 'v2'],
  description:
    'Read a file of a skill (default SKILL.md); paths stay inside the skill. The runtime skills folder is searched first, then the skill packages imported by managed sources.',
  params: z.object({ skill_name: z.string().min(1).max(128), relative_path: z.string().max(1_000).optional() }),
  handler: async ({ deps, em, principal, params }) => {
    const rel = params.relative_path || 'SKILL.md';
    const found = await resolveSkill(
      em,
      { skillsDir: deps.config.skillsDir, managedSourcesDir: deps.config.managedSources.dir },
      principal.tenant,
      params.skill_name,
    );
    if (found) return readSkillFile(found.root, params.skill_name, rel);
    if (!deps.config.skillsDir)
      throw new PlatformError(
        'not_available_here',
        'No skills are installed on this deployment (PLATFORM_SKILLS_DIR is not set) and no imported skill package has this name.',
      );
    // Validates the name (400 for a path-like one) and answers 404 for an unknown skill.
    await readSkillFile(deps.config.skillsDir, params.skill_name, rel);
    throw new NotFoundError(`No skill ${params.skill_name}.`);
  },
});
