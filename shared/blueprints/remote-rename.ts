/**
 * The rename of a remote-backed blueprint (issue 14): pushes branch `blueprint-rename/<blueprint_id>`
 * renaming `blueprints/<old>` to `blueprints/<new>` in the source repository (the manifest's `name`
 * and the identity sidecar `blueprint_export_manifest.yaml` written in the new directory), opens the
 * pull request through the forge client (API base: setting `enhancements.knowledge_base.forge_api_url`,
 * else derived from the repository URL, as for knowledge-base pull requests), records the pending
 * rename on the row and starts `blueprint-rename/<blueprint_id>`, which applies it after the merge
 * and the next sync.
 */
import * as fs from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import git from 'isomorphic-git';
import { parse } from 'yaml';
import { openCredentials } from '../managed-sources/source-access.js';
import { BLUEPRINTS_FOLDER, type PendingRename } from './remote.js';
import { EXPORT_MANIFEST_FILE, MANIFEST_FILE, parseManifest, serializeManifest } from './manifest.js';
import { findDefault, findRow, missionCount, type Resolved } from './store.js';
import { ManagedSourceEntity } from '../db/entities/index.js';
import { execSql } from '../db/sql.js';
import { ConflictError, ServiceUnavailableError } from '../errors.js';
import { openPullRequest, repoCoordinates } from '../git/forge.js';
import { authHeaders, classifyGitError, egressGitHttp, resolveRemoteRef } from '../managed-sources/git.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  blueprintRenameWorkflowId,
  BLUEPRINT_RENAME_TIMEOUT_SECONDS,
  type BlueprintRenameInput,
} from '../../workflows/blueprint-rename-definitions.js';
import type { AppDeps } from '../app-deps.js';
import type { Ctx } from './service.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { BlueprintCodes } from './error-codes.js';
import { ManagedSourceCodes } from '../managed-sources/error-codes.js';

export const RENAME_BOT = { name: 'Platform Blueprints', email: 'blueprints@platform.invalid' };
export const renameBranch = (blueprintId: string) => `blueprint-rename/${blueprintId}`;

const gitFailure = (message: string) => new ServiceUnavailableError('git', message);

export async function requestRemoteRename(
  deps: AppDeps,
  ctx: Ctx,
  b: Extract<Resolved, { kind: 'custom' }>,
  newName: string,
): Promise<PendingRename> {
  const { em, principal } = ctx;
  const name = b.manifest.name;
  if (b.row.pending_rename)
    throw new ConflictError(`Blueprint "${name}" already has a rename waiting for its pull request.`, {
      code: BlueprintCodes.BLUEPRINT_RENAME_PENDING,
      blueprint_name: name,
      pending_rename: b.row.pending_rename,
    });
  if (findDefault(newName) || (await findRow(em, principal.tenant, newName)))
    throw new ConflictError(`A blueprint named "${newName}" already exists.`, {
      code: BlueprintCodes.BLUEPRINT_NAME_TAKEN,
      blueprint_name: newName,
    });
  const active = await missionCount(em, b.row.blueprint_id, true);
  if (active > 0)
    throw new ConflictError(
      `Blueprint "${name}" has ${active} in-flight mission(s) (running or paused); rename it once they have finished or been cancelled.`,
      { code: BlueprintCodes.BLUEPRINT_HAS_ACTIVE_MISSIONS, blueprint_name: name, active_missions: active },
    );
  const source = await em.findOne(ManagedSourceEntity, { id: b.row.source_id!, tenant: principal.tenant });
  const creds =
    source && !source.deletionState ? await openCredentials(em, deps.config, source).catch(() => null) : null;
  if (!source || !creds)
    throw new ConflictError(
      `The managed source of "${name}" has no usable saved credentials to push the rename with.`,
      { code: ManagedSourceCodes.SOURCE_CREDENTIALS_MISSING, blueprint_name: name, source_id: b.row.source_id },
    );
  const http = egressGitHttp(deps.config.egress);
  const headers = authHeaders(creds);
  const url = source.repoUrl;
  const host = new URL(url).host;
  const branch = renameBranch(b.row.blueprint_id);
  const oldPath = b.row.source_path!;
  const newPath = `${BLUEPRINTS_FOLDER}/${newName}`;
  const dir = await mkdtemp(path.join(tmpdir(), 'blueprint-rename-'));
  let baseBranch: string;
  let sha: string;
  try {
    try {
      let resolved = await resolveRemoteRef({ http, url, headers, releaseRef: source.releaseRef });
      if (resolved.kind !== 'branch') resolved = await resolveRemoteRef({ http, url, headers, releaseRef: null });
      baseBranch = resolved.ref.slice('refs/heads/'.length);
      await git.clone({ fs, http, dir, url, ref: baseBranch, singleBranch: true, noTags: true, headers });
      await git.branch({ fs, dir, ref: branch, checkout: true, force: true });
      const files = (await git.listFiles({ fs, dir })).filter((f) => f.startsWith(`${oldPath}/`));
      if (!files.includes(`${oldPath}/${MANIFEST_FILE}`))
        throw new ConflictError(
          `The source's ${baseBranch} no longer has ${oldPath}/${MANIFEST_FILE}; sync the source first.`,
          { code: BlueprintCodes.BLUEPRINT_SOURCE_PATH_MISSING, blueprint_name: name, path: oldPath },
        );
      if ((await git.listFiles({ fs, dir })).some((f) => f.startsWith(`${newPath}/`)))
        throw new ConflictError(`The source repository already has a directory ${newPath}.`, {
          code: BlueprintCodes.BLUEPRINT_NAME_TAKEN,
          blueprint_name: newName,
        });
      for (const f of files) {
        const rel = f.slice(oldPath.length + 1);
        let data: Buffer | string = await readFile(path.join(dir, ...f.split('/')));
        if (rel === MANIFEST_FILE) data = serializeManifest({ ...parseManifest(data.toString('utf8')), name: newName });
        if (rel === EXPORT_MANIFEST_FILE) continue;
        const target = path.join(dir, ...newPath.split('/'), ...rel.split('/'));
        await mkdir(path.dirname(target), { recursive: true });
        await writeFile(target, data);
        await git.remove({ fs, dir, filepath: f });
        await rm(path.join(dir, ...f.split('/')), { force: true });
        await git.add({ fs, dir, filepath: `${newPath}/${rel}` });
      }
      // The identity travels with the directory: the sync finds the same blueprint_id at the new path.
      const sidecarPath = `${oldPath}/${EXPORT_MANIFEST_FILE}`;
      let sidecar: Record<string, unknown> = { manifest_version: 2 };
      if (files.includes(sidecarPath)) {
        const raw = parse(await readFile(path.join(dir, ...sidecarPath.split('/')), 'utf8').catch(() => ''));
        if (raw && typeof raw === 'object') sidecar = raw as Record<string, unknown>;
        await git.remove({ fs, dir, filepath: sidecarPath });
        await rm(path.join(dir, ...sidecarPath.split('/')), { force: true });
      }
      sidecar = { ...sidecar, blueprint_name: newName, blueprint_id: b.row.blueprint_id };
      await writeFile(path.join(dir, ...newPath.split('/'), EXPORT_MANIFEST_FILE), serializeManifest(sidecar as never));
      await git.add({ fs, dir, filepath: `${newPath}/${EXPORT_MANIFEST_FILE}` });
      sha = await git.commit({
        fs,
        dir,
        message: `Rename blueprint ${name} to ${newName}\n\nRequested by ${principal.id} (blueprint ${b.row.blueprint_id}).`,
        author: RENAME_BOT,
        committer: RENAME_BOT,
      });
      const pushed = await git.push({
        fs,
        http,
        dir,
        remote: 'origin',
        ref: branch,
        remoteRef: `refs/heads/${branch}`,
        force: true,
        headers,
      });
      if (!pushed.ok) throw new Error('The Git server refused the push.');
    } catch (err) {
      if (err instanceof ConflictError) throw err;
      const e = classifyGitError(err, host, creds.kind);
      throw gitFailure(`Pushing ${branch} failed (${e.code}): ${e.message}`);
    }
    let pr;
    try {
      pr = await openPullRequest({
        policy: deps.config.egress,
        coordinates: repoCoordinates(
          url,
          (await deps.settings.get('enhancements.knowledge_base.forge_api_url')) ?? null,
        ),
        token: creds.secret,
        title: `Rename blueprint ${name} to ${newName}`,
        head: branch,
        base: baseBranch,
        body: `Renames \`${oldPath}\` to \`${newPath}\`. The platform applies the rename after this is merged and the source is synced.`,
      });
    } catch (err) {
      throw gitFailure(
        `The branch ${branch} was pushed but the pull request could not be opened: ${(err as Error).message}`,
      );
    }
    const now = new Date();
    const deadline = new Date(now.getTime() + BLUEPRINT_RENAME_TIMEOUT_SECONDS * 1000);
    const pending: PendingRename = {
      new_name: newName,
      new_path: newPath,
      old_path: oldPath,
      pull_request: { url: pr.html_url, number: pr.number, branch, base_branch: baseBranch, commit_sha: sha },
      requested_by: principal.id,
      requested_at: now.toISOString(),
      expires_at: deadline.toISOString(),
      workflow_id: blueprintRenameWorkflowId(b.row.blueprint_id),
    };
    await execSql(em, `update blueprints set pending_rename = ?::jsonb where blueprint_id = ?`, [
      JSON.stringify(pending),
      b.row.blueprint_id,
    ]);
    const input: BlueprintRenameInput = {
      tenant: principal.tenant,
      blueprintId: b.row.blueprint_id,
      oldName: name,
      newName,
      newPath,
      deadlineMs: deadline.getTime(),
    };
    await deps.temporal.workflow.start(workflowRef('blueprintRenameWorkflow'), {
      taskQueue: deps.config.temporal.taskQueue,
      workflowId: pending.workflow_id,
      args: [input],
      workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      typedSearchAttributes: lifecycleSearchAttributes('blueprintRenameWorkflow', {
        tenant: input.tenant,
        resourceId: input.blueprintId,
        status: 'waiting',
      }),
    });
    return pending;
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
