import { WorkflowIdConflictPolicy } from '@temporalio/client';
import { z } from 'zod';
import { isDatabaseUnavailable } from '../../shared/db/errors.js';
import { BadRequestError, PlatformError } from '../../shared/errors.js';
import type { AppConfig } from '../../shared/config.js';
import {
  AdvertiseTagsSchema,
  DEFAULT_EGRESS,
  disableMesh,
  enableMesh,
  EgressListSchema,
  MAX_TAGS_TOTAL_LENGTH,
  readMesh,
  readMountedAuthKey,
  storedKeyMatches,
  type MeshRow,
} from '../../shared/secrets/mesh.js';
import {
  countNotUnder,
  countSealedByKey,
  createRotation,
  latestRotation,
  readKeyring,
  type RotationRow,
} from '../../shared/secrets/rotation.js';
import { ROOT_KEY_ID, rootKeyInfo, unwrapManagedKey } from '../../shared/secrets/secret-box.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { secretResealWorkflowId } from '../../workflows/secret-reseal-definitions.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { saveSettingValues } from '../../shared/settings/save-settings.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ALL_TENANTS, lifecycleSearchAttributes } from '../../shared/temporal/lifecycle-visibility.js';
import { SettingsCodes } from '../../shared/settings/error-codes.js';

const access = { kind: 'authenticated', permission: 'manage_secrets' } as const;
const tags = ['secrets'];
const OUTSIDE = { description: 'Not in container-service mode (`container_service_mode_required`)' };

function requireContainerServiceMode(config: AppConfig): void {
  if (!config.containerServiceMode)
    throw new BadRequestError('This route answers only in container-service mode (PLATFORM_CONTAINER_SERVICE_MODE).', {
      code: SettingsCodes.container_service_mode_required,
    });
}

const Rotation = z.object({
  rotation_id: z.string(),
  status: z.enum(['pending', 'running', 'completed', 'failed']),
  phase: z.string(),
  target_key_id: z.string(),
  resealed: z.number().int().describe('Values sealed again under the target key so far'),
  remaining: z.number().int().nullable().describe('Values not yet under the target key (while unfinished)'),
  passes: z.number().int(),
  retired_key_ids: z.array(z.string()),
  error: z.string().nullable(),
  started_by: z.string(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
});

async function rotationView(em: EntityManager, r: RotationRow): Promise<z.infer<typeof Rotation>> {
  const unfinished = r.status === 'pending' || r.status === 'running';
  return {
    rotation_id: r.id,
    status: r.status,
    phase: r.phase,
    target_key_id: r.target_kid,
    resealed: r.resealed,
    remaining: unfinished ? await countNotUnder(em, r.target_kid) : null,
    passes: r.passes,
    retired_key_ids: r.retired_kids,
    error: r.error,
    started_by: r.started_by,
    started_at: new Date(r.created_at).toISOString(),
    finished_at: r.finished_at ? new Date(r.finished_at).toISOString() : null,
  };
}

const KeyStatus = z.object({
  status: z.enum(['configured', 'missing', 'unavailable']),
  reason: z.string().nullable().describe('Why the status is `missing` or `unavailable`'),
  container_service_mode: z.boolean(),
  root_key: z.object({ source: z.enum(['env', 'file']), fingerprint: z.string() }).nullable(),
  active_key: z.object({ key_id: z.string(), fingerprint: z.string() }).nullable(),
  values_by_key: z.record(z.string(), z.number().int()).describe('Sealed values per key id (`root`: the root key)'),
  rotation: Rotation.nullable().describe('The latest enable/rotation and its progress'),
});

async function keyStatus(em: EntityManager, config: AppConfig): Promise<z.infer<typeof KeyStatus>> {
  const base = { container_service_mode: config.containerServiceMode, values_by_key: {}, rotation: null };
  let root: { source: 'env' | 'file'; fingerprint: string };
  try {
    root = rootKeyInfo(config);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return { ...base, status: 'unavailable', reason: err.message, root_key: null, active_key: null };
  }
  try {
    const keyring = await readKeyring(em);
    const active = keyring.find((k) => k.status === 'active');
    const latest = await latestRotation(em);
    const rotation = latest ? await rotationView(em, latest) : null;
    const values_by_key = await countSealedByKey(em);
    if (!active)
      return {
        ...base,
        values_by_key,
        rotation,
        status: 'missing',
        reason: 'No managed encryption key is enabled; secrets are sealed under the root key.',
        root_key: root,
        active_key: null,
      };
    try {
      unwrapManagedKey(config, active);
    } catch (err) {
      if (!(err instanceof PlatformError)) throw err;
      return {
        ...base,
        values_by_key,
        rotation,
        status: 'unavailable',
        reason: err.message,
        root_key: root,
        active_key: null,
      };
    }
    return {
      ...base,
      values_by_key,
      rotation,
      status: 'configured',
      reason: null,
      root_key: root,
      active_key: { key_id: active.kid, fingerprint: active.fingerprint },
    };
  } catch (err) {
    if (!isDatabaseUnavailable(err)) throw err;
    return {
      ...base,
      status: 'unavailable',
      reason: 'The key store (PostgreSQL) is unreachable.',
      root_key: root,
      active_key: null,
    };
  }
}

const Check = z.object({ name: z.string(), ok: z.boolean(), message: z.string() });
const Verify = z.object({ ok: z.boolean(), checks: z.array(Check) });

const EgressView = z.object({
  entries: z.array(z.string()),
  default: z.boolean().describe('True when no list is stored and the default (`0.0.0.0:443`) applies'),
  enforced: z.boolean().describe('Container-service mode: outbound requests reach only these destinations'),
});
const egressView = (config: AppConfig, row: MeshRow) => ({
  entries: row.egress && row.egress.length ? row.egress : [...DEFAULT_EGRESS],
  default: !(row.egress && row.egress.length),
  enforced: config.egress.containerService,
});

const MeshStatus = z.object({
  enabled: z.boolean(),
  auth_key_stored: z.boolean().describe('A sealed auth key is stored (it is never returned)'),
  auth_key_mounted: z.boolean().describe('The container service mounts an auth key at PLATFORM_MESH_AUTH_KEY_FILE'),
  egress: EgressView,
  advertise_tags: z.array(z.string()),
  updated_at: z.string().nullable(),
});

function meshStatus(config: AppConfig, row: MeshRow): z.infer<typeof MeshStatus> {
  return {
    enabled: row.enabled,
    auth_key_stored: row.auth_key_sealed !== null,
    auth_key_mounted: 'key' in readMountedAuthKey(config),
    egress: egressView(config, row),
    advertise_tags: row.advertise_tags ?? [],
    updated_at: row.updated_at ? new Date(row.updated_at).toISOString() : null,
  };
}

const Instructions = z.object({
  steps: z.array(z.string()),
  template: z.string().describe('A specification fragment with placeholders; never the key itself'),
  auth_key_file: z.string(),
});

export const secretsRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/secrets/encryption-key/status',
    operationId: 'getEncryptionKeyStatus',
    summary: 'Encryption key status (`configured`, `missing`, `unavailable`), key id and fingerprint, re-seal progress',
    tags,
    access,
    responses: { 200: { description: 'Status; never key material', schema: successEnvelope(KeyStatus) } },
    handler: async ({ em, deps }) => ({ success: true, data: await keyStatus(em, deps.config) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/secrets/encryption-key/enable',
    operationId: 'enableEncryptionKey',
    summary:
      'Enables (or rotates to) a new managed encryption key: starts the re-seal workflow; a repeated call answers the unfinished rotation',
    tags,
    access,
    successStatus: 202,
    responses: {
      202: {
        description: 'Rotation started (or the unfinished one); progress in the status route',
        schema: successEnvelope(z.object({ started: z.boolean(), rotation: Rotation })),
      },
      400: OUTSIDE,
      503: { description: 'Database, Temporal or the root key unavailable (`service_unavailable`)' },
    },
    handler: async ({ em, deps, principal }) => {
      requireContainerServiceMode(deps.config);
      const { rotation, created } = await createRotation(em, deps.config, principal.id);
      // Started here, or again for a rotation whose start was lost (USE_EXISTING: never a second run).
      await deps.temporal.workflow.start(workflowRef('secretResealWorkflow'), {
        workflowId: secretResealWorkflowId(rotation.id),
        taskQueue: deps.config.temporal.taskQueue,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        args: [
          {
            rotationId: rotation.id,
            batchSize: deps.config.secrets.resealBatchSize,
            pauseMs: deps.config.secrets.resealPauseMs,
          },
        ],
        typedSearchAttributes: lifecycleSearchAttributes('secretResealWorkflow', {
          tenant: ALL_TENANTS,
          resourceId: rotation.id,
          status: 'running',
        }),
      });
      return { success: true, data: { started: created, rotation: await rotationView(em, rotation) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/encryption-key/verify-setup',
    operationId: 'verifyEncryptionKeySetup',
    summary: 'Checks the root key, the active managed key and that every sealed value is under a key still held',
    tags,
    access,
    responses: { 200: { description: 'Checks', schema: successEnvelope(Verify) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => {
      requireContainerServiceMode(deps.config);
      const checks: Array<z.infer<typeof Check>> = [];
      let rootOk = true;
      try {
        const r = rootKeyInfo(deps.config);
        checks.push({
          name: 'root_key',
          ok: true,
          message: `Root key from ${r.source} (fingerprint ${r.fingerprint}).`,
        });
      } catch (err) {
        if (!(err instanceof PlatformError)) throw err;
        rootOk = false;
        checks.push({ name: 'root_key', ok: false, message: err.message });
      }
      const keyring = await readKeyring(em);
      const active = keyring.find((k) => k.status === 'active');
      if (!active) checks.push({ name: 'managed_key', ok: false, message: 'No managed key is enabled: POST enable.' });
      else if (rootOk) {
        try {
          unwrapManagedKey(deps.config, active);
          checks.push({ name: 'managed_key', ok: true, message: `Managed key ${active.kid} unwraps.` });
        } catch (err) {
          if (!(err instanceof PlatformError)) throw err;
          checks.push({ name: 'managed_key', ok: false, message: err.message });
        }
      }
      const held = new Set([ROOT_KEY_ID, ...keyring.map((k) => k.kid)]);
      const counts = await countSealedByKey(em);
      const orphaned = Object.entries(counts).filter(([k]) => !held.has(k));
      checks.push({
        name: 'sealed_values',
        ok: orphaned.length === 0,
        message: orphaned.length
          ? `Values under keys no longer held: ${orphaned.map(([k, n]) => `${k} (${n})`).join(', ')}.`
          : `Every sealed value (${Object.values(counts).reduce((a, b) => a + b, 0)}) is under a key still held.`,
      });
      const latest = await latestRotation(em);
      if (latest)
        checks.push({
          name: 'rotation',
          ok: latest.status !== 'failed',
          message:
            latest.status === 'failed'
              ? (latest.error ?? 'The last rotation failed.')
              : `Last rotation ${latest.status}.`,
        });
      return { success: true, data: { ok: checks.every((c) => c.ok), checks } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/status',
    operationId: 'getMeshAuthKeyStatus',
    summary: 'Mesh auth key status: enabled, stored, mounted, egress list and advertise tags (never the key)',
    tags,
    access,
    responses: { 200: { description: 'Status', schema: successEnvelope(MeshStatus) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => {
      requireContainerServiceMode(deps.config);
      return { success: true, data: meshStatus(deps.config, await readMesh(em, deps.settings)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/setup',
    operationId: 'getMeshAuthKeySetup',
    summary: 'How to provide the mesh auth key: instructions and a service specification template (not the key)',
    tags,
    access,
    responses: { 200: { description: 'Instructions', schema: successEnvelope(Instructions) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => {
      requireContainerServiceMode(deps.config);
      const row = await readMesh(em, deps.settings);
      const file = deps.config.mesh.authKeyFile;
      const tagList = (row.advertise_tags ?? []).join(',');
      return {
        success: true,
        data: {
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
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/verify-setup',
    operationId: 'verifyMeshAuthKeySetup',
    summary: 'Checks the mounted auth key, the stored sealed copy, the egress list and the tags',
    tags,
    access,
    responses: { 200: { description: 'Checks', schema: successEnvelope(Verify) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => {
      requireContainerServiceMode(deps.config);
      const row = await readMesh(em, deps.settings);
      const mounted = readMountedAuthKey(deps.config);
      const stored = await storedKeyMatches(em, deps.config, row, 'key' in mounted ? mounted.key : null);
      const checks = [
        {
          name: 'auth_key_mounted',
          ok: 'key' in mounted,
          message: 'key' in mounted ? 'An auth key is mounted.' : mounted.problem,
        },
        {
          name: 'auth_key_stored',
          ok: stored.opens,
          message: row.auth_key_sealed
            ? stored.opens
              ? 'The stored auth key opens.'
              : 'The stored auth key does not open with the current keys.'
            : 'No auth key stored: POST enable.',
        },
        {
          name: 'auth_key_current',
          ok: stored.matches === true,
          message:
            stored.matches === true
              ? 'The stored auth key is the mounted one.'
              : 'The stored auth key is not the mounted one (or one is missing): POST enable again.',
        },
        { name: 'enabled', ok: row.enabled, message: row.enabled ? 'The mesh is enabled.' : 'The mesh is disabled.' },
      ];
      return { success: true, data: { ok: checks.every((c) => c.ok), checks } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/disable-template',
    operationId: 'getMeshAuthKeyDisableTemplate',
    summary: 'How to take the mesh auth key away after disabling',
    tags,
    access,
    responses: { 200: { description: 'Instructions', schema: successEnvelope(Instructions) }, 400: OUTSIDE },
    handler: async ({ deps }) => {
      requireContainerServiceMode(deps.config);
      const file = deps.config.mesh.authKeyFile;
      return {
        success: true,
        data: {
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
        },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/secrets/mesh-auth-key/enable',
    operationId: 'enableMeshAuthKey',
    summary: 'Reads the mounted auth key, stores it sealed and enables the mesh (the key never crosses the API)',
    tags,
    access,
    responses: {
      200: { description: 'Enabled', schema: successEnvelope(MeshStatus) },
      400: {
        description: 'Not in container-service mode, or no usable auth key mounted (`mesh_auth_key_not_mounted`)',
      },
    },
    handler: async ({ em, deps, principal }) => {
      requireContainerServiceMode(deps.config);
      const mounted = readMountedAuthKey(deps.config);
      if (!('key' in mounted))
        throw new BadRequestError(mounted.problem, { code: SettingsCodes.mesh_auth_key_not_mounted });
      await enableMesh(em, deps.config, mounted.key, principal.id);
      return { success: true, data: meshStatus(deps.config, await readMesh(em, deps.settings)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/secrets/mesh-auth-key/disable',
    operationId: 'disableMeshAuthKey',
    summary: 'Disables the mesh and deletes the stored auth key',
    tags,
    access,
    responses: { 200: { description: 'Disabled', schema: successEnvelope(MeshStatus) }, 400: OUTSIDE },
    handler: async ({ em, deps, principal }) => {
      requireContainerServiceMode(deps.config);
      await disableMesh(em, principal.id);
      return { success: true, data: meshStatus(deps.config, await readMesh(em, deps.settings)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/egress',
    operationId: 'getMeshEgress',
    summary: 'The mesh egress list (default `0.0.0.0:443`)',
    tags,
    access,
    responses: { 200: { description: 'Egress list', schema: successEnvelope(EgressView) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => {
      requireContainerServiceMode(deps.config);
      return { success: true, data: egressView(deps.config, await readMesh(em, deps.settings)) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/secrets/mesh-auth-key/egress',
    operationId: 'updateMeshEgress',
    summary:
      'Replaces the mesh egress list: 1 to 256 `host:port` entries (port 1 to 65535); the outbound policy follows it',
    description:
      "Body: the list itself (the spec's form), or `{entries: [...]}`. The list is the setting `mesh.egress` (also saved by the configuration apply; needs `manage_secrets` either way).",
    tags,
    access,
    body: z.union([EgressListSchema, z.object({ entries: EgressListSchema }).strict()]),
    bodyKind: 'config',
    responses: { 200: { description: 'Stored', schema: successEnvelope(EgressView) }, 400: OUTSIDE },
    handler: async ({ em, deps, body, principal }) => {
      requireContainerServiceMode(deps.config);
      const entries = Array.isArray(body) ? body : body.entries;
      await saveSettingValues(deps, em, principal, {
        'mesh.egress': [...new Set(entries.map((e) => e.toLowerCase()))],
      });
      return { success: true, data: egressView(deps.config, await readMesh(em, deps.settings)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/advertise-tags',
    operationId: 'getMeshAdvertiseTags',
    summary: 'The tags the mesh node advertises',
    tags,
    access,
    responses: {
      200: { description: 'Tags', schema: successEnvelope(z.object({ tags: z.array(z.string()) })) },
      400: OUTSIDE,
    },
    handler: async ({ em, deps }) => {
      requireContainerServiceMode(deps.config);
      return { success: true, data: { tags: (await readMesh(em, deps.settings)).advertise_tags ?? [] } };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/secrets/mesh-auth-key/advertise-tags',
    operationId: 'updateMeshAdvertiseTags',
    summary: `Replaces the advertise tags: at most 32 \`tag:<name>\`, total length at most ${MAX_TAGS_TOTAL_LENGTH}`,
    description:
      "Body: the tag list itself (the spec's form), or `{tags: [...]}`. The list is the setting `mesh.advertise_tags`.",
    tags,
    access,
    body: z.union([AdvertiseTagsSchema, z.object({ tags: AdvertiseTagsSchema }).strict()]),
    bodyKind: 'config',
    responses: {
      200: { description: 'Stored', schema: successEnvelope(z.object({ tags: z.array(z.string()) })) },
      400: {
        description: `Invalid tag, not in container-service mode, or total length over ${MAX_TAGS_TOTAL_LENGTH} (\`tags_too_long\`)`,
      },
    },
    handler: async ({ em, deps, body, principal }) => {
      requireContainerServiceMode(deps.config);
      const unique = [...new Set(Array.isArray(body) ? body : body.tags)];
      const total = unique.reduce((n, t) => n + t.length, 0);
      if (total > MAX_TAGS_TOTAL_LENGTH)
        throw new BadRequestError(`The tags are ${total} characters together; at most ${MAX_TAGS_TOTAL_LENGTH}.`, {
          code: SettingsCodes.tags_too_long,
          fields: [{ field: 'body.tags', message: `total length at most ${MAX_TAGS_TOTAL_LENGTH}` }],
        });
      await saveSettingValues(deps, em, principal, { 'mesh.advertise_tags': unique });
      return { success: true, data: { tags: unique } };
    },
  }),
];
