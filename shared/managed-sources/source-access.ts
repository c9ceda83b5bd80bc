import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ManagedSourceRow } from '../db/entities/index.js';
import { refreshKeyring, secretBox } from '../secrets/secret-box.js';
import {
  authHeaders,
  egressGitHttp,
  oauthLapsed,
  type GitCredentials,
  type GitSyncError,
  type RemoteAccess,
} from './git.js';

/** Where a source's object store and working tree live. */
export function sourcePaths(config: AppConfig, sourceId: string) {
  const root = path.join(config.managedSources.dir, sourceId);
  return { root, gitdir: path.join(root, 'repo.git'), workdir: path.join(root, 'checkout') };
}

/** The source's Git credentials, opened from the secret box (null when it has none). */
export async function openCredentials(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
): Promise<GitCredentials | null> {
  if (!row.credentialsSealed || !row.credentialKind) return null;
  await refreshKeyring(em);
  const { secret, expires_at } = JSON.parse(secretBox(config).open(row.credentialsSealed)) as {
    secret: string;
    expires_at?: string | null;
  };
  return { kind: row.credentialKind, username: row.credentialUsername, secret, expiresAt: expires_at ?? null };
}

/**
 * The source's remote as Git calls take it (egress-checked HTTP with `http` limits, the credentials'
 * headers), its credentials, and the lapse of a saved OAuth grant (null while valid).
 */
export async function openRemote(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
  http: Parameters<typeof egressGitHttp>[1] = {},
): Promise<{ remote: RemoteAccess; creds: GitCredentials | null; lapsed: GitSyncError | null }> {
  const creds = await openCredentials(em, config, row);
  const remote = { http: egressGitHttp(config.egress, http), url: row.repoUrl, headers: authHeaders(creds) };
  return { remote, creds, lapsed: oauthLapsed(creds, new Date()) };
}

/** Credentials as a caller gives them (the API's field names); null removes them. */
export type CredentialsInput =
  | { kind: 'token'; token: string; username?: string }
  | { kind: 'basic'; username: string; password: string }
  | { kind: 'oauth'; access_token: string; expires_at?: string; username?: string }
  | null;

/** The source's credential columns for `creds`: kind, user name and expiry in the clear, the secret sealed. */
export function sealCredentials(config: AppConfig, creds: CredentialsInput) {
  if (!creds)
    return { credentialKind: null, credentialUsername: null, credentialExpiresAt: null, credentialsSealed: null };
  const secret = creds.kind === 'token' ? creds.token : creds.kind === 'oauth' ? creds.access_token : creds.password;
  const expires_at = creds.kind === 'oauth' && creds.expires_at ? new Date(creds.expires_at).toISOString() : null;
  return {
    credentialKind: creds.kind,
    credentialUsername: creds.username ?? null,
    credentialExpiresAt: expires_at ? new Date(expires_at) : null,
    credentialsSealed: secretBox(config).seal(JSON.stringify({ secret, expires_at })),
  };
}
