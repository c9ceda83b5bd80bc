import { rm } from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { sql } from '../db/sql.js';
import { unlinkSourceIndexes } from '../document-index/kb-feed.js';
import { removeSourceArtifacts } from './hydrate.js';
import { sourcePaths } from './source-access.js';

/** What the `source-delete` workflow does once a source is pending deletion (see `deletion.ts`). */
type SourceKey = { id: string; tenant: string };

/**
 * Removes the agents and roles the source imported and unlinks the indexes it fed (they stay, as
 * ordinary indexes); a failure is recorded on `deletion_state` (attempt, last error) and thrown.
 */
export async function cleanupSourceArtifacts(
  em: EntityManager,
  source: SourceKey,
  attempt: number,
): Promise<{ agents: number; roles: number }> {
  try {
    const removed = await removeSourceArtifacts(em, source);
    // The indexes the source fed stay, as ordinary indexes (their documents no longer Git-backed).
    await unlinkSourceIndexes(em, source);
    return removed;
  } catch (err) {
    await sql(
      em,
      `update managed_sources set deletion_state = deletion_state || ?::jsonb, updated_at = now() where id = ? and deletion_state is not null`,
      [
        JSON.stringify({
          attempts: attempt,
          last_error: 'Cleanup of imported artifacts failed; retrying.',
          last_failed_at: new Date().toISOString(),
        }),
        source.id,
      ],
    ).catch(() => undefined);
    throw err;
  }
}

/** Removes the source row (its jobs cascade) and its files; idempotent. */
export async function removeSource(em: EntityManager, config: AppConfig, source: SourceKey): Promise<void> {
  await sql(em, 'delete from managed_sources where id = ? and tenant = ?', [source.id, source.tenant]);
  await rm(sourcePaths(config, source.id).root, { recursive: true, force: true });
}
