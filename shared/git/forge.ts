import { egressFetch, type EgressPolicy } from '../http/egress.js';

/**
 * A small Git-host ("forge") REST client: opening a pull request the GitHub way
 * (`POST {api}/repos/{owner}/{repo}/pulls` `{title, head, base, body}` → `{html_url, number}`), through
 * the egress client. The API base is a setting or derived from the repository URL: `github.com`
 * answers `https://api.github.com`, any other host `<origin>/api/v3` (GitHub Enterprise).
 */

export class ForgeError extends Error {
  override name = 'ForgeError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface RepoCoordinates {
  owner: string;
  repo: string;
  apiBase: string;
}

/** Owner and name from `https://host/owner/name(.git)`; the API base from `apiOverride` or the host. */
export function repoCoordinates(repoUrl: string, apiOverride?: string | null): RepoCoordinates {
  let url: URL;
  try {
    url = new URL(repoUrl);
  } catch {
    throw new ForgeError(`The repository URL ${JSON.stringify(repoUrl)} is not a URL.`, 0);
  }
  const parts = url.pathname
    .replace(/\.git\/?$/, '')
    .split('/')
    .filter(Boolean);
  if (parts.length < 2)
    throw new ForgeError(`The repository URL ${repoUrl} does not name an owner and a repository.`, 0);
  const apiBase = apiOverride
    ? apiOverride.replace(/\/+$/, '')
    : url.hostname === 'github.com'
      ? 'https://api.github.com'
      : `${url.origin}/api/v3`;
  return { owner: parts[parts.length - 2]!, repo: parts[parts.length - 1]!, apiBase };
}

export interface PullRequest {
  html_url: string;
  number: number;
}

export async function openPullRequest(input: {
  policy: EgressPolicy;
  coordinates: RepoCoordinates;
  token: string;
  title: string;
  head: string;
  base: string;
  body: string;
  signal?: AbortSignal;
}): Promise<PullRequest> {
  const { owner, repo, apiBase } = input.coordinates;
  const res = await egressFetch(`${apiBase}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/pulls`, {
    policy: input.policy,
    method: 'POST',
    headers: {
      authorization: `Bearer ${input.token}`,
      accept: 'application/vnd.github+json',
      'content-type': 'application/json',
    },
    body: JSON.stringify({ title: input.title, head: input.head, base: input.base, body: input.body }),
    timeoutMs: 30_000,
    maxResponseBytes: 1024 * 1024,
    ...(input.signal ? { signal: input.signal } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new ForgeError(`The Git host answered HTTP ${res.status} to the pull request.`, res.status);
  let json: { html_url?: unknown; number?: unknown };
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    throw new ForgeError('The Git host answered the pull request with something other than JSON.', res.status);
  }
  if (typeof json.html_url !== 'string' || typeof json.number !== 'number')
    throw new ForgeError('The Git host answered the pull request without html_url and number.', res.status);
  return { html_url: json.html_url, number: json.number };
}

/**
 * The pull request whose head is `branch` in the repository, open or closed (the GitHub way:
 * `GET {api}/repos/{owner}/{repo}/pulls?head={owner}:{branch}&state=all`), or null when there is none.
 * Without a token the request is anonymous (a public repository answers it).
 */
export async function findPullRequestByHead(input: {
  policy: EgressPolicy;
  coordinates: RepoCoordinates;
  token: string | null;
  branch: string;
  timeoutMs?: number;
}): Promise<PullRequest | null> {
  const { owner, repo, apiBase } = input.coordinates;
  const query = new URLSearchParams({ head: `${owner}:${input.branch}`, state: 'all', per_page: '5' });
  const res = await egressFetch(
    `${apiBase}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/pulls?${query.toString()}`,
    {
      policy: input.policy,
      headers: {
        accept: 'application/vnd.github+json',
        ...(input.token ? { authorization: `Bearer ${input.token}` } : {}),
      },
      timeoutMs: input.timeoutMs ?? 10_000,
      maxResponseBytes: 1024 * 1024,
    },
  );
  const text = await res.text();
  if (!res.ok) throw new ForgeError(`The Git host answered HTTP ${res.status} to the pull request search.`, res.status);
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw new ForgeError('The Git host answered the pull request search with something other than JSON.', res.status);
  }
  const found = (
    Array.isArray(list) ? (list as Array<{ html_url?: unknown; number?: unknown; head?: { ref?: unknown } }>) : []
  )
    // A host that ignores the filter answers every pull request: keep only this head's.
    .find(
      (p) =>
        typeof p.html_url === 'string' &&
        typeof p.number === 'number' &&
        (p.head?.ref ?? input.branch) === input.branch,
    );
  return found ? { html_url: found.html_url as string, number: found.number as number } : null;
}
