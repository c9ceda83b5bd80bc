/**
 * Blueprint work-in-progress (WIP) sessions, storage side (issue 14). A session is a row of
 * `blueprint_wip_sessions` and a branch `wip/<session_id>` of the blueprint repository, started at the
 * working copy's head (`base_commit`). Each edit is a commit on that branch (the working copy is not
 * touched); committing the session applies the files the branch changed since its base to the working
 * copy as ONE commit; discarding or expiring it deletes the branch. Callers hold the blueprint's lock.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { EntityManager } from '@mikro-orm/postgresql';
import git from 'isomorphic-git';
import { ConflictError } from '../errors.js';
import { listCommitFiles, readCommitFile } from './store.js';
import { writeSnapshotCommit, type FileMap, type GitAuthor } from './versions.js';
import { sql } from '../db/sql.js';
import { BlueprintCodes } from './error-codes.js';

export type WipStatus = 'open' | 'committed' | 'discarded' | 'expired';

export interface WipRow {
  session_id: string;
  blueprint_id: string;
  tenant: string;
  opened_by: string;
  base_commit: string;
  status: WipStatus;
  note: string | null;
  edit_count: number;
  expires_at: Date;
  closed_at: Date | null;
  closed_by: string | null;
  commit_sha: string | null;
  created_at: Date;
}

export function newWipSessionId(): string {
  return `bpwip_${randomBytes(8).toString('hex')}`;
}

export const wipBranch = (sessionId: string) => `wip/${sessionId}`;
const wipRef = (sessionId: string) => `refs/heads/${wipBranch(sessionId)}`;

/**
 * Active sessions of a blueprint: status `open` and not past `expires_at` (the workflow records the
 * expiry durably; a session past its expiry whose timer has not fired yet no longer blocks anything).
 */
export async function activeWipSessions(em: EntityManager, blueprintId: string): Promise<WipRow[]> {
  return sql<WipRow>(
    em,
    `select * from blueprint_wip_sessions where blueprint_id = ? and status = 'open' and expires_at > now()
      order by created_at`,
    [blueprintId],
  );
}

/** 409 BLUEPRINT_WIP_SESSION_ACTIVE while a WIP session is active on the blueprint (rename, create_version import). */
export async function refuseActiveWip(
  em: EntityManager,
  blueprint: { blueprint_id: string; name: string },
  what: string,
): Promise<void> {
  const active = await activeWipSessions(em, blueprint.blueprint_id);
  if (!active.length) return;
  throw new ConflictError(
    `Blueprint "${blueprint.name}" has ${active.length} active work-in-progress session(s); ${what} once they are committed, discarded or expired.`,
    {
      code: BlueprintCodes.BLUEPRINT_WIP_SESSION_ACTIVE,
      blueprint_name: blueprint.name,
      blueprint_id: blueprint.blueprint_id,
      wip_session_ids: active.map((r) => r.session_id),
    },
  );
}

export async function listWipSessions(em: EntityManager, blueprintId: string, limit: number): Promise<WipRow[]> {
  return sql<WipRow>(
    em,
    `select * from blueprint_wip_sessions where blueprint_id = ? order by created_at desc, session_id limit ?`,
    [blueprintId, limit],
  );
}

export async function findWipSession(em: EntityManager, sessionId: string): Promise<WipRow | undefined> {
  return (await sql<WipRow>(em, `select * from blueprint_wip_sessions where session_id = ?`, [sessionId]))[0];
}

export async function insertWipSession(
  tx: EntityManager,
  row: Pick<WipRow, 'session_id' | 'blueprint_id' | 'tenant' | 'opened_by' | 'base_commit' | 'note'>,
  ttlSeconds: number,
): Promise<WipRow> {
  const rows = await sql<WipRow>(
    tx,
    `insert into blueprint_wip_sessions (session_id, blueprint_id, tenant, opened_by, base_commit, note, expires_at)
       values (?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?)) returning *`,
    [row.session_id, row.blueprint_id, row.tenant, row.opened_by, row.base_commit, row.note, ttlSeconds],
  );
  return rows[0]!;
}

/** Moves an open session to a final status; answers the row, or undefined when it was not open any more. */
export async function closeWipSession(
  tx: EntityManager,
  sessionId: string,
  status: Exclude<WipStatus, 'open'>,
  by: string | null,
  commitSha: string | null,
): Promise<WipRow | undefined> {
  const rows = await sql<WipRow>(
    tx,
    `update blueprint_wip_sessions set status = ?, closed_at = now(), closed_by = ?, commit_sha = ?
       where session_id = ? and status = 'open' returning *`,
    [status, by, commitSha, sessionId],
  );
  return rows[0];
}

export async function countWipEdit(tx: EntityManager, sessionId: string): Promise<void> {
  await sql(tx, `update blueprint_wip_sessions set edit_count = edit_count + 1 where session_id = ?`, [sessionId]);
}

// ---- Git ----

export async function createWipBranch(dir: string, sessionId: string, base: string): Promise<void> {
  await git.writeRef({ fs, dir, ref: wipRef(sessionId), value: base, force: true });
}

export async function wipTip(dir: string, sessionId: string): Promise<string | null> {
  try {
    return await git.resolveRef({ fs, dir, ref: wipRef(sessionId) });
  } catch {
    return null;
  }
}

export async function deleteWipBranch(dir: string, sessionId: string): Promise<void> {
  if ((await wipTip(dir, sessionId)) !== null) await git.deleteRef({ fs, dir, ref: wipRef(sessionId) });
}

/** The files of a commit (the session branch is small: a blueprint's own files). */
export async function commitFileMap(dir: string, commit: string): Promise<FileMap> {
  const out: FileMap = new Map();
  for (const f of await listCommitFiles(dir, commit)) out.set(f, await readCommitFile(dir, commit, f));
  return out;
}

/** Commits `files` (the branch's complete new content) on the session branch; answers the new tip. */
export async function commitOnWipBranch(
  dir: string,
  sessionId: string,
  files: FileMap,
  author: GitAuthor,
  message: string,
): Promise<string> {
  const parent = await wipTip(dir, sessionId);
  const oid = await writeSnapshotCommit(dir, files, { parent, author, message });
  await git.writeRef({ fs, dir, ref: wipRef(sessionId), value: oid, force: true });
  return oid;
}

async function blobOid(dir: string, commit: string, filepath: string): Promise<string | null> {
  try {
    return (await git.readBlob({ fs, dir, oid: commit, filepath })).oid;
  } catch {
    return null;
  }
}

/** What the session branch changed since its base: paths written (with their bytes) and paths removed. */
export async function wipChanges(
  dir: string,
  base: string,
  tip: string,
): Promise<{ written: FileMap; removed: string[] }> {
  const baseFiles = new Set(await listCommitFiles(dir, base));
  const tipFiles = await listCommitFiles(dir, tip);
  const written: FileMap = new Map();
  for (const f of tipFiles) {
    const oid = await blobOid(dir, tip, f);
    if (!baseFiles.has(f) || oid !== (await blobOid(dir, base, f))) written.set(f, await readCommitFile(dir, tip, f));
  }
  const tipSet = new Set(tipFiles);
  return { written, removed: [...baseFiles].filter((f) => !tipSet.has(f)) };
}
