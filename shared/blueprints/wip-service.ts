/**
 * Blueprint work-in-progress (WIP) sessions (issue 14; spec, Blueprints: rename "rejects ... active WIP
 * sessions", version import answers 409 for WIP targets). A session is opened on a custom blueprint by a
 * caller with edit access; its edits are commits on the branch `wip/<session_id>` (the working copy is
 * untouched); `commit` applies what the branch changed since it was opened to the working copy as ONE
 * commit, `discard` drops the branch. Each session has a TTL kept by the workflow
 * `blueprint-wip/<session_id>` (a durable timer that closes it as `expired`). While a session is active
 * the blueprint cannot be renamed and versions cannot be imported into it (409 BLUEPRINT_WIP_SESSION_ACTIVE).
 * Storage in `shared/blueprints/wip.ts`; every write holds the blueprint's advisory lock.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import { describeError, type Logger } from '../log.js';
import type { AccessFlags } from './access.js';
import { refuseRemote } from './remote.js';
import { isSafeRelativePath, ManifestError, MANIFEST_FILE, parseManifest } from './manifest.js';
import {
  commitAll,
  headCommit,
  lockBlueprint,
  readManifestAt,
  touchRow,
  writeWorkingFiles,
  type Resolved,
} from './store.js';
import { authorOf } from './versions.js';
import {
  closeWipSession,
  commitFileMap,
  commitOnWipBranch,
  countWipEdit,
  createWipBranch,
  deleteWipBranch,
  findWipSession,
  insertWipSession,
  listWipSessions,
  newWipSessionId,
  wipBranch,
  wipChanges,
  wipTip,
  type WipRow,
} from './wip.js';
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '../errors.js';
import { SearchAttributes } from '../temporal/search-attributes.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { blueprintWipWorkflowId, wipSessionClosedSignal } from '../../workflows/blueprint-wip-definitions.js';
import type { Ctx } from './service.js';
import { BlueprintCodes } from './error-codes.js';

type Custom = Extract<Resolved, { kind: 'custom' }>;

export interface WipDeps {
  temporal: Client;
  config: AppConfig;
  log: Logger;
}

export const WIP_TTL = { defaultSeconds: 3600, minSeconds: 60, maxSeconds: 7 * 24 * 3600 } as const;
export const WIP_EDIT_LIMITS = { maxFiles: 100, maxFileChars: 1024 * 1024 } as const;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function custom(b: Resolved, what: string): Custom {
  if (b.kind === 'default')
    throw new ConflictError(`"${b.manifest.name}" is a built-in default blueprint; it cannot be ${what}.`, {
      code: BlueprintCodes.DEFAULT_BLUEPRINT,
      blueprint_name: b.manifest.name,
    });
  return b;
}

export async function sessionView(b: Custom, row: WipRow) {
  const expired = row.status === 'open' && new Date(row.expires_at).getTime() <= Date.now();
  return {
    session_id: row.session_id,
    blueprint_name: b.row.name,
    blueprint_id: row.blueprint_id,
    branch: wipBranch(row.session_id),
    workflow_id: blueprintWipWorkflowId(row.session_id),
    status: row.status,
    active: row.status === 'open' && !expired,
    opened_by: row.opened_by,
    note: row.note,
    base_commit: row.base_commit,
    head_commit: row.status === 'open' ? await wipTip(b.dir, row.session_id) : null,
    edit_count: row.edit_count,
    expires_at: iso(row.expires_at)!,
    created_at: iso(row.created_at)!,
    closed_at: iso(row.closed_at),
    closed_by: row.closed_by,
    commit_sha: row.commit_sha,
  };
}

/** Opens a session (edit access checked by the caller): a branch at the working copy's head and its timer. */
export async function openSession(
  ctx: Ctx,
  deps: WipDeps,
  resolved: Resolved,
  input: { ttl_seconds?: number; note?: string },
) {
  const b = custom(resolved, 'edited in a work-in-progress session');
  refuseRemote(b, 'edited in a work-in-progress session');
  const ttlSeconds = input.ttl_seconds ?? WIP_TTL.defaultSeconds;
  const sessionId = newWipSessionId();
  const row = await ctx.em.transactional(async (tx) => {
    await lockBlueprint(tx, b.row.blueprint_id);
    const base = await headCommit(b.dir);
    const inserted = await insertWipSession(
      tx,
      {
        session_id: sessionId,
        blueprint_id: b.row.blueprint_id,
        tenant: ctx.principal.tenant,
        opened_by: ctx.principal.id,
        base_commit: base,
        note: input.note ?? null,
      },
      ttlSeconds,
    );
    await createWipBranch(b.dir, sessionId, base);
    return inserted;
  });
  try {
    await deps.temporal.workflow.start(workflowRef('blueprintWipSessionWorkflow'), {
      taskQueue: deps.config.temporal.taskQueue,
      workflowId: blueprintWipWorkflowId(sessionId),
      args: [{ sessionId, tenant: ctx.principal.tenant, blueprintId: b.row.blueprint_id, ttlSeconds }],
      workflowIdConflictPolicy: 'FAIL',
      typedSearchAttributes: [
        { key: SearchAttributes.tenant, value: ctx.principal.tenant },
        { key: SearchAttributes.resourceId, value: sessionId },
        { key: SearchAttributes.status, value: 'open' },
      ],
    });
  } catch (err) {
    // Without its timer the session could never expire: it is not left open.
    await ctx.em.transactional(async (tx) => {
      await lockBlueprint(tx, b.row.blueprint_id);
      await closeWipSession(tx, sessionId, 'discarded', null, null);
      await deleteWipBranch(b.dir, sessionId);
    });
    throw err;
  }
  return sessionView(b, row);
}

export async function listSessions(ctx: Ctx, resolved: Resolved, limit: number) {
  if (resolved.kind === 'default') return [];
  const b = resolved;
  const rows = await listWipSessions(ctx.em, b.row.blueprint_id, limit);
  return Promise.all(rows.map((r) => sessionView(b, r)));
}

/** The session, open and not past its expiry, belonging to `b`; only its opener or a manager may use it. */
async function usableSession(ctx: Ctx, b: Custom, flags: AccessFlags, sessionId: string): Promise<WipRow> {
  const row = await findWipSession(ctx.em, sessionId);
  if (!row || row.blueprint_id !== b.row.blueprint_id)
    throw new NotFoundError(`Blueprint "${b.row.name}" has no work-in-progress session ${sessionId}.`, {
      blueprint_name: b.row.name,
      session_id: sessionId,
    });
  if (row.opened_by !== ctx.principal.id && !flags.can_manage)
    throw new ForbiddenError('Only the session opener or a caller with manage access can use this session.', {
      session_id: sessionId,
    });
  if (row.status !== 'open' || new Date(row.expires_at).getTime() <= Date.now())
    throw new ConflictError(
      `Work-in-progress session ${sessionId} is ${row.status === 'open' ? 'expired' : row.status}.`,
      {
        code: BlueprintCodes.BLUEPRINT_WIP_SESSION_CLOSED,
        session_id: sessionId,
        status: row.status === 'open' ? 'expired' : row.status,
      },
    );
  return row;
}

/** Re-reads the row under the lock (a commit, discard or expiry may have won the race). */
async function stillOpen(ctx: Ctx, sessionId: string): Promise<WipRow> {
  const row = await findWipSession(ctx.em, sessionId);
  if (!row || row.status !== 'open')
    throw new ConflictError(`Work-in-progress session ${sessionId} is ${row?.status ?? 'gone'}.`, {
      code: BlueprintCodes.BLUEPRINT_WIP_SESSION_CLOSED,
      session_id: sessionId,
      status: row?.status ?? 'gone',
    });
  return row;
}

function badField(field: string, message: string, code: string): never {
  throw new BadRequestError(message, { fields: [{ field, message, code }] });
}

/**
 * One edit: writes and removes files on the session branch (one commit there). The manifest stays
 * valid and keeps the blueprint's name; it cannot be removed.
 */
export async function editSession(
  ctx: Ctx,
  resolved: Resolved,
  flags: AccessFlags,
  sessionId: string,
  input: { files?: Array<{ path: string; content: string }>; remove?: string[]; message?: string },
) {
  const b = custom(resolved, 'edited');
  await usableSession(ctx, b, flags, sessionId);
  const files = input.files ?? [];
  const removed = input.remove ?? [];
  for (const [i, f] of files.entries())
    if (!isSafeRelativePath(f.path)) badField(`body.files.${i}.path`, 'not a safe relative path', 'invalid_path');
  for (const [i, p] of removed.entries()) {
    if (!isSafeRelativePath(p)) badField(`body.remove.${i}`, 'not a safe relative path', 'invalid_path');
    if (p === MANIFEST_FILE) badField(`body.remove.${i}`, `${MANIFEST_FILE} cannot be removed`, 'manifest_required');
  }
  const manifest = files.find((f) => f.path === MANIFEST_FILE);
  if (manifest) {
    try {
      const m = parseManifest(manifest.content);
      if (m.name !== b.row.name)
        badField('body.files', `The manifest must keep the name "${b.row.name}" (rename separately).`, 'name_changed');
    } catch (err) {
      if (err instanceof ManifestError)
        throw new BadRequestError(`${MANIFEST_FILE} is not valid: ${err.message}`, {
          fields: [{ field: 'body.files', message: err.message, code: BlueprintCodes.manifest_invalid }],
        });
      throw err;
    }
  }
  return ctx.em.transactional(async (tx) => {
    await lockBlueprint(tx, b.row.blueprint_id);
    if (!files.length && !removed.length) return sessionView(b, await stillOpen({ ...ctx, em: tx }, sessionId));
    const open = await stillOpen({ ...ctx, em: tx }, sessionId);
    const tip = (await wipTip(b.dir, sessionId)) ?? open.base_commit;
    const content = await commitFileMap(b.dir, tip);
    const missing = removed.filter((p) => !content.has(p));
    if (missing.length)
      throw new NotFoundError(`The session has no file ${missing.join(', ')}.`, { session_id: sessionId, missing });
    for (const p of removed) content.delete(p);
    for (const f of files) content.set(f.path, Buffer.from(f.content, 'utf8'));
    const message =
      input.message ??
      `Edit ${[...files.map((f) => f.path), ...removed.map((p) => `-${p}`)].join(', ')} (WIP session ${sessionId})`;
    await commitOnWipBranch(b.dir, sessionId, content, authorOf(ctx.principal), message);
    await countWipEdit(tx, sessionId);
    const row = await findWipSession(tx, sessionId);
    return sessionView(b, row!);
  });
}

async function signalClosed(deps: WipDeps, sessionId: string, status: 'committed' | 'discarded'): Promise<void> {
  try {
    await deps.temporal.workflow
      .getHandle(blueprintWipWorkflowId(sessionId))
      .signal(wipSessionClosedSignal, { status });
  } catch (err) {
    // The row is final already; the timer then finds it closed and ends on its own.
    deps.log.warn('blueprint WIP session: closing signal failed', { session_id: sessionId, ...describeError(err) });
  }
}

/**
 * Applies the session: the files its branch wrote or removed since its base land in the working copy as
 * one commit (`commit_sha`, null when the working copy already had that content); the branch is dropped.
 */
export async function commitSession(
  ctx: Ctx,
  deps: WipDeps,
  resolved: Resolved,
  flags: AccessFlags,
  sessionId: string,
  input: { message?: string },
) {
  const b = custom(resolved, 'edited');
  await usableSession(ctx, b, flags, sessionId);
  const view = await ctx.em.transactional(async (tx) => {
    await lockBlueprint(tx, b.row.blueprint_id);
    const row = await stillOpen({ ...ctx, em: tx }, sessionId);
    const tip = (await wipTip(b.dir, sessionId)) ?? row.base_commit;
    const { written, removed } = await wipChanges(b.dir, row.base_commit, tip);
    const manifestText = written.get(MANIFEST_FILE);
    if (manifestText) {
      // The manifest keeps the blueprint's current name (a rename cannot happen while the session is open).
      const current = await readManifestAt(b.dir);
      const m = parseManifest(manifestText.toString('utf8'));
      if (m.name !== current.name)
        throw new ConflictError(`The session's manifest names "${m.name}", the blueprint is "${current.name}".`, {
          code: BlueprintCodes.BLUEPRINT_WIP_SESSION_CONFLICT,
          session_id: sessionId,
        });
    }
    await writeWorkingFiles(b.dir, written, false);
    for (const p of removed) await rm(path.join(b.dir, p), { force: true });
    const message =
      input.message ?? `Apply work-in-progress session ${sessionId} to ${b.row.name} (${row.edit_count} edit(s))`;
    const commit = await commitAll(b.dir, ctx.principal, message);
    if (commit) await touchRow(tx, b.row.blueprint_id);
    const closed = await closeWipSession(tx, sessionId, 'committed', ctx.principal.id, commit);
    await deleteWipBranch(b.dir, sessionId);
    return {
      session: await sessionView(b, closed!),
      commit_sha: commit,
      changed_files: [...written.keys()].sort(),
      removed_files: removed.sort(),
    };
  });
  await signalClosed(deps, sessionId, 'committed');
  return view;
}

/** Drops the session's branch and closes it as `discarded`; the working copy is untouched. */
export async function discardSession(
  ctx: Ctx,
  deps: WipDeps,
  resolved: Resolved,
  flags: AccessFlags,
  sessionId: string,
) {
  const b = custom(resolved, 'edited');
  await usableSession(ctx, b, flags, sessionId);
  const view = await ctx.em.transactional(async (tx) => {
    await lockBlueprint(tx, b.row.blueprint_id);
    await stillOpen({ ...ctx, em: tx }, sessionId);
    const closed = await closeWipSession(tx, sessionId, 'discarded', ctx.principal.id, null);
    await deleteWipBranch(b.dir, sessionId);
    return sessionView(b, closed!);
  });
  await signalClosed(deps, sessionId, 'discarded');
  return view;
}
