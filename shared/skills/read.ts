import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { BadRequestError, NotFoundError, PayloadTooLargeError } from '../errors.js';

/** Largest skill file the gateway returns in one call. */
export const MAX_SKILL_FILE_BYTES = 256 * 1024;
export const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Reads one file of a skill: `<skills root>/<skill_name>/<relative_path>`. The path may not leave
 * the skill's folder, neither by `..`, an absolute path, nor a symbolic link pointing outside.
 */
export async function readSkillFile(root: string, skillName: string, relativePath: string) {
  if (!SKILL_NAME.test(skillName) || skillName === '.' || skillName === '..') {
    throw new BadRequestError('skill_name must be a plain folder name (letters, digits, ".", "_", "-").', {
      fields: [{ field: 'skill_name' }],
    });
  }
  if (relativePath.includes('\0') || path.isAbsolute(relativePath) || /^[A-Za-z]:/.test(relativePath)) {
    throw new BadRequestError('relative_path must be relative to the skill folder.', {
      reason: 'path_escape',
      fields: [{ field: 'relative_path' }],
    });
  }
  // Both sides absolute: `path.resolve` below always is, so a relative root must be too.
  const skillDir = path.resolve(root, skillName);
  const target = path.resolve(skillDir, relativePath);
  if (target !== skillDir && !target.startsWith(skillDir + path.sep)) {
    throw new BadRequestError('relative_path leaves the skill folder.', {
      reason: 'path_escape',
      fields: [{ field: 'relative_path' }],
    });
  }
  let realSkillDir: string;
  let realTarget: string;
  try {
    realSkillDir = await realpath(skillDir);
  } catch {
    throw new NotFoundError(`No skill ${skillName}.`);
  }
  try {
    realTarget = await realpath(target);
  } catch {
    throw new NotFoundError(`Skill ${skillName} has no file ${relativePath}.`);
  }
  if (!realTarget.startsWith(realSkillDir + path.sep)) {
    throw new BadRequestError('relative_path leaves the skill folder.', {
      reason: 'path_escape',
      fields: [{ field: 'relative_path' }],
    });
  }
  const info = await stat(realTarget);
  if (!info.isFile()) throw new NotFoundError(`Skill ${skillName} has no file ${relativePath}.`);
  if (info.size > MAX_SKILL_FILE_BYTES)
    throw new PayloadTooLargeError(`The file is larger than ${MAX_SKILL_FILE_BYTES} bytes.`, {
      limit_bytes: MAX_SKILL_FILE_BYTES,
    });
  return {
    skill_name: skillName,
    relative_path: path.relative(realSkillDir, realTarget),
    bytes: info.size,
    content: await readFile(realTarget, 'utf8'),
  };
}
