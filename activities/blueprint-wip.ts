import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import { lockBlueprint, repoDir } from '../shared/blueprints/store.js';
import { closeWipSession, deleteWipBranch, findWipSession } from '../shared/blueprints/wip.js';

/** The blueprint WIP session workflow's one effect: closing a session at its expiry (idempotent). */
export function createBlueprintWipActivities(deps: { orm: MikroORM; config: AppConfig }) {
  return {
    /**
     * Marks the session `expired` and drops its `wip/<id>` branch, under the blueprint's lock, unless it
     * was committed or discarded first. Answers whether this call expired it (a repeat answers false).
     */
    async expireBlueprintWipSession({ sessionId }: { sessionId: string }): Promise<{ expired: boolean }> {
      return deps.orm.em.fork().transactional(async (tx) => {
        const row = await findWipSession(tx, sessionId);
        if (!row) return { expired: false };
        await lockBlueprint(tx, row.blueprint_id);
        const closed = await closeWipSession(tx, sessionId, 'expired', null, null);
        if (!closed) return { expired: false };
        await deleteWipBranch(repoDir(deps.config.blueprints.dir, row.tenant, row.blueprint_id), sessionId);
        return { expired: true };
      });
    },
  };
}

export type BlueprintWipActivities = ReturnType<typeof createBlueprintWipActivities>;
