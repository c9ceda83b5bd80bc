import type { MikroORM } from '@mikro-orm/postgresql';
import { rename } from '../shared/blueprints/service.js';
import { sourcePrincipal } from '../shared/blueprints/remote.js';
import { findRowById, resolveBlueprint } from '../shared/blueprints/store.js';
import type { AppConfig } from '../shared/config.js';
import { execSql } from '../shared/db/sql.js';
import { PlatformError } from '../shared/errors.js';
import type { BlueprintRenameCheck, BlueprintRenameInput } from '../workflows/blueprint-rename-definitions.js';

/** Activities of `blueprint-rename/<blueprint_id>` (workflows/blueprint-rename.ts). */
export function createBlueprintRenameActivities(deps: { orm: MikroORM; config: AppConfig }) {
  const root = deps.config.blueprints.dir;
  return {
    /**
     * Applies the rename once a source sync saw the renamed directory (the row's `source_path` is the
     * pull request's new path); answers `waiting` before that, or while the local rename is refused
     * for now (in-flight missions, the name taken), with the reason.
     */
    async blueprintRenameCheck(input: BlueprintRenameInput): Promise<BlueprintRenameCheck> {
      const em = deps.orm.em.fork();
      const row = await findRowById(em, input.tenant, input.blueprintId);
      const pending = row?.pending_rename as { new_name?: string } | null | undefined;
      if (!row || !row.source_id || pending?.new_name !== input.newName) {
        return row?.name === input.newName ? { status: 'applied', blueprint_name: row.name } : { status: 'gone' };
      }
      if (row.source_path !== input.newPath) return { status: 'waiting', reason: null };
      try {
        const ctx = { em, principal: sourcePrincipal(row.source_id, input.tenant), root };
        if (row.name !== input.newName)
          await rename(ctx, await resolveBlueprint(em, root, input.tenant, row.name), input.newName);
      } catch (err) {
        if (err instanceof PlatformError) return { status: 'waiting', reason: err.message };
        throw err;
      }
      await execSql(em, `update blueprints set pending_rename = null, updated_at = now() where blueprint_id = ?`, [
        input.blueprintId,
      ]);
      return { status: 'applied', blueprint_name: input.newName };
    },

    /** Drops a pending rename whose pull request was not merged and synced in time. */
    async blueprintRenameExpire(input: BlueprintRenameInput): Promise<void> {
      await execSql(
        deps.orm.em.fork(),
        `update blueprints set pending_rename = null where blueprint_id = ? and pending_rename->>'new_name' = ?`,
        [input.blueprintId, input.newName],
      );
    },
  };
}

export type BlueprintRenameActivities = ReturnType<typeof createBlueprintRenameActivities>;
