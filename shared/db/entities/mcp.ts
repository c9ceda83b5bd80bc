import { column, table, type Row } from './table.js';

/**
 * One sign-in through the gateway's OAuth proxy, from /authorize to /oauth/token. Its id is the
 * `state` sent upstream (single use at /oauth/callback); after the callback it holds the upstream
 * code and the hash of the platform code handed to the client (single use at /oauth/token).
 */
export const McpOAuthAuthorizationEntity = table('McpOAuthAuthorization', 'mcp_oauth_authorizations', {
  id: column.string().primary(),
  clientId: column.string(),
  redirectUri: column.string(),
  clientState: column.string().nullable(),
  codeChallenge: column.string(),
  scope: column.string().nullable(),
  /** The platform callback sent upstream (the token exchange must repeat it exactly). */
  callbackUri: column.string(),
  createdAt: column.date(),
  expiresAt: column.date(),
  callbackAt: column.date().nullable(),
  upstreamCode: column.string().nullable(),
  codeHash: column.string().nullable().unique(),
  codeExpiresAt: column.date().nullable(),
  redeemedAt: column.date().nullable(),
});
export type McpOAuthAuthorization = Row<typeof McpOAuthAuthorizationEntity>;

/** A file an agent produced, served once per signed download URL. */
export const DownloadEntity = table('Download', 'downloads', {
  id: column.uuid().primary(),
  tenant: column.string(),
  fileName: column.string(),
  contentType: column.string(),
  content: column.blob().with({ lazy: true }),
  byteSize: column.integer(),
  createdAt: column.date(),
});
export type Download = Row<typeof DownloadEntity>;

/** A signed download URL that has been used: its `jti`, so a second use is refused. */
export const DownloadGrantEntity = table('DownloadGrant', 'download_grants', {
  jti: column.uuid().primary(),
  downloadId: column.uuid(),
  tenant: column.string(),
  usedAt: column.date(),
});
export type DownloadGrant = Row<typeof DownloadGrantEntity>;
