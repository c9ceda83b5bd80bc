import { z } from 'zod';
import { enableEncryptionKey, encryptionKeyStatus, verifyEncryptionKeySetup } from '../../shared/secrets/key-status.js';
import { AdvertiseTagsSchema, EgressListSchema, MAX_TAGS_TOTAL_LENGTH } from '../../shared/secrets/mesh.js';
import {
  disableMeshHere,
  enableMountedMesh,
  meshAdvertiseTags,
  meshDisableInstructions,
  meshEgress,
  meshSetupInstructions,
  meshStatus,
  saveMeshAdvertiseTags,
  saveMeshEgress,
  verifyMeshSetup,
} from '../../shared/secrets/mesh-setup.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { decideEgressRegistrations, listEgressRegistrations } from '../../shared/crm/egress-registrations.js';

const access = { kind: 'authenticated', permission: 'manage_secrets' } as const;
const tags = ['secrets'];
const OUTSIDE = { description: 'Not in container-service mode (`container_service_mode_required`)' };

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

const KeyStatus = z.object({
  status: z.enum(['configured', 'missing', 'unavailable']),
  reason: z.string().nullable().describe('Why the status is `missing` or `unavailable`'),
  container_service_mode: z.boolean(),
  root_key: z.object({ source: z.enum(['env', 'file']), fingerprint: z.string() }).nullable(),
  active_key: z.object({ key_id: z.string(), fingerprint: z.string() }).nullable(),
  values_by_key: z.record(z.string(), z.number().int()).describe('Sealed values per key id (`root`: the root key)'),
  rotation: Rotation.nullable().describe('The latest enable/rotation and its progress'),
});

const Check = z.object({ name: z.string(), ok: z.boolean(), message: z.string() });
const Verify = z.object({ ok: z.boolean(), checks: z.array(Check) });

const EgressView = z.object({
  entries: z.array(z.string()),
  default: z.boolean().describe('True when no list is stored and the default (`0.0.0.0:443`) applies'),
  enforced: z.boolean().describe('Container-service mode: outbound requests reach only these destinations'),
});
const MeshStatus = z.object({
  enabled: z.boolean(),
  auth_key_stored: z.boolean().describe('A sealed auth key is stored (it is never returned)'),
  auth_key_mounted: z.boolean().describe('The container service mounts an auth key at PLATFORM_MESH_AUTH_KEY_FILE'),
  egress: EgressView,
  advertise_tags: z.array(z.string()),
  updated_at: z.string().nullable(),
});

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
    handler: async ({ em, deps }) => ({ success: true, data: await encryptionKeyStatus(em, deps.config) }),
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
    handler: async ({ em, deps, principal }) => ({
      success: true,
      data: await enableEncryptionKey(deps, em, principal),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/encryption-key/verify-setup',
    operationId: 'verifyEncryptionKeySetup',
    summary: 'Checks the root key, the active managed key and that every sealed value is under a key still held',
    tags,
    access,
    responses: { 200: { description: 'Checks', schema: successEnvelope(Verify) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => ({ success: true, data: await verifyEncryptionKeySetup(em, deps.config) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/status',
    operationId: 'getMeshAuthKeyStatus',
    summary: 'Mesh auth key status: enabled, stored, mounted, egress list and advertise tags (never the key)',
    tags,
    access,
    responses: { 200: { description: 'Status', schema: successEnvelope(MeshStatus) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => ({ success: true, data: await meshStatus(deps, em) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/setup',
    operationId: 'getMeshAuthKeySetup',
    summary: 'How to provide the mesh auth key: instructions and a service specification template (not the key)',
    tags,
    access,
    responses: { 200: { description: 'Instructions', schema: successEnvelope(Instructions) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => ({ success: true, data: await meshSetupInstructions(deps, em) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/verify-setup',
    operationId: 'verifyMeshAuthKeySetup',
    summary: 'Checks the mounted auth key, the stored sealed copy, the egress list and the tags',
    tags,
    access,
    responses: { 200: { description: 'Checks', schema: successEnvelope(Verify) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => ({ success: true, data: await verifyMeshSetup(deps, em) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/disable-template',
    operationId: 'getMeshAuthKeyDisableTemplate',
    summary: 'How to take the mesh auth key away after disabling',
    tags,
    access,
    responses: { 200: { description: 'Instructions', schema: successEnvelope(Instructions) }, 400: OUTSIDE },
    handler: async ({ deps }) => ({ success: true, data: meshDisableInstructions(deps.config) }),
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
    handler: async ({ em, deps, principal }) => ({ success: true, data: await enableMountedMesh(deps, em, principal) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/secrets/mesh-auth-key/disable',
    operationId: 'disableMeshAuthKey',
    summary: 'Disables the mesh and deletes the stored auth key',
    tags,
    access,
    responses: { 200: { description: 'Disabled', schema: successEnvelope(MeshStatus) }, 400: OUTSIDE },
    handler: async ({ em, deps, principal }) => ({ success: true, data: await disableMeshHere(deps, em, principal) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/egress',
    operationId: 'getMeshEgress',
    summary: 'The mesh egress list (default `0.0.0.0:443`)',
    tags,
    access,
    responses: { 200: { description: 'Egress list', schema: successEnvelope(EgressView) }, 400: OUTSIDE },
    handler: async ({ em, deps }) => ({ success: true, data: await meshEgress(deps, em) }),
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
    handler: async ({ em, deps, body, principal }) => ({
      success: true,
      data: await saveMeshEgress(deps, em, principal, Array.isArray(body) ? body : body.entries),
    }),
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
    handler: async ({ em, deps }) => ({ success: true, data: await meshAdvertiseTags(deps, em) }),
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
    handler: async ({ em, deps, body, principal }) => ({
      success: true,
      data: await saveMeshAdvertiseTags(deps, em, principal, Array.isArray(body) ? body : body.tags),
    }),
  }),
];

const EgressRegistration = z
  .object({
    registration_id: z.string(),
    connection_name: z.string(),
    entry: z.string().describe('`host:port`'),
    origin: z.enum(['declared', 'discovered']).describe('Declared by the connection, or discovered at authorization'),
    status: z.enum(['pending', 'approved', 'rejected']),
    admitted: z.boolean().describe('Whether the egress list admits the entry now'),
    registered_at: z.string().nullable(),
    decided_by: z.string().nullable(),
    decided_at: z.string().nullable(),
  })
  .meta({ id: 'EgressRegistration' });
const Registrations = successEnvelope(z.object({ registrations: z.array(EgressRegistration) }));
const DecideBody = z.object({ registration_ids: z.array(z.string().min(1).max(100)).min(1).max(256) }).strict();

const DECIDE_SUMMARY = {
  approved: 'The approval step: add pending CRM egress registrations to the mesh egress list (`mesh.egress`)',
  rejected: 'Reject pending CRM egress registrations (the egress list is left as it is)',
};

function decideRoute(decision: 'approved' | 'rejected') {
  const verb = decision === 'approved' ? 'approve' : 'reject';
  return defineRoute({
    method: 'post',
    path: `/api/secrets/mesh-auth-key/egress/registrations/${verb}`,
    operationId: `${verb}EgressRegistrations`,
    summary: DECIDE_SUMMARY[decision],
    tags,
    access: { ...access, principalKinds: ['person'] },
    body: DecideBody,
    bodyKind: 'config',
    responses: {
      200: { description: 'The registrations as decided', schema: Registrations },
      400: OUTSIDE,
      404: { description: 'An id names no registration of this tenant' },
      409: { description: 'A registration is already decided (`egress_registration_not_pending`)' },
    },
    handler: async ({ em, deps, body, principal }) => ({
      success: true,
      data: {
        registrations: await decideEgressRegistrations(deps, em, principal, body.registration_ids, decision),
      },
    }),
  });
}

/** CRM egress registrations (container-service mode): hosts connections need, and the approval step into `mesh.egress`. */
export const egressRegistrationRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/secrets/mesh-auth-key/egress/registrations',
    operationId: 'listEgressRegistrations',
    summary: "CRM hosts registered for the egress list (declared or discovered at authorization) and each one's state",
    description:
      'In container-service mode, creating or changing a CRM connection registers its login, token and instance hosts the egress list does not admit, and the instance host discovered at authorization is registered too; the browser authorization of a user_oauth connection answers 409 `EGRESS_APPROVAL_REQUIRED` while any is pending. Approve them with the approve route (a person with `manage_secrets`).',
    tags,
    access,
    responses: { 200: { description: 'Registrations, newest first', schema: Registrations } },
    handler: async ({ em, deps, principal }) => ({
      success: true,
      data: { registrations: await listEgressRegistrations(deps, em, principal) },
    }),
  }),
  decideRoute('approved'),
  decideRoute('rejected'),
];
