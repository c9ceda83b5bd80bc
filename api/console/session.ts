import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type Koa from 'koa';
import type { CredentialKind, Principal, PrincipalKind } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { sql } from '../../shared/db/sql.js';

/** The session cookie: HttpOnly, SameSite=Lax, Secure unless the console is reached over loopback. */
export const SESSION_COOKIE = 'platform_console_session';
const SIGN_IN_TTL_SECONDS = 600;

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
export const randomToken = () => randomBytes(32).toString('base64url');

export interface ConsoleSession {
  principal: Principal;
  csrfToken: string;
  expiresAt: Date;
}

interface SessionRow {
  tenant: string;
  principal_id: string;
  principal_kind: string;
  display_name: string;
  roles: string[];
  credential: string;
  csrf_token: string;
  expires_at: Date;
}

/** Loopback hosts, where a Secure cookie would never come back over plain http. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

export function sessionCookieOptions(ctx: Koa.Context, maxAgeMs?: number) {
  return {
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: !isLoopbackHost(ctx.hostname),
    path: '/',
    overwrite: true,
    ...(maxAgeMs === undefined ? {} : { maxAge: maxAgeMs }),
  };
}

/** Stores a new session for the principal; answers the cookie value (only its hash is kept). */
export async function createSession(
  em: EntityManager,
  principal: Principal,
  ttlSeconds: number,
): Promise<{ cookie: string; session: ConsoleSession }> {
  // Housekeeping: sessions past their expiry go whenever a new one is made.
  await sql(em, `delete from console_sessions where expires_at <= now()`);
  const cookie = randomToken();
  const csrfToken = randomToken();
  const expiresAt = new Date(Date.now() + ttlSeconds * 1000);
  await sql(
    em,
    `insert into console_sessions (id_hash, tenant, principal_id, principal_kind, display_name, roles, credential, csrf_token, expires_at)
     values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)`,
    [
      sha256(cookie),
      principal.tenant,
      principal.id,
      principal.kind,
      principal.displayName,
      JSON.stringify(principal.roles),
      principal.credential,
      csrfToken,
      expiresAt,
    ],
  );
  return { cookie, session: { principal, csrfToken, expiresAt } };
}

/** The live session a cookie names; expired ones are deleted and answer null, as unknown ones do. */
export async function findSession(em: EntityManager, cookie: string | undefined): Promise<ConsoleSession | null> {
  if (!cookie) return null;
  const [row] = await sql<SessionRow>(em, `select * from console_sessions where id_hash = ?`, [sha256(cookie)]);
  if (!row) return null;
  if (new Date(row.expires_at).getTime() <= Date.now()) {
    await sql(em, `delete from console_sessions where id_hash = ?`, [sha256(cookie)]);
    return null;
  }
  const roles = Array.isArray(row.roles) ? row.roles : [];
  return {
    principal: {
      kind: row.principal_kind as PrincipalKind,
      id: row.principal_id,
      tenant: row.tenant,
      displayName: row.display_name,
      roles,
      permissions: permissionsFor(roles),
      credential: row.credential as CredentialKind,
    },
    csrfToken: row.csrf_token,
    expiresAt: new Date(row.expires_at),
  };
}

export async function deleteSession(em: EntityManager, cookie: string | undefined): Promise<void> {
  if (!cookie) return;
  await sql(em, `delete from console_sessions where id_hash = ?`, [sha256(cookie)]);
  // Housekeeping: expired sessions and abandoned sign-ins go whenever someone signs out.
  await sql(em, `delete from console_sessions where expires_at <= now()`);
  await sql(em, `delete from console_sign_ins where expires_at <= now()`);
}

/** A constant-time comparison of the form's CSRF token with the session's. */
export function csrfMatches(session: ConsoleSession, submitted: unknown): boolean {
  if (typeof submitted !== 'string' || submitted.length === 0) return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Records a sign-in in flight: the state's hash, the PKCE verifier and where to return. */
export async function saveSignIn(em: EntityManager, state: string, codeVerifier: string, returnTo: string) {
  await sql(em, `insert into console_sign_ins (state_hash, code_verifier, return_to, expires_at) values (?, ?, ?, ?)`, [
    sha256(state),
    codeVerifier,
    returnTo,
    new Date(Date.now() + SIGN_IN_TTL_SECONDS * 1000),
  ]);
}

/** Takes (and removes) the sign-in a state names; null when unknown, used or expired. */
export async function takeSignIn(
  em: EntityManager,
  state: string,
): Promise<{ codeVerifier: string; returnTo: string } | null> {
  const rows = await sql<{ code_verifier: string; return_to: string; expires_at: Date }>(
    em,
    `delete from console_sign_ins where state_hash = ? returning code_verifier, return_to, expires_at`,
    [sha256(state)],
  );
  const row = rows[0];
  if (!row || new Date(row.expires_at).getTime() <= Date.now()) return null;
  return { codeVerifier: row.code_verifier, returnTo: row.return_to };
}
