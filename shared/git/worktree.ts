/**
 * A local working copy cloned from a remote, changed, committed and pushed back as a new branch: the
 * steps the code-agent run and the knowledge-base pull request share. Every request goes through the
 * egress client with the caller's credentials as HTTP basic auth (shared/managed-sources/git.ts); failures
 * are left to the caller to classify with `classifyGitError`, since each maps them to its own outcome.
 */
import * as fs from 'node:fs';
import git, { type HttpClient } from 'isomorphic-git';
import type { EgressPolicy } from '../http/egress.js';
import { authHeaders, egressGitHttp, GitSyncError, type GitCredentials } from '../managed-sources/git.js';
import { GitSyncCodes } from '../managed-sources/error-codes.js';

/** Where a working copy comes from and goes back to. */
export interface GitRemote {
  url: string;
  http: HttpClient;
  headers: Record<string, string>;
}

/** The commit author and committer of a bot. */
export interface GitIdentity {
  name: string;
  email: string;
}

/** A remote reached through the egress policy with `creds` (none: anonymous). */
export function gitRemote(policy: EgressPolicy, url: string, creds: GitCredentials | null): GitRemote {
  return { url, http: egressGitHttp(policy), headers: authHeaders(creds) };
}

/** Clones one branch of `remote` into `dir` (no tags; `depth` limits history when the caller needs none). */
export async function cloneBranch(remote: GitRemote, dir: string, ref: string, opts: { depth?: number } = {}) {
  await git.clone({
    fs,
    http: remote.http,
    dir,
    url: remote.url,
    ref,
    singleBranch: true,
    ...(opts.depth ? { depth: opts.depth } : {}),
    noTags: true,
    headers: remote.headers,
  });
}

/** Whether the clone in `dir` holds commit `oid`. */
export function hasCommit(dir: string, oid: string): Promise<boolean> {
  return git
    .readCommit({ fs, dir, oid })
    .then(() => true)
    .catch(() => false);
}

/** Creates `branch` at `object` (default: HEAD) and checks it out. */
export async function checkoutNewBranch(dir: string, branch: string, object?: string): Promise<void> {
  if (object === undefined) {
    await git.branch({ fs, dir, ref: branch, checkout: true });
    return;
  }
  await git.branch({ fs, dir, ref: branch, object });
  await git.checkout({ fs, dir, ref: branch, force: true });
}

/** Stages every path whose working copy differs from HEAD (deletions included); returns those paths. */
export async function stageAllChanges(dir: string): Promise<string[]> {
  const changed = (await git.statusMatrix({ fs, dir })).filter(([, h, w]) => !(h === 1 && w === 1));
  for (const [file, , w] of changed) {
    if (w === 0) await git.remove({ fs, dir, filepath: file });
    else await git.add({ fs, dir, filepath: file });
  }
  return changed.map(([file]) => file);
}

/** Stages one path as written (`add`) or as removed from the index (`remove`). */
export async function stagePath(dir: string, filepath: string, change: 'add' | 'remove'): Promise<void> {
  if (change === 'remove') await git.remove({ fs, dir, filepath });
  else await git.add({ fs, dir, filepath });
}

/** Commits the index as `bot`; returns the commit id. */
export function commitAs(dir: string, bot: GitIdentity, message: string): Promise<string> {
  return git.commit({ fs, dir, message, author: bot, committer: bot });
}

/** Pushes local `branch` to the same name on `remote`; a refusal the server reports is `GIT_PUSH_REFUSED`. */
export async function pushBranch(remote: GitRemote, dir: string, branch: string): Promise<void> {
  const pushed = await git.push({
    fs,
    http: remote.http,
    dir,
    remote: 'origin',
    ref: branch,
    remoteRef: `refs/heads/${branch}`,
    headers: remote.headers,
  });
  if (!pushed.ok)
    throw new GitSyncError(GitSyncCodes.GIT_PUSH_REFUSED, pushed.error ?? 'The Git server refused the push.');
}
