/**
 * Mesh auth key settings (one row, `mesh_settings`): the auth key sealed (read from the file the
 * container service mounts, never from or to the API), whether the mesh is enabled, the egress list
 * (which, in container-service mode, is the outbound policy's allow-list) and the advertise tags.
 */
import { readFileSync } from 'node:fs';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Settings } from '../settings/store.js';
import type { AppConfig } from '../config.js';
import { refreshKeyring, secretBox } from './secret-box.js';
import { sql } from './rotation.js';
import { DEFAULT_EGRESS } from './mesh-limits.js';

export * from './mesh-limits.js';

const ROW_ID = 'deployment';

export interface MeshRow {
  enabled: boolean;
  auth_key_sealed: string | null;
  /** Setting `mesh.egress` when saved (null: the default list applies). */
  egress: string[] | null;
  /** Setting `mesh.advertise_tags` when saved. */
  advertise_tags: string[] | null;
  updated_by: string | null;
  updated_at: Date | null;
}

/**
 * The mesh row (`mesh_settings`: enabled, the sealed key) with the egress list and the tags, which
 * are settings (`mesh.egress`, `mesh.advertise_tags`, read through the one accessor).
 */
export async function readMesh(em: EntityManager, settings: Settings): Promise<MeshRow> {
  const rows = await sql<Omit<MeshRow, 'egress' | 'advertise_tags'>>(
    em,
    `select enabled, auth_key_sealed, updated_by, updated_at from mesh_settings where id = ?`,
    [ROW_ID],
  );
  const [egress, tags] = await settings.sources(['mesh.egress', 'mesh.advertise_tags']);
  const saved = (v: typeof egress) => (v!.source === 'saved' ? (v!.effective_value as string[]) : null);
  return {
    ...(rows[0] ?? { enabled: false, auth_key_sealed: null, updated_by: null, updated_at: null }),
    egress: saved(egress),
    advertise_tags: saved(tags),
  };
}

async function writeMesh(
  em: EntityManager,
  fields: Partial<Pick<MeshRow, 'enabled' | 'auth_key_sealed'>>,
  by: string,
): Promise<void> {
  const cols = Object.keys(fields) as Array<keyof typeof fields>;
  const values = cols.map((c) => fields[c]);
  const casts = cols.map(() => '?');
  await sql(
    em,
    `insert into mesh_settings (id, ${cols.join(', ')}, updated_by, updated_at) values (?, ${casts.join(', ')}, ?, now())
     on conflict (id) do update set ${cols.map((c) => `${c} = excluded.${c}`).join(', ')},
       updated_by = excluded.updated_by, updated_at = now()`,
    [ROW_ID, ...values, by],
  );
}

/** The auth key the container service mounted, or why it cannot be used (never its text in a message). */
export function readMountedAuthKey(config: AppConfig): { key: string } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(config.mesh.authKeyFile, 'utf8').trim();
  } catch {
    return { problem: `No auth key is mounted at ${config.mesh.authKeyFile} (PLATFORM_MESH_AUTH_KEY_FILE).` };
  }
  if (text.length < 16 || text.length > 512 || !/^[\x21-\x7e]+$/.test(text))
    return {
      problem: `The file at ${config.mesh.authKeyFile} does not hold an auth key (16 to 512 printable characters, no spaces).`,
    };
  return { key: text };
}

/** Seals the mounted auth key and enables the mesh. */
export async function enableMesh(em: EntityManager, config: AppConfig, key: string, by: string): Promise<void> {
  await refreshKeyring(em);
  await writeMesh(em, { enabled: true, auth_key_sealed: secretBox(config).seal(key) }, by);
}

/** Disables the mesh and drops the sealed auth key. */
export const disableMesh = (em: EntityManager, by: string) =>
  writeMesh(em, { enabled: false, auth_key_sealed: null }, by);

/** Whether the stored auth key opens and equals the mounted one (neither is ever returned). */
export async function storedKeyMatches(
  em: EntityManager,
  config: AppConfig,
  row: MeshRow,
  mounted: string | null,
): Promise<{ opens: boolean; matches: boolean | null }> {
  if (!row.auth_key_sealed) return { opens: false, matches: null };
  await refreshKeyring(em);
  try {
    const stored = secretBox(config).open(row.auth_key_sealed);
    return { opens: true, matches: mounted === null ? null : stored === mounted };
  } catch {
    return { opens: false, matches: null };
  }
}

/**
 * Gives the outbound policy its allow-list source in container-service mode: the effective setting
 * `mesh.egress` (saved, else the default), through the settings accessor, so a change reaches API and
 * worker without a restart. When the database cannot be read, the last list read is used (none read
 * yet: the default), so an outage never widens the policy.
 */
export function attachMeshEgress(config: AppConfig, settings: Settings): void {
  if (!config.egress.containerService || config.egress.destinations) return;
  let last: readonly string[] = DEFAULT_EGRESS;
  config.egress.destinations = async () => {
    try {
      const list = await settings.get('mesh.egress');
      last = list.length ? list : DEFAULT_EGRESS;
    } catch {
      // keep the last list read
    }
    return last;
  };
}
