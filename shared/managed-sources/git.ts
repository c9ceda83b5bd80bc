import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import git, { type GitHttpRequest, type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import ignoreModule from 'ignore';
import { egressFetch, EgressError, type EgressPolicy } from '../http/egress.js';
import { collectBody, packStoringHttp } from '../git/fetch-pack.js';
import { ObjectReader, type GitObject } from '../git/object-reader.js';
import { GitSyncCodes, type GitSyncCode } from './error-codes.js';
import { EgressCodes } from '../http/egress-policy.js';

// `ignore` is CommonJS with an ES default in its types: under NodeNext the default import is the module object.
const ignore = ((ignoreModule as unknown as { default?: typeof ignoreModule }).default ??
  ignoreModule) as unknown as typeof ignoreModule.default;

/** Git over HTTP(S), every request through the egress client (policy-checked, size-capped, one deadline). */
export function egressGitHttp(
  policy: EgressPolicy,
  opts: { timeoutMs?: number; maxResponseBytes?: number; signal?: AbortSignal } = {},
) {
  const client: HttpClient = {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const body = req.body ? await collectBody(req.body) : undefined;
      const res = await egressFetch(req.url, {
        policy,
        method: req.method ?? 'GET',
        headers: req.headers ?? {},
        body,
        timeoutMs: opts.timeoutMs ?? 5 * 60_000,
        maxResponseBytes: opts.maxResponseBytes ?? 512 * 1024 * 1024,
        signal: opts.signal,
      });
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        headers[k] = v;
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      return {
        url: res.url,
        method: req.method ?? 'GET',
        statusCode: res.status,
        statusMessage: res.statusText,
        headers,
        body: (async function* () {
          yield bytes;
        })(),
      };
    },
  };
  return client;
}

export interface GitCredentials {
  kind: 'token' | 'basic' | 'oauth';
  username: string | null;
  secret: string;
  /** OAuth grants only: when the saved access token lapses (ISO time; null: not known). */
  expiresAt?: string | null;
}

/**
 * Token, OAuth and basic credentials all travel as HTTP basic auth (a token as the password, as Git
 * hosts expect; an OAuth access token with user `oauth2` unless a username is saved).
 */
export function authHeaders(creds: GitCredentials | null): Record<string, string> {
  if (!creds) return {};
  const user = creds.username ?? (creds.kind === 'token' ? 'x-access-token' : creds.kind === 'oauth' ? 'oauth2' : '');
  return { authorization: `Basic ${Buffer.from(`${user}:${creds.secret}`).toString('base64')}` };
}

/** A Git failure the caller can act on, with the code the sync result names. */
export class GitSyncError extends Error {
  override name = 'GitSyncError';
  constructor(
    readonly code: GitSyncCode,
    message: string,
    /** False when retrying cannot help (credentials, missing ref, refused destination). */
    readonly retryable = false,
  ) {
    super(message);
  }
}

/** A saved OAuth grant that has lapsed: the sync refuses before contacting the server. */
export function oauthLapsed(creds: GitCredentials | null, now: Date): GitSyncError | null {
  if (creds?.kind !== 'oauth' || !creds.expiresAt) return null;
  if (Date.parse(creds.expiresAt) > now.getTime()) return null;
  return new GitSyncError(
    GitSyncCodes.OAUTH_RENEWAL_REQUIRED,
    `The saved OAuth grant for this repository lapsed at ${creds.expiresAt}; renew it and save the new credentials (PATCH credentials).`,
  );
}

/** Maps isomorphic-git and egress failures to codes; transient ones are retryable. */
export function classifyGitError(err: unknown, host: string, credKind?: GitCredentials['kind'] | null): GitSyncError {
  if (err instanceof GitSyncError) return err;
  if (err instanceof EgressError) {
    if (err.code === EgressCodes.egress_refused)
      return new GitSyncError(
        GitSyncCodes.GIT_EGRESS_REFUSED,
        `Outbound requests to ${host} are refused: ${err.message}.`,
      );
    if (err.code === EgressCodes.egress_too_large)
      return new GitSyncError(GitSyncCodes.GIT_RESPONSE_TOO_LARGE, err.message);
    return new GitSyncError(GitSyncCodes.GIT_UNREACHABLE, err.message, true);
  }
  const e = err as { code?: string; data?: { statusCode?: number } };
  if (e.code === 'HttpError') {
    const status = e.data?.statusCode ?? 0;
    if ((status === 401 || status === 403) && credKind === 'oauth')
      return new GitSyncError(
        GitSyncCodes.OAUTH_RENEWAL_REQUIRED,
        `The Git server at ${host} refused the saved OAuth grant (HTTP ${status}): it lapsed or was revoked; renew it and save the new credentials.`,
      );
    if (status === 401 || status === 403)
      return new GitSyncError(
        GitSyncCodes.GIT_AUTH_FAILED,
        `The Git server at ${host} refused the credentials (HTTP ${status}); check the source's credentials.`,
      );
    if (status === 404)
      return new GitSyncError(
        GitSyncCodes.GIT_REPOSITORY_NOT_FOUND,
        `No Git repository at that URL on ${host} (HTTP 404).`,
      );
    return new GitSyncError(
      GitSyncCodes.GIT_SERVER_ERROR,
      `The Git server at ${host} answered HTTP ${status}.`,
      status >= 500,
    );
  }
  if (e.code === 'SmartHttpError' || e.code === 'ParseError' || e.code === 'UnknownTransportError')
    return new GitSyncError(
      GitSyncCodes.GIT_PROTOCOL_ERROR,
      `The server at ${host} does not speak the Git smart HTTP protocol.`,
    );
  return new GitSyncError(GitSyncCodes.GIT_FAILED, `Git failed against ${host}.`, true);
}

/** How Git calls reach a source's remote: the egress-checked HTTP client, the URL, the credentials' headers. */
export interface RemoteAccess {
  http: HttpClient;
  url: string;
  headers: Record<string, string>;
}

/** The remote's refs, listed once (annotated tags peeled, HEAD's target named). */
export function listRemoteRefs(remote: RemoteAccess) {
  return git.listServerRefs({
    http: remote.http,
    url: remote.url,
    headers: remote.headers,
    protocolVersion: 1,
    peelTags: true,
    symrefs: true,
  });
}

/** The host named in failures about `url` ("the Git server" when it does not parse). */
export function gitHostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the Git server';
  }
}

export interface ResolvedRef {
  /** Full remote ref name (`refs/tags/v1`, `refs/heads/main`). */
  ref: string;
  kind: 'tag' | 'branch';
  /** The commit the ref names (annotated tags peeled). */
  commitSha: string;
}

/** Lists the remote's refs and resolves `releaseRef` (tag first, then branch; none: the remote HEAD). */
export async function resolveRemoteRef(input: {
  http: HttpClient;
  url: string;
  headers: Record<string, string>;
  releaseRef: string | null;
}): Promise<ResolvedRef> {
  const refs = await listRemoteRefs(input);
  const find = (name: string) => refs.find((r) => r.ref === name);
  if (input.releaseRef) {
    const tag = find(`refs/tags/${input.releaseRef}`);
    if (tag) return { ref: tag.ref, kind: 'tag', commitSha: tag.peeled ?? tag.oid };
    const branch = find(`refs/heads/${input.releaseRef}`);
    if (branch) return { ref: branch.ref, kind: 'branch', commitSha: branch.oid };
    throw new GitSyncError(
      GitSyncCodes.RELEASE_REF_NOT_FOUND,
      `The repository has no tag or branch named ${JSON.stringify(input.releaseRef)}.`,
    );
  }
  const head = find('HEAD');
  const target = head?.target ? find(head.target) : undefined;
  if (head && target?.ref.startsWith('refs/heads/')) return { ref: target.ref, kind: 'branch', commitSha: head.oid };
  throw new GitSyncError(GitSyncCodes.RELEASE_REF_NOT_FOUND, 'The repository has no default branch; set release_ref.');
}

/** Objects a fetch received, by oid, as its pack was indexed (up to `KEPT_BYTES` of them). */
export type FetchedObjects = ReadonlyMap<string, GitObject>;

/**
 * Bytes of fetched objects kept for the checkout that follows (it then inflates none of them again);
 * a larger fetch keeps its first objects only, the checkout reads the rest from the pack.
 */
const KEPT_BYTES = 64 * 1024 * 1024;

/**
 * Shallow fetch (depth 1) of one ref into the source's object store; answers once the commit is
 * present, with the objects it received (none when the store held the commit already).
 */
export async function fetchRef(input: {
  http: HttpClient;
  gitdir: string;
  url: string;
  headers: Record<string, string>;
  resolved: ResolvedRef;
}): Promise<FetchedObjects> {
  await mkdir(input.gitdir, { recursive: true });
  if (!fs.existsSync(path.join(input.gitdir, 'HEAD'))) await git.init({ fs, gitdir: input.gitdir, bare: true });
  // One isomorphic-git cache for the calls of this fetch: without it each lookup re-reads and
  // re-verifies (SHA-1 of the whole pack) every pack already fetched.
  const cache = {};
  const fetched = new Map<string, GitObject>();
  if (!(await hasCommit(input.gitdir, input.resolved.commitSha, cache))) await fetchMissing(input, cache, fetched);
  await git.writeRef({ fs, gitdir: input.gitdir, ref: FETCHED_REF, value: input.resolved.commitSha, force: true });
  return fetched;
}

/**
 * The local ref naming the commit fetched last: isomorphic-git offers the commit `ref` names as a
 * `have`, so the next fetch receives only what changed since (without it, every fetch of a new
 * commit received the whole tree again).
 */
const FETCHED_REF = 'refs/platform/fetched';

/**
 * Fetches the release commit. The first fetch is shallow (depth 1). Later ones offer the commit
 * fetched last as a `have` and ask for no depth: the server then sends only the commits since it and
 * what they changed (one changed file: a pack of a few objects). A depth-1 request over smart HTTP v1
 * makes `git upload-pack` send the whole tree again even with the `have` acknowledged (measured: the
 * second pack as large as the first), so depth is only asked for when nothing was fetched before.
 */
async function fetchMissing(
  input: Parameters<typeof fetchRef>[0],
  cache: object,
  fetched: Map<string, GitObject>,
): Promise<void> {
  // The remote `origin` (URL may have changed) with the default refspec isomorphic-git needs to record refs.
  await git.addRemote({ fs, gitdir: input.gitdir, remote: 'origin', url: input.url, force: true });
  const previous = await git.resolveRef({ fs, gitdir: input.gitdir, ref: FETCHED_REF }).catch(() => null);
  // The pack is indexed natively as it arrives (shared/git/fetch-pack.ts); bases a thin pack leaves
  // out come from the store as it was before the fetch.
  const store: { reader: ObjectReader | null } = { reader: null };
  const external = (oid: string) => (store.reader ??= new ObjectReader(input.gitdir)).read(oid);
  let kept = 0;
  const onObject = (oid: Buffer, object: GitObject) => {
    if ((kept += object.object.length) <= KEPT_BYTES) fetched.set(oid.toString('hex'), object);
  };
  try {
    await git.fetch({
      fs,
      cache,
      http: packStoringHttp(input.http, input.gitdir, { external, onObject }),
      gitdir: input.gitdir,
      remote: 'origin',
      url: input.url,
      headers: input.headers,
      remoteRef: input.resolved.ref,
      ref: FETCHED_REF,
      singleBranch: true,
      ...(previous ? {} : { depth: 1 }),
      tags: false,
    });
  } finally {
    store.reader?.close();
  }
  if (!(await hasCommit(input.gitdir, input.resolved.commitSha, cache)))
    throw new GitSyncError(
      GitSyncCodes.GIT_FETCH_INCOMPLETE,
      'The fetched pack does not contain the release commit.',
      true,
    );
}

async function hasCommit(gitdir: string, oid: string, cache: object): Promise<boolean> {
  try {
    await git.readCommit({ fs, gitdir, oid, cache });
    return true;
  } catch {
    return false;
  }
}

/** The checkout rules that apply: blank lines and `#` comments dropped. */
export function effectiveRules(rules: readonly string[]): string[] {
  return rules.map((r) => r.trim()).filter((r) => r !== '' && !r.startsWith('#'));
}

export function rulesHash(rules: readonly string[]): string {
  return createHash('sha256')
    .update(JSON.stringify(effectiveRules(rules)))
    .digest('hex');
}

/** A matcher for gitignore-style rules (`!` re-includes); empty rules match nothing. */
export function gitignoreMatcher(rules: readonly string[]): (file: string) => boolean {
  const effective = effectiveRules(rules);
  if (!effective.length) return () => false;
  const ig = ignore().add(effective);
  return (file) => ig.ignores(file);
}

/**
 * Rules that gitignore semantics cannot honour: a `!` rule re-including a path below a directory
 * the rules exclude (Git never re-includes a file whose parent directory is excluded, and neither
 * does this checkout). Answers the offending rules (empty: all supported).
 */
export function unsupportedCheckoutRules(rules: readonly string[]): string[] {
  const effective = effectiveRules(rules);
  const bad: string[] = [];
  effective.forEach((rule, i) => {
    if (!rule.startsWith('!')) return;
    const before = gitignoreMatcher(effective.slice(0, i));
    const literal = rule
      .slice(1)
      .replace(/^\/+/, '')
      .split(/[*?[\\]/)[0]!;
    const parts = literal.split('/');
    parts.pop(); // the last component is the re-included name itself (or a partial one)
    for (let k = 1; k <= parts.length; k++) {
      if (parts[k - 1] === '') break;
      if (before(`${parts.slice(0, k).join('/')}/`)) {
        bad.push(rule);
        return;
      }
    }
  });
  return bad;
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

export async function workingTreeExists(workdir: string): Promise<boolean> {
  return exists(workdir);
}

/** Every file under `dir`, as `/`-separated paths relative to it, in a stable order. */
export async function* listFiles(dir: string, prefix = ''): AsyncGenerator<string> {
  const entries = await readdir(path.join(dir, ...prefix.split('/').filter(Boolean)), { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) yield* listFiles(dir, rel);
    else if (e.isFile()) yield rel;
  }
}
