import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { resolveBlueprint } from '../blueprints/store.js';
import type { AppConfig } from '../config.js';
import { sql } from '../db/sql.js';
import { PlatformError } from '../errors.js';
import { startMission } from '../missions/service.js';
import type { Manifests, SourceRef } from './hydrate.js';
import { ArtifactId, byFolder, readManifests, readYamlManifest } from './hydrate.js';

/**
 * Managed missions (scan type `missions`, issue 31 item 8). A managed source declares a mission as
 * `missions/<mission_key>/mission.yaml`; a sync starts each declared mission once, as the source
 * (`requested_by` `managed-source:<source_id>`), and records it in `managed_source_missions` (source,
 * key, the project id), so later syncs never start it again, even when the manifest changes (a new key
 * is a new mission). The manifest:
 *
 *   blueprint: churn-review     # required: a built-in blueprint or one this source imports (scan type blueprints)
 *   name: Churn review, weekly  # optional mission name (1-200 characters)
 *   parameters: {month: 2026-11} # optional mapping, passed to the mission
 *
 * A malformed manifest, a folder name that is not an artifact id, a blueprint that is neither built-in
 * nor this source's, or a start the mission rules refuse (unknown agents, a versioned blueprint without a
 * production version, …) is a degraded artifact, retried by the next sync; it never fails the sync. A
 * start is claimed before it is made, so a retried activity never starts a mission twice.
 */

export const MISSION_FILE = /^missions\/([^/]+)\/mission\.yaml$/;

export const MissionManifest = z.object({
  blueprint: z.string().trim().min(1).max(200),
  name: z.string().trim().min(1).max(200).nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
});

export interface DesiredMission {
  key: string;
  blueprint: string;
  name: string | null;
  parameters: Record<string, unknown>;
}

/** Reads `missions/<mission_key>/mission.yaml` manifests (paths relative to the working tree); bad ones are degraded. */
export async function readMissionManifests(
  workdir: string,
  files: readonly string[],
): Promise<Manifests<DesiredMission>> {
  const read = byFolder<DesiredMission>(MISSION_FILE, async (file, key, refuse) => {
    if (!ArtifactId.safeParse(key).success)
      return refuse('mission folder name must be lowercase letters, digits, "_" and "-" (max 64)');
    const m = await readYamlManifest(workdir, file, MissionManifest);
    if (!m.ok) return refuse(m.reason);
    return {
      desired: { key, blueprint: m.value.blueprint, name: m.value.name ?? null, parameters: m.value.parameters ?? {} },
    };
  });
  return readManifests(files, read);
}

/** The principal a source's missions start as: it may view built-ins and (checked before) its own blueprints. */
function missionPrincipal(source: SourceRef): Principal {
  return {
    kind: 'system',
    id: `managed-source:${source.id}`,
    tenant: source.tenant,
    displayName: `Managed source ${source.id}`,
    roles: [],
    permissions: new Set(['view_all_blueprints']),
    credential: 'service_token',
  };
}

/** Why the source may not run `blueprint` (null when it may): only built-ins and the source's own blueprints. */
async function refusal(em: EntityManager, root: string, source: SourceRef, blueprint: string) {
  try {
    const b = await resolveBlueprint(em, root, source.tenant, blueprint);
    if (b.kind === 'default' || b.row.source_id === source.id) return null;
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
  }
  return `blueprint ${blueprint} is neither a built-in nor imported by this source`;
}

/** Starts each declared mission not started before; answers how many started and the degraded ones. */
export async function importMissions(
  em: EntityManager,
  deps: { config: AppConfig; temporal?: Client },
  source: SourceRef,
  commitSha: string,
  read: Manifests<DesiredMission>,
): Promise<{ applied: number; degraded: Manifests<DesiredMission>['degraded'] }> {
  const degraded = [...read.degraded];
  const temporal = deps.temporal;
  let applied = 0;
  for (const d of read.desired) {
    const claimed = await sql<{ mission_key: string }>(
      em,
      `insert into managed_source_missions (source_id, mission_key, tenant, commit_sha) values (?, ?, ?, ?)
       on conflict do nothing returning mission_key`,
      [source.id, d.key, source.tenant, commitSha],
    );
    if (!claimed.length) continue; // started by an earlier sync
    const unclaim = () =>
      sql(em, 'delete from managed_source_missions where source_id = ? and mission_key = ?', [source.id, d.key]);
    let started: { id: string } | string;
    try {
      const refused = temporal
        ? await refusal(em, deps.config.blueprints.dir, source, d.blueprint)
        : 'no Temporal client here to start the mission';
      started = refused ?? (await start(em, { config: deps.config, temporal: temporal! }, source, d));
    } catch (err) {
      // An outage (not a refusal): the claim goes and the activity's retry tries again.
      await unclaim();
      throw err;
    }
    if (typeof started === 'string') {
      // Not started: the claim goes, so the next sync tries again.
      await unclaim();
      degraded.push({ artifact_id: d.key, reason: started });
      continue;
    }
    await sql(em, 'update managed_source_missions set project_id = ? where source_id = ? and mission_key = ?', [
      started.id,
      source.id,
      d.key,
    ]);
    applied++;
  }
  return { applied, degraded };
}

/** Starts one mission; a refusal of the mission rules answers its message. */
async function start(
  em: EntityManager,
  deps: { config: AppConfig; temporal: Client },
  source: SourceRef,
  d: DesiredMission,
): Promise<{ id: string } | string> {
  try {
    return await startMission(deps, em, missionPrincipal(source), {
      blueprint_name: d.blueprint,
      ...(d.name ? { name: d.name } : {}),
      parameters: d.parameters,
    });
  } catch (err) {
    if (err instanceof PlatformError) return `mission not started: ${err.message}`;
    throw err;
  }
}
