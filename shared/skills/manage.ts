/**
 * Managing skills (`manage_skills`): taking a skill out of the runtime registry (the skill folders of
 * `PLATFORM_SKILLS_DIR`, moved aside to `<dir>/.removed/<skill_name>-<epoch ms>` rather than erased, so
 * an operator can restore it), tombstoning an imported agent-skill package, and running a skill as
 * one language-model turn.
 */
import { lstat, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import { getVisibleAgent } from '../agents/registry.js';
import type { Principal } from '../auth/principal.js';
import { sql } from '../db/sql.js';
import { LlmFailureError, NotFoundError } from '../errors.js';
import { activeProviders } from '../llm/active-provider.js';
import { LlmError, notConfigured } from '../llm/client.js';
import { resolveSkill } from './packages.js';
import { readSkillFile } from './read.js';

/** Where removed skills are moved (not addressable as a skill: names start with a letter or digit). */
export const REMOVED_SKILLS_FOLDER = '.removed';

async function moveAside(root: string, name: string): Promise<string> {
  const folder = path.join(root, name);
  const info = await lstat(folder).catch(() => null);
  if (!info || !(info.isDirectory() || info.isSymbolicLink()))
    throw new NotFoundError(`No skill ${name} in the runtime registry.`);
  const removedDir = path.join(root, REMOVED_SKILLS_FOLDER);
  await mkdir(removedDir, { recursive: true });
  const target = path.join(removedDir, `${name}-${Date.now()}`);
  try {
    await rename(folder, target);
  } catch (err) {
    // Removed meanwhile by another request.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new NotFoundError(`No skill ${name} in the runtime registry.`);
    throw err;
  }
  return target;
}

/** Takes a skill out of the runtime registry; 404 for an unknown one (also without a skills folder). */
export async function removeRuntimeSkill(skillsDir: string | undefined, name: string) {
  // Without a skills folder the runtime registry is empty: every name is unknown (404, as the
  // deployment-dependent families answer), with the reason spelled out for the operator.
  if (!skillsDir)
    throw new NotFoundError(
      `No skill ${name} in the runtime registry: this deployment has no skills folder (PLATFORM_SKILLS_DIR is not set).`,
      { reason: 'no_skills_folder' },
    );
  const target = await moveAside(skillsDir, name);
  return {
    skill_name: name,
    removed: true as const,
    moved_to: path.relative(skillsDir, target).split(path.sep).join('/'),
  };
}

/** Tombstones an imported package (later syncs leave it removed while its folder is unchanged); 404 when none is live. */
export async function removeImportedSkillPackage(em: EntityManager, principal: Principal, name: string) {
  const [row] = await sql<{ managed_source_id: string; commit_sha: string }>(
    em,
    `update agent_skill_packages set removed_at = now(), removed_by = ?
       where tenant = ? and name = ? and removed_at is null returning managed_source_id, commit_sha`,
    [principal.id, principal.tenant, name],
  );
  if (!row) throw new NotFoundError(`No imported skill package ${name}.`);
  return {
    skill_name: name,
    removed: true as const,
    managed_source_id: row.managed_source_id,
    commit_sha: row.commit_sha,
  };
}

/** The system prompt of a skill run: SKILL.md, then the instructions of the agent when one is named. */
async function skillSystemPrompt(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  name: string,
  agentId?: string,
) {
  const dirs = { skillsDir: deps.config.skillsDir, managedSourcesDir: deps.config.managedSources.dir };
  const found = await resolveSkill(em, dirs, principal.tenant, name);
  if (!found) throw new NotFoundError(`No skill ${name}.`);
  const skill = await readSkillFile(found.root, name, 'SKILL.md');
  if (!agentId) return skill.content;
  // 404 for an agent the caller may not see (never 403 for a hidden subject).
  const agent = await getVisibleAgent(em, principal, agentId);
  return `${skill.content}\n\n# Agent instructions\n${agent.instructions}`;
}

/** Runs a skill as one metered chat turn without tools; a provider failure is 502 `llm_error`. */
export async function executeSkill(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  name: string,
  body: { input: string; agent_id?: string },
) {
  const system = await skillSystemPrompt(deps, em, principal, name, body.agent_id);
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
  return { skill_name: name, output: r.content ?? '', model: r.model, provider: active.label };
}
