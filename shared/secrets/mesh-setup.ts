/**
 * The mesh auth key as `/api/secrets/mesh-auth-key/…` answers it (container-service mode only): its
 * status (never the key), the set-up and take-down instructions, the set-up checks, enabling from the
 * mounted key, and the egress list and advertise tags (saved as settings).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { BadRequestError } from '../errors.js';
import { saveSettingValues } from '../settings/save-settings.js';
import { requireContainerServiceMode } from './key-status.js';
import {
  DEFAULT_EGRESS,
  disableMesh,
  enableMesh,
  MAX_TAGS_TOTAL_LENGTH,
  readMesh,
  readMountedAuthKey,
  storedKeyMatches,
  type MeshRow,
} from './mesh.js';
import { SettingsCodes } from '../settings/error-codes.js';

export const meshEgressView = (config: AppConfig, row: MeshRow) => ({
  entries: row.egress && row.egress.length ? row.egress : [...DEFAULT_EGRESS],
  default: !(row.egress && row.egress.length),
  enforced: config.egress.containerService,
});

function meshStatusOf(config: AppConfig, row: MeshRow) {
  return {
    enabled: row.enabled,
    auth_key_stored: row.auth_key_sealed !== null,
    auth_key_mounted: 'key' in readMountedAuthKey(config),
    egress: meshEgressView(config, row),
    advertise_tags: row.advertise_tags ?? [],
    updated_at: row.updated_at ? new Date(row.updated_at).toISOString() : null,
  };
}

/** Reads the mesh settings once the deployment is known to run as a container service (else 400). */
async function readMeshHere(deps: AppDeps, em: EntityManager): Promise<MeshRow> {
  requireContainerServiceMode(deps.config);
  return readMesh(em, deps.settings);
}

export async function meshStatus(deps: AppDeps, em: EntityManager) {
  return meshStatusOf(deps.config, await readMeshHere(deps, em));
}

export async function meshEgress(deps: AppDeps, em: EntityManager) {
  return meshEgressView(deps.config, await readMeshHere(deps, em));
}

export async function meshAdvertiseTags(deps: AppDeps, em: EntityManager) {
  return { tags: (await readMeshHere(deps, em)).advertise_tags ?? [] };
}

/** How to provide the auth key: steps and a service specification fragment (never the key). */
export async function meshSetupInstructions(deps: AppDeps, em: EntityManager) {
  const row = await readMeshHere(deps, em);
  const file = deps.config.mesh.authKeyFile;
  const tagList = (row.advertise_tags ?? []).join(',');
  return {
    steps: [
      `Create a reusable, pre-approved auth key in the mesh's admin console${tagList ? ` tagged ${tagList}` : ''}.`,
      'Store it as a secret of the container service (never paste it into this API).',
      `Mount the secret as a file at ${file} (or set PLATFORM_MESH_AUTH_KEY_FILE to where it is mounted).`,
      'POST /api/secrets/mesh-auth-key/enable: the key is read from the file and stored sealed.',
      'GET /api/secrets/mesh-auth-key/verify-setup to check.',
    ],
    template: [
      'secrets:',
      '  - warehouseSecret: <DATABASE>.<SCHEMA>.<MESH_AUTH_KEY_SECRET>',
      '    secretKeyRef: secret_string',
      `    directoryPath: ${file.replace(/\/[^/]*$/, '') || '/'}`,
      'env:',
      `  PLATFORM_MESH_AUTH_KEY_FILE: ${file}`,
      `  PLATFORM_CONTAINER_SERVICE_MODE: "true"`,
    ].join('\n'),
    auth_key_file: file,
  };
}

/** How to take the auth key away after disabling. */
export function meshDisableInstructions(config: AppConfig) {
  requireContainerServiceMode(config);
  const file = config.mesh.authKeyFile;
  return {
    steps: [
      'POST /api/secrets/mesh-auth-key/disable: the mesh is disabled and the stored sealed key deleted.',
      `Remove the secret mounted at ${file} from the service specification and redeploy.`,
      "Revoke the auth key in the mesh's admin console.",
    ],
    template: [
      '-- remove from the service specification:',
      `--   mount of ${file}`,
      'DROP SECRET <DATABASE>.<SCHEMA>.<MESH_AUTH_KEY_SECRET>;',
    ].join('\n'),
    auth_key_file: file,
  };
}

function storedKeyMessage(row: MeshRow, opens: boolean): string {
  if (!row.auth_key_sealed) return 'No auth key stored: POST enable.';
  return opens ? 'The stored auth key opens.' : 'The stored auth key does not open with the current keys.';
}

/** The checks of `GET /api/secrets/mesh-auth-key/verify-setup`: mounted, stored, current, enabled. */
export async function verifyMeshSetup(deps: AppDeps, em: EntityManager) {
  const row = await readMeshHere(deps, em);
  const mounted = readMountedAuthKey(deps.config);
  const stored = await storedKeyMatches(em, deps.config, row, 'key' in mounted ? mounted.key : null);
  const current = stored.matches === true;
  const checks = [
    {
      name: 'auth_key_mounted',
      ok: 'key' in mounted,
      message: 'key' in mounted ? 'An auth key is mounted.' : mounted.problem,
    },
    { name: 'auth_key_stored', ok: stored.opens, message: storedKeyMessage(row, stored.opens) },
    {
      name: 'auth_key_current',
      ok: current,
      message: current
        ? 'The stored auth key is the mounted one.'
        : 'The stored auth key is not the mounted one (or one is missing): POST enable again.',
    },
    { name: 'enabled', ok: row.enabled, message: row.enabled ? 'The mesh is enabled.' : 'The mesh is disabled.' },
  ];
  return { ok: checks.every((c) => c.ok), checks };
}

/** Reads the mounted auth key (400 `mesh_auth_key_not_mounted` without a usable one), stores it sealed, enables the mesh. */
export async function enableMountedMesh(deps: AppDeps, em: EntityManager, principal: Principal) {
  requireContainerServiceMode(deps.config);
  const mounted = readMountedAuthKey(deps.config);
  if (!('key' in mounted))
    throw new BadRequestError(mounted.problem, { code: SettingsCodes.mesh_auth_key_not_mounted });
  await enableMesh(em, deps.config, mounted.key, principal.id);
  return meshStatusOf(deps.config, await readMesh(em, deps.settings));
}

export async function disableMeshHere(deps: AppDeps, em: EntityManager, principal: Principal) {
  requireContainerServiceMode(deps.config);
  await disableMesh(em, principal.id);
  return meshStatusOf(deps.config, await readMesh(em, deps.settings));
}

/** Saves the egress list (setting `mesh.egress`, lower-cased, duplicates dropped); the outbound policy follows it. */
export async function saveMeshEgress(deps: AppDeps, em: EntityManager, principal: Principal, entries: string[]) {
  requireContainerServiceMode(deps.config);
  await saveSettingValues(deps, em, principal, {
    'mesh.egress': [...new Set(entries.map((e) => e.toLowerCase()))],
  });
  return meshEgressView(deps.config, await readMesh(em, deps.settings));
}

/** Saves the advertise tags (setting `mesh.advertise_tags`); more than the total length is 400 `tags_too_long`. */
export async function saveMeshAdvertiseTags(deps: AppDeps, em: EntityManager, principal: Principal, tags: string[]) {
  requireContainerServiceMode(deps.config);
  const unique = [...new Set(tags)];
  const total = unique.reduce((n, t) => n + t.length, 0);
  if (total > MAX_TAGS_TOTAL_LENGTH)
    throw new BadRequestError(`The tags are ${total} characters together; at most ${MAX_TAGS_TOTAL_LENGTH}.`, {
      code: SettingsCodes.tags_too_long,
      fields: [{ field: 'body.tags', message: `total length at most ${MAX_TAGS_TOTAL_LENGTH}` }],
    });
  await saveSettingValues(deps, em, principal, { 'mesh.advertise_tags': unique });
  return { tags: unique };
}
