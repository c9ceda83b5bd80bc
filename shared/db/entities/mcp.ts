import { EntitySchema } from '@mikro-orm/core';

/**
 * One sign-in through the gateway's OAuth proxy, from /authorize to /oauth/token. Its id is the
 * `state` sent upstream (single use at /oauth/callback); after the callback it holds the upstream
 * code and the hash of the platform code handed to the client (single use at /oauth/token).
 */
export interface McpOAuthAuthorization {
  id: string;
  clientId: string;
  redirectUri: string;
  clientState: string | null;
  codeChallenge: string;
  scope: string | null;
  /** The platform callback sent upstream (the token exchange must repeat it exactly). */
  callbackUri: string;
  createdAt: Date;
  expiresAt: Date;
  callbackAt: Date | null;
  upstreamCode: string | null;
  codeHash: string | null;
  codeExpiresAt: Date | null;
  redeemedAt: Date | null;
}

export const McpOAuthAuthorizationEntity = new EntitySchema<McpOAuthAuthorization>({
  name: 'McpOAuthAuthorization',
  tableName: 'mcp_oauth_authorizations',
  properties: {
    id: { type: 'string', primary: true },
    clientId: { type: 'string' },
    redirectUri: { type: 'string' },
    clientState: { type: 'string', nullable: true },
    codeChallenge: { type: 'string' },
    scope: { type: 'string', nullable: true },
    callbackUri: { type: 'string' },
    createdAt: { type: 'Date' },
    expiresAt: { type: 'Date' },
    callbackAt: { type: 'Date', nullable: true },
    upstreamCode: { type: 'string', nullable: true },
    codeHash: { type: 'string', nullable: true, unique: true },
    codeExpiresAt: { type: 'Date', nullable: true },
    redeemedAt: { type: 'Date', nullable: true },
  },
});

/** A file an agent produced, served once per signed download URL. */
export interface Download {
  id: string;
  tenant: string;
  fileName: string;
  contentType: string;
  content: Buffer;
  byteSize: number;
  createdAt: Date;
}

export const DownloadEntity = new EntitySchema<Download>({
  name: 'Download',
  tableName: 'downloads',
  properties: {
    id: { type: 'uuid', primary: true },
    tenant: { type: 'string' },
    fileName: { type: 'string' },
    contentType: { type: 'string' },
    content: { type: 'blob', lazy: true },
    byteSize: { type: 'integer' },
    createdAt: { type: 'Date' },
  },
});

/** A signed download URL that has been used: its `jti`, so a second use is refused. */
export interface DownloadGrant {
  jti: string;
  downloadId: string;
  tenant: string;
  usedAt: Date;
}

export const DownloadGrantEntity = new EntitySchema<DownloadGrant>({
  name: 'DownloadGrant',
  tableName: 'download_grants',
  properties: {
    jti: { type: 'uuid', primary: true },
    downloadId: { type: 'uuid' },
    tenant: { type: 'string' },
    usedAt: { type: 'Date' },
  },
});
