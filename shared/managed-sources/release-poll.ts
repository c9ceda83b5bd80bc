import git, { type HttpClient } from 'isomorphic-git';

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
export async function pollRemoteReleases(input: {
  http: HttpClient;
  url: string;
  headers: Record<string, string>;
  releaseRef: string;
}): Promise<PollRefs> {
  const refs = await git.listServerRefs({
    http: input.http,
    url: input.url,
    headers: input.headers,
    protocolVersion: 1,
    peelTags: true,
  });
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
