/**
 * Mesh auth key settings (one row, `mesh_settings`): the auth key sealed (read from the file the
 * container service mounts, never from or to the API), whether the mesh is enabled, the egress list
 * (which, in container-service mode, is the outbound policy's allow-list) and the advertise tags.
 */
import { readFileSync } from 'node:fs';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { AppConfig } from '../config.js';
import { refreshKeyring, secretBox } from './secret-box.js';
import { sql } from './rotation.js';

const ROW_ID = 'deployment';
export const DEFAULT_EGRESS = ['0.0.0.0:443'] as const;

const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** `host:port`: a DNS name or IPv4 address (`0.0.0.0` means any host), port 1 to 65535. */
export const EgressEntrySchema = z
  .string()
  .max(259)
  .regex(new RegExp(`^${LABEL}(?:\\.${LABEL})*:${PORT}$`), 'host:port with a port from 1 to 65535');
export const EgressListSchema = z.array(EgressEntrySchema).min(1).max(256);
/** `tag:<name>`: letters, digits and hyphens, starting alphanumeric. */
export const AdvertiseTagSchema = z
  .string()
  .max(512)
  .regex(/^tag:[A-Za-z0-9][A-Za-z0-9-]*$/, 'tag:<name> (letters, digits, hyphens; starting alphanumeric)');
export const MAX_TAGS = 32;
export const MAX_TAGS_TOTAL_LENGTH = 512;
export const AdvertiseTagsSchema = z.array(AdvertiseTagSchema).max(MAX_TAGS);

export interface MeshRow {
  enabled: boolean;
  auth_key_sealed: string | null;
  egress: string[] | null;
  advertise_tags: string[] | null;
  updated_by: string | null;
  updated_at: Date | null;
}

export async function readMesh(em: EntityManager): Promise<MeshRow> {
  const rows = await sql<MeshRow>(em, `select * from mesh_settings where id = ?`, [ROW_ID]);
  return (
    rows[0] ?? {
      enabled: false,
      auth_key_sealed: null,
      egress: null,
      advertise_tags: null,
      updated_by: null,
      updated_at: null,
    }
  );
}

async function writeMesh(
  em: EntityManager,
  fields: Partial<Pick<MeshRow, 'enabled' | 'auth_key_sealed' | 'egress' | 'advertise_tags'>>,
  by: string,
): Promise<void> {
  const cols = Object.keys(fields) as Array<keyof typeof fields>;
  const values = cols.map((c) => (c === 'egress' || c === 'advertise_tags' ? JSON.stringify(fields[c]) : fields[c]));
  const casts = cols.map((c) => (c === 'egress' || c === 'advertise_tags' ? '?::jsonb' : '?'));
  await sql(
    em,
    `insert into mesh_settings (id, ${cols.join(', ')}, updated_by, updated_at) values (?, ${casts.join(', ')}, ?, now())
     on conflict (id) do update set ${cols.map((c) => `${c} = excluded.${c}`).join(', ')},
       updated_by = excluded.updated_by, updated_at = now()`,
    [ROW_ID, ...values, by],
  );
}

export const setEgress = (em: EntityManager, entries: string[], by: string) => writeMesh(em, { egress: entries }, by);
export const setAdvertiseTags = (em: EntityManager, tags: string[], by: string) =>
  writeMesh(em, { advertise_tags: tags }, by);

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
 * Gives the outbound policy its allow-list source in container-service mode: the stored egress
 * list, else the default. When the database cannot be read, the last list read is used (none read
 * yet: the default), so an outage never widens the policy.
 */
export function attachMeshEgress(config: AppConfig, orm: MikroORM): void {
  if (!config.egress.containerService || config.egress.destinations) return;
  let last: readonly string[] = DEFAULT_EGRESS;
  config.egress.destinations = async () => {
    try {
      const row = await readMesh(orm.em.fork());
      last = row.egress && row.egress.length ? row.egress : DEFAULT_EGRESS;
    } catch {
      // keep the last list read
    }
    return last;
  };
}
