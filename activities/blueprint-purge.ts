import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import type { Logger } from '../shared/log.js';
import { purgeHiddenBlueprints } from '../shared/blueprints/purge.js';
import type { BlueprintHiddenPurgeResult } from '../workflows/blueprint-hidden-purge-definitions.js';

export function createBlueprintPurgeActivities(deps: { orm: MikroORM; config: AppConfig; log: Logger }) {
  return {
    /** Purges hidden blueprints without open missions (see shared/blueprints/purge.ts). */
    async purgeHiddenBlueprints(): Promise<BlueprintHiddenPurgeResult> {
      const purged = await purgeHiddenBlueprints(deps.orm.em.fork(), deps.config.blueprints.dir);
      if (purged.length) deps.log.info('hidden blueprints purged', { count: purged.length, purged });
      return { purged };
    },
  };
}

export type BlueprintPurgeActivities = ReturnType<typeof createBlueprintPurgeActivities>;
