/**
 * Importing an uploaded archive (a refused one answered 400, whether the central directory or a member
 * read during the import refused it), and two blueprint requests with more than one outcome: previewing an uploaded archive (an invalid one is
 * answered as `valid: false`, not as an error) and renaming (a remote-backed blueprint's rename is
 * requested as a pull request and answered `pending`).
 */
import type { AppDeps } from '../app-deps.js';
import { ForbiddenError } from '../errors.js';
import { isRemote } from './remote.js';
import { requestRemoteRename } from './remote-rename.js';
import {
  closeArchive,
  InvalidArchiveError,
  open,
  preview,
  readArchive,
  rename,
  runImport,
  type Ctx,
  type ImportOptions,
} from './service.js';
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

/** Previews the archive uploaded as `file`. */
export async function previewUpload(ctx: Ctx, filePath: string | undefined) {
  try {
    if (!filePath)
      throw new InvalidArchiveError(
        BlueprintCodes.INVALID_BLUEPRINT_ARCHIVE,
        'file_required',
        'Send the archive as the multipart file field `file`.',
      );
    // Every member is read and checked (nothing written), so a preview finds what the import would.
    const a = await readArchive(filePath, { verify: true });
    try {
      return await preview(ctx, a);
    } finally {
      closeArchive(a);
    }
  } catch (e) {
    if (!(e instanceof InvalidArchiveError)) throw e;
    return invalidPreview(e);
  }
}

/** Imports the archive uploaded at `filePath` (`runImport`); an unsafe or invalid archive answers 400. */
export async function importUpload(ctx: Ctx, filePath: string, opts: ImportOptions) {
  try {
    const a = await readArchive(filePath);
    try {
      return await runImport(ctx, a, opts);
    } finally {
      closeArchive(a);
    }
  } catch (e) {
    if (e instanceof InvalidArchiveError) throw e.toBadRequest();
    throw e;
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
