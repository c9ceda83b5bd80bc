import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { ManagedSourceEntity, type ManagedSourceRow, type ManagedSourceSettings } from '../db/entities/index.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors.js';
import { checkSavedEndpoint } from '../http/trust.js';
import { refreshKeyring } from '../secrets/secret-box.js';
import { sealCredentials, type CredentialsInput } from './source-access.js';
import { runningJobs } from './sync-job-store.js';
import { GitSyncCodes, ManagedSourceCodes } from './error-codes.js';

/**
 * Managed sources (issue 12): a Git repository whose artifacts the platform imports. This module
 * creates, reads, changes and lists them; syncing is `sync-start.ts`, deletion `deletion.ts`.
 */
export const SCAN_TYPES = [
  'skills',
  'flows',
  'apps',
  'blueprints',
  'agents',
  'document_indexes',
  'roles',
  'missions',
] as const;
export type ScanType = (typeof SCAN_TYPES)[number];

/** The settings a caller gives: the stored settings plus name, repository, release ref and credentials. */
export type SourceSettingsInput = ManagedSourceSettings & {
  name: string;
  repo_url: string;
  release_ref: string | null;
  credentials: CredentialsInput;
};

/** A new source: name, repository and scan types; the other settings default. */
export type NewSourceInput = Pick<SourceSettingsInput, 'name' | 'repo_url' | 'scan_types_enabled'> &
  Partial<Omit<SourceSettingsInput, 'name' | 'repo_url' | 'scan_types_enabled'>>;

/** A change: any settings, and `acknowledge_moved_tag` to accept the commit a moved release tag names. */
export type SourcePatch = Partial<SourceSettingsInput> & { acknowledge_moved_tag?: boolean };

/** Roles need `manage_users`, agents `manage_agents`, on top of `manage_repos`. */
export function checkTypePermissions(principal: Principal, types: readonly string[] | undefined): void {
  if (types?.includes('roles') && !principal.permissions.has('manage_users'))
    throw new ForbiddenError('Sources that import roles need the manage_users permission; ask an administrator.');
  if (types?.includes('agents') && !principal.permissions.has('manage_agents'))
    throw new ForbiddenError('Sources that import agents need the manage_agents permission; ask an administrator.');
}

/** A Git host the egress policy never allows is refused when saved; each sync checks the host again. */
export function checkGitHost(config: AppConfig, repoUrl: string): void {
  checkSavedEndpoint(repoUrl, config.egress, {
    field: 'body.repo_url',
    code: GitSyncCodes.GIT_EGRESS_REFUSED,
    what: 'The Git host',
  });
}

/** One of the tenant's sources (404 otherwise). */
export async function loadSource(em: EntityManager, tenant: string, id: string): Promise<ManagedSourceRow> {
  const row = await em.findOne(ManagedSourceEntity, { id, tenant });
  if (!row) throw new NotFoundError(`No managed source ${id}.`);
  return row;
}

/** One of the tenant's sources that imports `type` (404 otherwise, as if it did not exist). */
export async function loadTypedSource(em: EntityManager, tenant: string, id: string, type: string) {
  const row = await em.findOne(ManagedSourceEntity, { id, tenant });
  if (!row || !row.settings.scan_types_enabled.includes(type)) throw new NotFoundError(`No ${type} repository ${id}.`);
  return row;
}

/** The tenant's sources, oldest first. */
export function listSources(em: EntityManager, tenant: string): Promise<ManagedSourceRow[]> {
  return em.find(ManagedSourceEntity, { tenant }, { orderBy: { createdAt: 'asc' } });
}

/** A per-type route deletes only a source importing that type alone (409 `SOURCE_HAS_MULTIPLE_TYPES`). */
export function checkSingleType(row: ManagedSourceRow, type: string): void {
  const types = row.settings.scan_types_enabled;
  if (types.length <= 1) return;
  throw new ConflictError(
    `Managed source ${row.id} imports ${types.join(', ')}; deleting it here would remove more than ${type}. Use DELETE /api/managed-sources/${row.id}.`,
    {
      code: ManagedSourceCodes.SOURCE_HAS_MULTIPLE_TYPES,
      source_id: row.id,
      scan_types_enabled: types,
      use: `DELETE /api/managed-sources/${row.id}`,
    },
  );
}

/** Registers a source for the principal's tenant (credentials sealed); checks permissions and the Git host. */
export async function createSource(
  em: EntityManager,
  config: AppConfig,
  principal: Principal,
  input: NewSourceInput,
): Promise<ManagedSourceRow> {
  checkTypePermissions(principal, input.scan_types_enabled);
  checkGitHost(config, input.repo_url);
  await refreshKeyring(em);
  const now = new Date();
  const row = em.create(ManagedSourceEntity, {
    id: `src_${randomBytes(8).toString('hex')}`,
    tenant: principal.tenant,
    name: input.name,
    repoUrl: input.repo_url,
    releaseRef: input.release_ref ?? null,
    settings: defaultSettings(input),
    ...sealCredentials(config, input.credentials ?? null),
    ...{ syncedCommitSha: null, checkoutRulesHash: null, tagAnchor: null, releasePoll: null, lastSync: null },
    ...{ deletionState: null, autoSyncState: null },
    ...{ createdAt: now, updatedAt: now, createdBy: principal.id },
  });
  await em.flush();
  return row;
}

function defaultSettings(input: NewSourceInput): ManagedSourceSettings {
  return {
    scan_types_enabled: [...new Set(input.scan_types_enabled)],
    include: input.include ?? [],
    exclude: input.exclude ?? [],
    checkout_exclude: input.checkout_exclude ?? [],
    agents_root: input.agents_root ?? null,
    flows_root: input.flows_root ?? null,
    documents_root: input.documents_root ?? null,
    auto_sync: input.auto_sync ?? false,
    auto_promote_on_sync: input.auto_promote_on_sync ?? false,
  };
}

/**
 * Changes a source. Scan types are never removed (409 `SCAN_TYPE_REMOVAL_NOT_SUPPORTED`); the release
 * (repository, release ref, a moved tag's acknowledgement) does not change while a sync runs.
 */
export async function updateSource(
  em: EntityManager,
  config: AppConfig,
  principal: Principal,
  row: ManagedSourceRow,
  patch: SourcePatch,
): Promise<ManagedSourceRow> {
  checkTypePermissions(principal, patch.scan_types_enabled);
  if (patch.scan_types_enabled) checkNoScanTypeRemoved(row, patch.scan_types_enabled);
  const { name, repo_url, release_ref, credentials, acknowledge_moved_tag, ...settings } = patch;
  if (repo_url !== undefined) checkGitHost(config, repo_url);
  await checkReleaseChange(em, row, patch);
  if (name !== undefined) row.name = name;
  if (repo_url !== undefined && repo_url !== row.repoUrl) Object.assign(row, { repoUrl: repo_url, tagAnchor: null });
  if (release_ref !== undefined && release_ref !== row.releaseRef)
    Object.assign(row, { releaseRef: release_ref, tagAnchor: null });
  if (credentials !== undefined) {
    await refreshKeyring(em);
    Object.assign(row, sealCredentials(config, credentials));
  }
  if (acknowledge_moved_tag && row.tagAnchor) {
    // The moved tag's new commit is accepted: the next sync applies it as the new anchor.
    row.tagAnchor = null;
    row.releasePoll = { ...(row.releasePoll ?? {}), moved_tag: null };
  }
  row.settings = mergeSettings(row.settings, settings);
  row.updatedAt = new Date();
  await em.flush();
  return row;
}

function mergeSettings(current: ManagedSourceSettings, changes: Partial<ManagedSourceSettings>) {
  const settings: ManagedSourceSettings = { ...current };
  for (const [k, v] of Object.entries(changes))
    if (v !== undefined) (settings as unknown as Record<string, unknown>)[k] = v;
  return settings;
}

function checkNoScanTypeRemoved(row: ManagedSourceRow, next: readonly string[]): void {
  const current = row.settings.scan_types_enabled;
  const removed = current.filter((t) => !next.includes(t));
  if (!removed.length) return;
  throw new ConflictError(
    `Scan types cannot be removed from a managed source (${removed.join(', ')}); delete the source and create it again with the types you want.`,
    {
      code: ManagedSourceCodes.SCAN_TYPE_REMOVAL_NOT_SUPPORTED,
      current_scan_types: current,
      attempted_scan_types: next,
      removed_scan_types: removed,
      recovery: 'delete_and_recreate',
      remediation:
        'DELETE /api/managed-sources/{source_id}, then POST /api/managed-sources with the scan types to keep.',
    },
  );
}

async function checkReleaseChange(em: EntityManager, row: ManagedSourceRow, patch: SourcePatch): Promise<void> {
  const releaseChange =
    (patch.release_ref !== undefined && patch.release_ref !== row.releaseRef) ||
    (patch.repo_url !== undefined && patch.repo_url !== row.repoUrl) ||
    Boolean(patch.acknowledge_moved_tag);
  if (releaseChange && (await runningJobs(em, row.id)))
    throw new ConflictError(
      `A sync of managed source ${row.id} is running; change its release (release_ref, repo_url, acknowledge_moved_tag) when it ends. Nothing was saved.`,
      { code: ManagedSourceCodes.MANAGED_SOURCE_SYNC_IN_PROGRESS },
    );
}

/** The sources a scheduled check looks at: every tenant's, or one tenant's, oldest first. */
export function scheduledSources(em: EntityManager, tenant?: string): Promise<ManagedSourceRow[]> {
  return em.find(ManagedSourceEntity, tenant ? { tenant } : {}, { orderBy: { createdAt: 'asc' } });
}
