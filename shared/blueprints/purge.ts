/**
 * Purging hidden blueprints (issue 14). DELETE of a blueprint that missions reference hides it
 * (`blueprints.hidden`) so those missions keep resolving it; once none of them is in a non-terminal
 * state (`running` or `paused`: completed, cancelled and closed missions are done), the blueprint is
 * purged like a DELETE without missions: its row (versions, promotions, grants and WIP sessions cascade),
 * unreferenced version blobs and its repository. The missions' records (`projects` rows and their
 * history, which carry `blueprint_name`, `blueprint_id` and `blueprint_commit`) are kept. Run by the
 * workflow `blueprintHiddenPurgeWorkflow`, started by the Schedule `blueprint-hidden-purge`.
 */
import { rm } from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { lockBlueprint, repoDir, type BlueprintRow } from './store.js';
import { dropOrphanBlobs } from './versions.js';
import { sql } from '../db/sql.js';

const PURGEABLE = `b.hidden and not exists (
    select 1 from projects p where p.blueprint_id = b.blueprint_id and p.status in ('running', 'paused'))`;

/** Hidden blueprints without an open mission (every tenant), oldest change first. */
export async function purgeableHiddenBlueprints(em: EntityManager, limit: number): Promise<BlueprintRow[]> {
  return sql<BlueprintRow>(em, `select b.* from blueprints b where ${PURGEABLE} order by b.updated_at limit ?`, [
    limit,
  ]);
}

/**
 * Purges up to `limit` hidden blueprints without open missions; each under its own lock and
 * transaction, re-checked there. Answers the purged blueprints.
 */
export async function purgeHiddenBlueprints(
  em: EntityManager,
  root: string,
  limit = 100,
): Promise<Array<{ blueprint_id: string; tenant: string; name: string }>> {
  const purged: Array<{ blueprint_id: string; tenant: string; name: string }> = [];
  for (const candidate of await purgeableHiddenBlueprints(em, limit)) {
    const done = await em.fork().transactional(async (tx) => {
      await lockBlueprint(tx, candidate.blueprint_id);
      const still = await sql<{ blueprint_id: string }>(
        tx,
        `select b.blueprint_id from blueprints b where b.blueprint_id = ? and ${PURGEABLE}`,
        [candidate.blueprint_id],
      );
      if (!still.length) return false;
      await sql(tx, `delete from blueprints where blueprint_id = ?`, [candidate.blueprint_id]);
      await dropOrphanBlobs(tx);
      await rm(repoDir(root, candidate.tenant, candidate.blueprint_id), { recursive: true, force: true });
      return true;
    });
    if (done) purged.push({ blueprint_id: candidate.blueprint_id, tenant: candidate.tenant, name: candidate.name });
  }
  return purged;
}
