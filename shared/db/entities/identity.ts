import { EntitySchema } from '@mikro-orm/core';

/** A person (or app) seen through the identity provider; PATs resolve their roles from here. */
export interface User {
  id: string;
  tenant: string;
  kind: 'person' | 'app';
  displayName: string | null;
  email: string | null;
  roles: string[];
  firstSeenAt: Date;
  lastSignInAt: Date;
}

export const UserEntity = new EntitySchema<User>({
  name: 'User',
  tableName: 'users',
  properties: {
    id: { type: 'string', primary: true },
    tenant: { type: 'string' },
    kind: { type: 'string' },
    displayName: { type: 'string', nullable: true },
    email: { type: 'string', nullable: true },
    roles: { type: 'json' },
    firstSeenAt: { type: 'Date' },
    lastSignInAt: { type: 'Date' },
  },
});

/** A personal access token (`gp_…`): only its SHA-256 is stored; the token is shown once. */
export interface PersonalAccessToken {
  id: string;
  ownerId: string;
  tenant: string;
  name: string;
  tokenHash: string;
  tokenPrefix: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export const PersonalAccessTokenEntity = new EntitySchema<PersonalAccessToken>({
  name: 'PersonalAccessToken',
  tableName: 'personal_access_tokens',
  properties: {
    id: { type: 'uuid', primary: true },
    ownerId: { type: 'string' },
    tenant: { type: 'string' },
    name: { type: 'string' },
    tokenHash: { type: 'string', unique: true },
    tokenPrefix: { type: 'string' },
    createdAt: { type: 'Date' },
    expiresAt: { type: 'Date', nullable: true },
    lastUsedAt: { type: 'Date', nullable: true },
    revokedAt: { type: 'Date', nullable: true },
  },
});

/** A sandbox thread token (`gsk_…`) bound to one agent, one thread and an expiry. */
export interface SandboxToken {
  id: string;
  tokenHash: string;
  botId: string;
  threadId: string;
  tenant: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
}

export const SandboxTokenEntity = new EntitySchema<SandboxToken>({
  name: 'SandboxToken',
  tableName: 'sandbox_tokens',
  properties: {
    id: { type: 'uuid', primary: true },
    tokenHash: { type: 'string', unique: true },
    botId: { type: 'string' },
    threadId: { type: 'string' },
    tenant: { type: 'string' },
    createdAt: { type: 'Date' },
    expiresAt: { type: 'Date' },
    revokedAt: { type: 'Date', nullable: true },
  },
});
