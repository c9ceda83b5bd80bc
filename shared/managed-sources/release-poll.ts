import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ManagedSourceRow } from '../db/entities/index.js';
import { sql } from '../db/sql.js';
import { classifyGitError, gitHostOf, listRemoteRefs, type GitCredentials, type RemoteAccess } from './git.js';
import { openRemote } from './source-access.js';
import { scheduledSources } from './sources.js';
import { runningJobs } from './sync-job-store.js';
import { GitSyncCodes } from './error-codes.js';

/**
 * Release tracking ("skill revision tracking"): on when the source's `release_ref` names a tag on
 * the remote. A version tag is `v1.2.3` or `1.2.3` (any number of numeric parts); other tags (`latest`,
 * `v2-rc1`) are never releases.
 */
const VERSION = /^v?(\d+(?:\.\d+)*)$/;

/** The numeric parts of a version tag (null: not a version). */
export function parseVersion(tag: string): number[] | null {
  const m = VERSION.exec(tag);
  return m ? m[1]!.split('.').map(Number) : null;
}

/** Compares two versions part by part (missing parts are 0): negative, 0 or positive. */
export function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Whether `tag` is a version newer than `than` (false when either is not a version). */
export function isNewerVersion(tag: string, than: string): boolean {
  const a = parseVersion(tag);
  const b = parseVersion(than);
  return a !== null && b !== null && compareVersions(a, b) > 0;
}

export type PollRefs =
  { kind: 'tag'; newRelease: { tag: string; commit_sha: string } | null } | { kind: 'branch' } | { kind: 'missing' };

/**
 * Lists the remote's refs once: whether `releaseRef` is a tag (tracking on) or a branch, and for a tag
 * the newest version tag newer than it with its commit (annotated tags peeled; null when none).
 */
export async function pollRemoteReleases(input: RemoteAccess & { releaseRef: string }): Promise<PollRefs> {
  const refs = await listRemoteRefs(input);
  const tags = refs.filter((r) => r.ref.startsWith('refs/tags/'));
  if (!tags.some((r) => r.ref === `refs/tags/${input.releaseRef}`))
    return refs.some((r) => r.ref === `refs/heads/${input.releaseRef}`) ? { kind: 'branch' } : { kind: 'missing' };
  let best: { tag: string; version: number[]; commit_sha: string } | null = null;
  const current = parseVersion(input.releaseRef);
  if (current)
    for (const r of tags) {
      const tag = r.ref.slice('refs/tags/'.length);
      const version = parseVersion(tag);
      if (!version || compareVersions(version, current) <= 0) continue;
      if (!best || compareVersions(version, best.version) > 0) best = { tag, version, commit_sha: r.peeled ?? r.oid };
    }
  return { kind: 'tag', newRelease: best ? { tag: best.tag, commit_sha: best.commit_sha } : null };
}

export type PollSummary = { polled: number; skipped: number; failed: number };

/**
 * Release polling (part of the auto-sync check): for every source whose `release_ref` is a tag, lists
 * the remote's tags and records `release_poll.new_release` (the newest newer version tag, null when
 * none) and `checked_at`. A poll that cannot run records `error` ({code, message, at}) and keeps the
 * previous `new_release`; a source pending deletion or with a sync running is skipped (`skipped_at`);
 * a branch `release_ref` means tracking is off (`release_poll` null).
 */
export async function pollSourceReleases(em: EntityManager, config: AppConfig, tenant?: string): Promise<PollSummary> {
  const summary = { polled: 0, skipped: 0, failed: 0 };
  for (const row of await scheduledSources(em, tenant)) {
    if (!row.releaseRef) continue;
    const now = new Date().toISOString();
    if (row.deletionState || (await runningJobs(em, row.id))) {
      summary.skipped++;
      if (row.releasePoll !== null || row.tagAnchor !== null) await mergeReleasePoll(em, row.id, { skipped_at: now });
      continue;
    }
    summary[await pollSource(em, config, row, now)]++;
  }
  return summary;
}

const mergeReleasePoll = (em: EntityManager, id: string, patch: Record<string, unknown>) =>
  sql(em, `update managed_sources set release_poll = coalesce(release_poll, '{}'::jsonb) || ?::jsonb where id = ?`, [
    JSON.stringify(patch),
    id,
  ]);

/** Polls one source's remote and records what it found (or why it could not). */
async function pollSource(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
  now: string,
): Promise<keyof PollSummary> {
  let creds: GitCredentials | null = null;
  try {
    const opened = await openRemote(em, config, row, { timeoutMs: 20_000, maxResponseBytes: 16 * 1024 * 1024 });
    creds = opened.creds;
    if (opened.lapsed) throw opened.lapsed;
    const polled = await pollRemoteReleases({ ...opened.remote, releaseRef: row.releaseRef! });
    if (polled.kind === 'branch') {
      await sql(em, 'update managed_sources set release_poll = null where id = ?', [row.id]);
      return 'skipped';
    }
    if (polled.kind === 'tag') {
      await mergeReleasePoll(em, row.id, { checked_at: now, new_release: polled.newRelease, error: null });
      return 'polled';
    }
    const message = `The repository has no tag or branch named ${JSON.stringify(row.releaseRef)}.`;
    await mergeReleasePoll(em, row.id, { error: { code: GitSyncCodes.RELEASE_REF_NOT_FOUND, message, at: now } });
    return 'failed';
  } catch (err) {
    const g = classifyGitError(err, gitHostOf(row.repoUrl), creds?.kind);
    await mergeReleasePoll(em, row.id, { error: { code: g.code, message: g.message, at: now } });
    return 'failed';
  }
}
