/**
 * The managed encryption key as `/api/secrets/encryption-key/…` answers it: its status (never key
 * material), the checks of `verify-setup`, and starting (or rejoining) a rotation's re-seal workflow.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { BadRequestError, PlatformError } from '../errors.js';
import { ALL_TENANTS, lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { secretResealWorkflowId } from '../../workflows/secret-reseal-definitions.js';
import {
  countNotUnder,
  countSealedByKey,
  createRotation,
  latestRotation,
  readKeyring,
  type RotationRow,
} from './rotation.js';
import { ROOT_KEY_ID, rootKeyInfo, unwrapManagedKey } from './secret-box.js';
import { SettingsCodes } from '../settings/error-codes.js';

export interface SetupCheck {
  name: string;
  ok: boolean;
  message: string;
}

/** The container-service-only routes answer 400 `container_service_mode_required` elsewhere. */
export function requireContainerServiceMode(config: AppConfig): void {
  if (!config.containerServiceMode)
    throw new BadRequestError('This route answers only in container-service mode (PLATFORM_CONTAINER_SERVICE_MODE).', {
      code: SettingsCodes.container_service_mode_required,
    });
}

export async function rotationView(em: EntityManager, r: RotationRow) {
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

type RootKey = { source: 'env' | 'file'; fingerprint: string };

/** The status once the root key is known: `missing` without an active managed key, `unavailable` when it does not unwrap. */
async function managedKeyStatus(em: EntityManager, config: AppConfig, root: RootKey) {
  const base = { container_service_mode: config.containerServiceMode };
  const keyring = await readKeyring(em);
  const active = keyring.find((k) => k.status === 'active');
  const latest = await latestRotation(em);
  const rotation = latest ? await rotationView(em, latest) : null;
  const values_by_key = await countSealedByKey(em);
  const known = { ...base, values_by_key, rotation };
  if (!active)
    return {
      ...known,
      status: 'missing' as const,
      reason: 'No managed encryption key is enabled; secrets are sealed under the root key.',
      root_key: root,
      active_key: null,
    };
  try {
    unwrapManagedKey(config, active);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return { ...known, status: 'unavailable' as const, reason: err.message, root_key: root, active_key: null };
  }
  const active_key = { key_id: active.kid, fingerprint: active.fingerprint };
  return { ...known, status: 'configured' as const, reason: null, root_key: root, active_key };
}

/** `configured`, `missing` or `unavailable` (root key unreadable, managed key not unwrapping, PostgreSQL down). */
export async function encryptionKeyStatus(em: EntityManager, config: AppConfig) {
  const base = { container_service_mode: config.containerServiceMode, values_by_key: {}, rotation: null };
  let root: RootKey;
  try {
    root = rootKeyInfo(config);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return { ...base, status: 'unavailable' as const, reason: err.message, root_key: null, active_key: null };
  }
  try {
    return await managedKeyStatus(em, config, root);
  } catch (err) {
    if (!isDatabaseUnavailable(err)) throw err;
    const reason = 'The key store (PostgreSQL) is unreachable.';
    return { ...base, status: 'unavailable' as const, reason, root_key: root, active_key: null };
  }
}

/** Creates a rotation (or answers the unfinished one) and starts its re-seal workflow (USE_EXISTING: never a second run). */
export async function enableEncryptionKey(deps: AppDeps, em: EntityManager, principal: Principal) {
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
  return { started: created, rotation: await rotationView(em, rotation) };
}

function rootKeyCheck(config: AppConfig): SetupCheck {
  try {
    const r = rootKeyInfo(config);
    return { name: 'root_key', ok: true, message: `Root key from ${r.source} (fingerprint ${r.fingerprint}).` };
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return { name: 'root_key', ok: false, message: err.message };
  }
}

function managedKeyCheck(config: AppConfig, active: Parameters<typeof unwrapManagedKey>[1]): SetupCheck {
  try {
    unwrapManagedKey(config, active);
    return { name: 'managed_key', ok: true, message: `Managed key ${active.kid} unwraps.` };
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return { name: 'managed_key', ok: false, message: err.message };
  }
}

function sealedValuesCheck(counts: Record<string, number>, held: Set<string>): SetupCheck {
  const orphaned = Object.entries(counts).filter(([k]) => !held.has(k));
  return {
    name: 'sealed_values',
    ok: orphaned.length === 0,
    message: orphaned.length
      ? `Values under keys no longer held: ${orphaned.map(([k, n]) => `${k} (${n})`).join(', ')}.`
      : `Every sealed value (${Object.values(counts).reduce((a, b) => a + b, 0)}) is under a key still held.`,
  };
}

/** The checks of `GET /api/secrets/encryption-key/verify-setup`, in order: root key, managed key, sealed values, last rotation. */
export async function verifyEncryptionKeySetup(em: EntityManager, config: AppConfig) {
  requireContainerServiceMode(config);
  const checks: SetupCheck[] = [rootKeyCheck(config)];
  const keyring = await readKeyring(em);
  const active = keyring.find((k) => k.status === 'active');
  if (!active) checks.push({ name: 'managed_key', ok: false, message: 'No managed key is enabled: POST enable.' });
  else if (checks[0]!.ok) checks.push(managedKeyCheck(config, active));
  checks.push(sealedValuesCheck(await countSealedByKey(em), new Set([ROOT_KEY_ID, ...keyring.map((k) => k.kid)])));
  const latest = await latestRotation(em);
  if (latest)
    checks.push({
      name: 'rotation',
      ok: latest.status !== 'failed',
      message:
        latest.status === 'failed' ? (latest.error ?? 'The last rotation failed.') : `Last rotation ${latest.status}.`,
    });
  return { ok: checks.every((c) => c.ok), checks };
}
