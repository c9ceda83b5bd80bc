import { column, table, type Row } from './table.js';

/** A person (or app) seen through the identity provider; PATs resolve their roles from here. */
export const UserEntity = table('User', 'users', {
  id: column.string().primary(),
  tenant: column.string(),
  kind: column.string<'person' | 'app'>(),
  displayName: column.string().nullable(),
  email: column.string().nullable(),
  roles: column.json<string[]>(),
  firstSeenAt: column.date(),
  lastSignInAt: column.date(),
});
export type User = Row<typeof UserEntity>;

/** A personal access token (`gp_…`): only its SHA-256 is stored; the token is shown once. */
export const PersonalAccessTokenEntity = table('PersonalAccessToken', 'personal_access_tokens', {
  id: column.uuid().primary(),
  ownerId: column.string(),
  tenant: column.string(),
  name: column.string(),
  tokenHash: column.string().unique(),
  tokenPrefix: column.string(),
  createdAt: column.date(),
  expiresAt: column.date().nullable(),
  lastUsedAt: column.date().nullable(),
  revokedAt: column.date().nullable(),
});
export type PersonalAccessToken = Row<typeof PersonalAccessTokenEntity>;

/** A sandbox thread token (`gsk_…`) bound to one agent, one thread and an expiry. */
export const SandboxTokenEntity = table('SandboxToken', 'sandbox_tokens', {
  id: column.uuid().primary(),
  tokenHash: column.string().unique(),
  botId: column.string(),
  threadId: column.string(),
  tenant: column.string(),
  createdAt: column.date(),
  expiresAt: column.date(),
  revokedAt: column.date().nullable(),
});
export type SandboxToken = Row<typeof SandboxTokenEntity>;
