import { randomUUID } from 'node:crypto';
import type { EntityManager, EntitySchema, FilterQuery } from '@mikro-orm/postgresql';
import {
  PersonalAccessTokenEntity,
  SandboxTokenEntity,
  UserEntity,
  type PersonalAccessToken,
  type SandboxToken,
  type User,
} from '../db/entities/index.js';
import { hashToken, mintToken, PAT_PREFIX, SANDBOX_PREFIX } from './tokens.js';
import { sql } from '../db/sql.js';
import { onProcessReset } from '../process-state.js';

/** How often a user's sign-in time and a PAT's last use are written at most, per process. */
const TOUCH_INTERVAL_MS = 60_000;
const recentlyTouched = new Map<string, number>();
onProcessReset('shared/auth/store.ts#recentlyTouched', () => {
  recentlyTouched.clear();
});

function dueForTouch(key: string, now: number): boolean {
  const last = recentlyTouched.get(key);
  if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return false;
  recentlyTouched.set(key, now);
  if (recentlyTouched.size > 10_000) recentlyTouched.clear();
  return true;
}

export interface SeenUser {
  id: string;
  tenant: string;
  kind: 'person' | 'app';
  displayName: string | null;
  /**
   * The name the identity provider's token carried (`name`, else `preferred_username`; null when it carried
   * none), kept apart from `displayName`, which falls back to the e-mail or the id. Omitted by callers that
   * saw no token (a PAT minted for its owner): the recorded one stays.
   */
  nameClaim?: string | null;
  email: string | null;
  roles: string[];
}

/**
 * Records a signed-in identity (roles as of this sign-in, sign-in time). Throttled: at most one
 * write a minute per identity and process, so authentication stays off the write path.
 */
export async function recordSignIn(em: EntityManager, user: SeenUser, now = new Date()): Promise<void> {
  const key = `${user.id}|${user.roles.join(',')}|${user.displayName ?? ''}|${user.nameClaim ?? ''}`;
  if (!dueForTouch(key, now.getTime())) return;
  await sql(
    em,
    `insert into users (id, tenant, kind, display_name, name_claim, email, roles, first_seen_at, last_sign_in_at)
     values (?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)
     on conflict (id) do update set tenant = excluded.tenant, kind = excluded.kind,
       display_name = excluded.display_name, email = excluded.email, roles = excluded.roles,
       name_claim = case when ?::boolean then excluded.name_claim else users.name_claim end,
       last_sign_in_at = excluded.last_sign_in_at`,
    [
      user.id,
      user.tenant,
      user.kind,
      user.displayName,
      user.nameClaim ?? null,
      user.email,
      JSON.stringify(user.roles),
      now,
      now,
      user.nameClaim !== undefined,
    ],
  );
}

export interface PatLookup {
  pat: PersonalAccessToken;
  owner: User;
}

/** Why a stored token cannot be used, in the order they are checked. */
type TokenRefusal = 'unknown' | 'revoked' | 'expired';

/** A token's record (PAT or sandbox token), or why it cannot be used. */
async function findUsableToken<T extends PersonalAccessToken | SandboxToken>(
  em: EntityManager,
  entity: EntitySchema<T>,
  token: string,
  now: Date,
): Promise<T | TokenRefusal> {
  const record = await em.findOne(entity, { tokenHash: hashToken(token) } as FilterQuery<T>);
  if (!record) return 'unknown';
  if (record.revokedAt) return 'revoked';
  if (record.expiresAt && record.expiresAt <= now) return 'expired';
  return record as T;
}

/** Finds a PAT by its token; answers why it cannot be used instead of returning it. */
export async function findPat(em: EntityManager, token: string, now = new Date()): Promise<PatLookup | TokenRefusal> {
  const pat = await findUsableToken(em, PersonalAccessTokenEntity, token, now);
  if (typeof pat === 'string') return pat;
  const owner = await em.findOne(UserEntity, { id: pat.ownerId });
  if (!owner) return 'unknown';
  if (dueForTouch(`pat:${pat.id}`, now.getTime())) {
    await em.nativeUpdate(PersonalAccessTokenEntity, { id: pat.id }, { lastUsedAt: now });
  }
  return { pat, owner };
}

/**
 * The platform user a warehouse login names (container-service ingress; logins are matched without case,
 * as warehouses upper-case them): the user whose id is the login exactly, else the one whose id or email
 * matches it ignoring case; null when there is none.
 */
export async function findUserByLogin(em: EntityManager, login: string): Promise<User | null> {
  const [row] = await sql<{ id: string }>(
    em,
    `select id from users where lower(id) = lower(?) or lower(email) = lower(?)
     order by (id = ?) desc, (lower(id) = lower(?)) desc, id limit 1`,
    [login, login, login, login],
  );
  return row ? em.findOne(UserEntity, { id: row.id }) : null;
}

/** A signed-in person as the owner of the tokens they mint (no email: sign-in records it). */
export function patOwner(person: { id: string; tenant: string; displayName: string; roles: string[] }): SeenUser {
  return {
    id: person.id,
    tenant: person.tenant,
    kind: 'person',
    displayName: person.displayName,
    email: null,
    roles: person.roles,
  };
}

export interface MintedPat {
  pat: PersonalAccessToken;
  token: string;
}

export async function mintPat(
  em: EntityManager,
  input: { owner: SeenUser; name: string; expiresAt: Date | null },
  now = new Date(),
): Promise<MintedPat> {
  // The owner row must exist for the PAT to resolve roles later, even if sign-in recording was throttled.
  recentlyTouched.delete(`${input.owner.id}|${input.owner.roles.join(',')}|${input.owner.displayName ?? ''}`);
  await recordSignIn(em, input.owner, now);
  const minted = mintToken(PAT_PREFIX);
  const pat: PersonalAccessToken = {
    id: randomUUID(),
    ownerId: input.owner.id,
    tenant: input.owner.tenant,
    name: input.name,
    tokenHash: minted.hash,
    tokenPrefix: minted.displayPrefix,
    createdAt: now,
    expiresAt: input.expiresAt,
    lastUsedAt: null,
    revokedAt: null,
  };
  await em.insert(PersonalAccessTokenEntity, pat);
  return { pat, token: minted.token };
}

export async function listPats(em: EntityManager, ownerId: string): Promise<PersonalAccessToken[]> {
  return em.find(PersonalAccessTokenEntity, { ownerId }, { orderBy: { createdAt: 'desc' } });
}

/** Revokes one of the owner's PATs; false when the owner has no such token. */
export async function revokePat(
  em: EntityManager,
  ownerId: string,
  id: string,
  now = new Date(),
): Promise<PersonalAccessToken | null> {
  const pat = await em.findOne(PersonalAccessTokenEntity, { id, ownerId });
  if (!pat) return null;
  if (!pat.revokedAt) {
    await em.nativeUpdate(PersonalAccessTokenEntity, { id }, { revokedAt: now });
    pat.revokedAt = now;
  }
  return pat;
}

export async function mintSandboxToken(
  em: EntityManager,
  input: { botId: string; threadId: string; tenant: string; ttlSeconds: number },
  now = new Date(),
): Promise<{ record: SandboxToken; token: string }> {
  const minted = mintToken(SANDBOX_PREFIX);
  const record: SandboxToken = {
    id: randomUUID(),
    tokenHash: minted.hash,
    botId: input.botId,
    threadId: input.threadId,
    tenant: input.tenant,
    createdAt: now,
    expiresAt: new Date(now.getTime() + input.ttlSeconds * 1000),
    revokedAt: null,
  };
  await em.insert(SandboxTokenEntity, record);
  return { record, token: minted.token };
}

export async function findSandboxToken(
  em: EntityManager,
  token: string,
  now = new Date(),
): Promise<SandboxToken | TokenRefusal> {
  return findUsableToken(em, SandboxTokenEntity, token, now);
}
