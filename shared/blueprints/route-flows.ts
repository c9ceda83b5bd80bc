/**
 * Two blueprint requests with more than one outcome: previewing an uploaded archive (an invalid one is
 * answered as `valid: false`, not as an error) and renaming (a remote-backed blueprint's rename is
 * requested as a pull request and answered `pending`).
 */
import { rm } from 'node:fs/promises';
import type { AppDeps } from '../app-deps.js';
import { ForbiddenError } from '../errors.js';
import { isRemote } from './remote.js';
import { requestRemoteRename } from './remote-rename.js';
import { InvalidArchiveError, open, preview, readArchive, rename, type Ctx } from './service.js';
import { BlueprintCodes } from './error-codes.js';

const invalidPreview = (e: InvalidArchiveError) => ({
  valid: false,
  message: e.message,
  reason: e.reason,
  blueprint_name: null,
  manifest_version: null,
  legacy_export: false,
  matching_local_target: null,
  allowed_collision_strategies: [],
  recommended_strategy: null,
});

/** Previews the archive uploaded as `file` (the unpacked copy removed afterwards). */
export async function previewUpload(ctx: Ctx, filePath: string | undefined) {
  try {
    if (!filePath)
      throw new InvalidArchiveError(
        BlueprintCodes.INVALID_BLUEPRINT_ARCHIVE,
        'file_required',
        'Send the archive as the multipart file field `file`.',
      );
    const a = await readArchive(filePath);
    try {
      return await preview(ctx, a);
    } finally {
      await rm(a.dir, { recursive: true, force: true });
    }
  } catch (e) {
    if (!(e instanceof InvalidArchiveError)) throw e;
    return invalidPreview(e);
  }
}

/**
 * Renames a blueprint (needs `manage` on it and the `manage_git` permission). `pending` (HTTP 202) for a
 * remote-backed blueprint, whose rename waits for its pull request; else `renamed` or `unchanged`.
 */
export async function renameBlueprint(
  deps: AppDeps,
  ctx: Ctx,
  name: string,
  newName: string,
  blueprintId: string | undefined,
) {
  const { b } = await open(ctx, name, 'manage', blueprintId);
  if (!ctx.principal.permissions.has('manage_git'))
    throw new ForbiddenError(
      'Renaming a blueprint needs the manage_git permission; ask an administrator for a role that has it.',
      { required_permission: 'manage_git' },
    );
  if (isRemote(b) && newName !== b.manifest.name) {
    const pending = await requestRemoteRename(deps, ctx, b, newName);
    const data = { blueprint_id: b.row.blueprint_id, old_name: name, blueprint_name: name, status: 'pending' as const };
    return { pending: true, data: { ...data, pull_request: pending.pull_request, pending_rename: pending } };
  }
  const commit = await rename(ctx, b, newName);
  return {
    pending: false,
    data: {
      blueprint_id: b.kind === 'custom' ? b.row.blueprint_id : '',
      old_name: name,
      blueprint_name: newName,
      status: commit ? ('renamed' as const) : ('unchanged' as const),
      commit_id: commit,
    },
  };
}
