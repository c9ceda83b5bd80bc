import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import {
  ArtifactId,
  byFolder,
  readManifests,
  readYamlManifest,
  type DegradedArtifact,
  type Manifests,
  type SourceRef,
} from './hydrate.js';

/**
 * Managed apps (issue 15). A managed source with scan type `apps` records every `apps/<app_name>/app.yaml`
 * of its working tree in `managed_apps` (one row per source and app name), at once on each sync (no
 * preview, like skill packages). An app is addressed as `<source_id>:<app_name>` (organizational project
 * assignments). The manifest (`app.yaml`):
 *
 *   name: Sales dashboard        # display name (required, 1-100 characters)
 *   description: Weekly pipeline # optional, up to 2,000 characters
 *   entry: dist/index.html       # required: a file inside apps/<app_name>/ (relative, no "..")
 *   version: 1.2.0               # optional, up to 64 characters
 *
 * A malformed manifest, a folder name that is not an artifact id, or an entry that is not a file of the
 * folder is a degraded artifact and never fails the sync; what the app recorded before stays. A folder
 * no longer present (or no longer holding app.yaml) removes its row.
 */

export const APP_FILE = /^apps\/([^/]+)\/app\.yaml$/;

const EntryPath = z
  .string()
  .trim()
  .min(1)
  .max(500)
  .refine(
    (p) => !p.startsWith('/') && !p.includes('\\') && p.split('/').every((s) => s !== '..' && s !== ''),
    'a relative path inside the app folder (no leading "/", no "..", no empty segments)',
  );

export const AppManifest = z.object({
  name: z.string().trim().min(1).max(100),
  description: z.string().max(2_000).nullable().optional(),
  entry: EntryPath,
  version: z.string().trim().min(1).max(64).nullable().optional(),
});

export interface DesiredApp {
  name: string;
  manifest: { name: string; description: string | null; entry: string; version: string | null };
}

/** Reads `apps/<app_name>/app.yaml` manifests (paths relative to the working tree); bad ones are degraded. */
export async function readAppManifests(workdir: string, files: readonly string[]): Promise<Manifests<DesiredApp>> {
  const read = byFolder<DesiredApp>(APP_FILE, async (file, appName, refuse) => {
    if (!ArtifactId.safeParse(appName).success)
      return refuse('app folder name must be lowercase letters, digits, "_" and "-" (max 64)');
    const m = await readYamlManifest(workdir, file, AppManifest);
    if (!m.ok) return refuse(m.reason);
    const entry = m.value.entry;
    const stat = await lstat(path.join(workdir, 'apps', appName, ...entry.split('/'))).catch(() => null);
    if (!stat?.isFile()) return refuse(`entry ${entry} is not a file of apps/${appName}/`);
    const { name, description, version } = m.value;
    return {
      desired: { name: appName, manifest: { name, description: description ?? null, entry, version: version ?? null } },
    };
  });
  return readManifests(files, read);
}

/** Records the source's apps: new and changed manifests are written, apps no longer declared removed. */
export async function applyApps(
  em: EntityManager,
  source: SourceRef,
  commitSha: string,
  read: Manifests<DesiredApp>,
  now = new Date(),
): Promise<{ applied: number; degraded: DegradedArtifact[] }> {
  const rows = await sql<{ name: string; manifest: DesiredApp['manifest'] }>(
    em,
    'select name, manifest from managed_apps where source_id = ? and tenant = ?',
    [source.id, source.tenant],
  );
  const mine = new Map(rows.map((r) => [r.name, r]));
  let applied = 0;
  for (const d of read.desired) {
    const cur = mine.get(d.name);
    const changed = !cur || JSON.stringify(cur.manifest) !== JSON.stringify(d.manifest);
    await sql(
      em,
      `insert into managed_apps (source_id, name, tenant, manifest, commit_sha, created_at, updated_at)
       values (?, ?, ?, ?::jsonb, ?, ?, ?)
       on conflict (source_id, name) do update set manifest = excluded.manifest, commit_sha = excluded.commit_sha,
         updated_at = case when managed_apps.manifest = excluded.manifest then managed_apps.updated_at else excluded.updated_at end`,
      [source.id, d.name, source.tenant, JSON.stringify(d.manifest), commitSha, now, now],
    );
    if (changed) applied++;
  }
  // A degraded manifest keeps what it recorded before; only apps no longer declared go.
  const keep = new Set([...read.desired.map((d) => d.name), ...read.degraded.map((d) => d.artifact_id)]);
  const gone = [...mine.keys()].filter((n) => !keep.has(n));
  if (gone.length) {
    await sql(
      em,
      `delete from managed_apps where source_id = ? and tenant = ? and name in (${gone.map(() => '?').join(', ')})`,
      [source.id, source.tenant, ...gone],
    );
    applied += gone.length;
  }
  return { applied, degraded: [...read.degraded] };
}
