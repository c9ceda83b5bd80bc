import { createHash } from 'node:crypto';
import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import YAML from 'yaml';
import { listFiles } from '../managed-sources/git.js';
import {
  byFolder,
  readManifests,
  type DegradedArtifact,
  type Manifests,
  type SourceRef,
} from '../managed-sources/hydrate.js';
import { SKILL_NAME } from './read.js';
import { sql } from '../db/sql.js';

/**
 * Imported agent-skill packages (issue 12). A managed source with scan type `skills` imports every
 * `skills/<skill_name>/SKILL.md` folder of its working tree into `agent_skill_packages`; the files are
 * served from the working tree (which follows the synced commit). SKILL.md may open with YAML front
 * matter carrying a `description` (and, if it names one, `name` equal to the folder); without front
 * matter its first line is the description. Malformed front matter, an empty SKILL.md, a malformed
 * package, or a name another source already imported, is a degraded artifact; what it imported
 * before stays. A folder no longer present removes its package. A package removed with
 * `DELETE /api/agent-skills/{skill_name}` keeps a tombstone and is not re-imported until the source
 * changes that folder (its content hash).
 */

export const SKILL_FILE = /^skills\/([^/]+)\/SKILL\.md$/;
const MAX_DESCRIPTION = 1_024;

export interface DesiredSkill {
  name: string;
  /** The folder, relative to the working tree (`skills/<name>`). */
  path: string;
  description: string;
  content_hash: string;
}

/** The front matter of SKILL.md: null when it has none, a refusal when it is malformed. */
function frontMatter(
  text: string,
): { ok: true; value: Record<string, unknown> | null } | { ok: false; reason: string } {
  if (!/^\uFEFF?---\r?\n/.test(text)) return { ok: true, value: null };
  const m = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\r?(\n|$)/.exec(text);
  if (!m) return { ok: false, reason: 'front matter is not closed by a --- line' };
  const doc = YAML.parseDocument(m[1]!);
  if (doc.errors.length) return { ok: false, reason: `invalid front matter: ${doc.errors[0]!.message.split('\n')[0]}` };
  const value = doc.toJS() as unknown;
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, reason: 'front matter must be a mapping' };
  return { ok: true, value: value as Record<string, unknown> };
}

/** Without front matter: the first non-empty line (a heading's text), as the description. */
function firstLine(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim()) ?? '';
  return line
    .replace(/^#+\s*/, '')
    .trim()
    .slice(0, MAX_DESCRIPTION);
}

async function folderHash(workdir: string, folder: string): Promise<string> {
  const h = createHash('sha256');
  for await (const rel of listFiles(workdir, folder)) {
    h.update(`${rel}\0`);
    h.update(await readFile(path.join(workdir, ...rel.split('/'))));
    h.update('\0');
  }
  return h.digest('hex');
}

/** Reads the skill packages (SKILL.md paths relative to the working tree); bad ones are degraded. */
export async function readSkillPackages(workdir: string, files: readonly string[]): Promise<Manifests<DesiredSkill>> {
  const read = byFolder<DesiredSkill>(SKILL_FILE, async (file, name, refuse) => {
    if (!SKILL_NAME.test(name))
      return refuse(
        'skill folder name must be letters, digits, ".", "_" and "-" (max 128), starting with a letter or digit',
      );
    const folder = `skills/${name}`;
    const info = await lstat(path.join(workdir, 'skills', name)).catch(() => null);
    if (!info?.isDirectory()) return refuse('the skill must be a plain folder');
    let text: string;
    try {
      text = await readFile(path.join(workdir, ...file.split('/')), 'utf8');
    } catch (err) {
      return refuse(`unreadable: ${(err as Error).message}`);
    }
    const description = skillDescription(name, text);
    if (!description.ok) return refuse(description.reason);
    return {
      desired: { name, path: folder, description: description.value, content_hash: await folderHash(workdir, folder) },
    };
  });
  return readManifests(files, read);
}

/** The description SKILL.md declares (front matter, else its first line), or why it is refused. */
function skillDescription(name: string, text: string): { ok: true; value: string } | { ok: false; reason: string } {
  const fm = frontMatter(text);
  if (!fm.ok) return fm;
  if (!text.trim()) return { ok: false, reason: 'SKILL.md is empty' };
  const { name: declared, description } = fm.value ?? { description: firstLine(text) };
  if (declared !== undefined && declared !== name)
    return { ok: false, reason: `name ${String(declared)} differs from its folder ${name}` };
  if (typeof description !== 'string' || !description.trim() || description.length > MAX_DESCRIPTION)
    return {
      ok: false,
      reason: `front matter needs a description (a string of 1 to ${MAX_DESCRIPTION} characters)`,
    };
  return { ok: true, value: description.trim() };
}

interface PackageRow {
  name: string;
  managed_source_id: string;
  content_hash: string;
  removed_at: Date | null;
}

/**
 * Writes the packages of one source: imports new and changed ones, keeps tombstoned unchanged ones
 * removed, removes the packages whose folder is gone. Names imported by another source are degraded.
 */
export async function applySkillPackages(
  em: EntityManager,
  source: SourceRef,
  commitSha: string,
  read: Manifests<DesiredSkill>,
  now = new Date(),
): Promise<{ applied: number; degraded: DegradedArtifact[] }> {
  const rows = await sql<PackageRow>(
    em,
    'select name, managed_source_id, content_hash, removed_at from agent_skill_packages where tenant = ?',
    [source.tenant],
  );
  const mine = new Map(rows.filter((r) => r.managed_source_id === source.id).map((r) => [r.name, r]));
  const foreign = new Set(rows.filter((r) => r.managed_source_id !== source.id).map((r) => r.name));
  const degraded = [...read.degraded];
  let applied = 0;
  const keep = new Set(read.degraded.map((d) => d.artifact_id));
  for (const d of read.desired) {
    if (foreign.has(d.name)) {
      degraded.push({ artifact_id: d.name, reason: `skill ${d.name} is already imported by another source` });
      continue;
    }
    keep.add(d.name);
    const cur = mine.get(d.name);
    // Tombstoned and unchanged: stays removed.
    if (cur?.removed_at && cur.content_hash === d.content_hash) continue;
    if (cur && !cur.removed_at && cur.content_hash === d.content_hash) {
      await sql(
        em,
        'update agent_skill_packages set commit_sha = ?, path = ?, description = ? where tenant = ? and name = ?',
        [commitSha, d.path, d.description, source.tenant, d.name],
      );
      continue;
    }
    await sql(
      em,
      `insert into agent_skill_packages (tenant, name, managed_source_id, path, description, commit_sha, content_hash, imported_at, removed_at, removed_by)
       values (?, ?, ?, ?, ?, ?, ?, ?, null, null)
       on conflict (tenant, name) do update set path = excluded.path, description = excluded.description,
         commit_sha = excluded.commit_sha, content_hash = excluded.content_hash, imported_at = excluded.imported_at,
         removed_at = null, removed_by = null
       where agent_skill_packages.managed_source_id = excluded.managed_source_id`,
      [source.tenant, d.name, source.id, d.path, d.description, commitSha, d.content_hash, now],
    );
    applied++;
  }
  const gone = [...mine.keys()].filter((n) => !keep.has(n));
  if (gone.length) {
    const removed = await sql<{ name: string; removed_at: Date | null }>(
      em,
      `delete from agent_skill_packages where tenant = ? and managed_source_id = ? and name in (${gone.map(() => '?').join(', ')}) returning name, removed_at`,
      [source.tenant, source.id, ...gone],
    );
    applied += removed.filter((r) => !r.removed_at).length;
  }
  return { applied, degraded };
}

export interface ResolvedSkill {
  origin: 'runtime' | 'imported';
  /** The folder holding `<skill_name>/` (what `readSkillFile` takes as root). */
  root: string;
  managed_source_id: string | null;
}

/**
 * Where a skill's files are: the runtime registry (`PLATFORM_SKILLS_DIR`) first, then the tenant's
 * imported packages (in their source's working tree). Null when neither has it.
 */
export async function resolveSkill(
  em: EntityManager,
  opts: { skillsDir: string | undefined; managedSourcesDir: string },
  tenant: string,
  skillName: string,
): Promise<ResolvedSkill | null> {
  if (!SKILL_NAME.test(skillName)) return null;
  if (opts.skillsDir) {
    const info = await lstat(path.join(opts.skillsDir, skillName)).catch(() => null);
    if (info && (info.isDirectory() || info.isSymbolicLink()))
      return { origin: 'runtime', root: opts.skillsDir, managed_source_id: null };
  }
  const [row] = await sql<{ managed_source_id: string; path: string }>(
    em,
    'select managed_source_id, path from agent_skill_packages where tenant = ? and name = ? and removed_at is null',
    [tenant, skillName],
  );
  if (!row) return null;
  const folder = path.join(opts.managedSourcesDir, row.managed_source_id, 'checkout', ...row.path.split('/'));
  return { origin: 'imported', root: path.dirname(folder), managed_source_id: row.managed_source_id };
}
