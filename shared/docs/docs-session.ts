import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { UserEntity } from '../db/entities/index.js';
import { BadRequestError, ServiceUnavailableError } from '../errors.js';
import { RequestCodes } from '../http/error-codes.js';

/**
 * Sign-in links into the hosted documentation (spec: `POST /api/docs/session`; Limits: login JWT
 * valid 10 s, session up to 1 hour). The caller names a page by its path relative to the docs tree;
 * the answer is `<PLATFORM_DOCS_BASE_URL>/auth/session?token=<JWT>`, where the JWT (HS256 with
 * PLATFORM_SIGNING_KEY, which the docs host shares) carries who signed in and the page (`redirect`),
 * so the docs host opens a session and redirects within its own tree.
 */
export const DOCS_LOGIN_TTL_SECONDS = 10;
export const DOCS_SESSION_MAX_SECONDS = 3600;
export const DOCS_AUDIENCE = 'platform-docs';
export const DOCS_LOGIN_PATH = '/auth/session';
export const MAX_DOCS_PATH_LENGTH = 1024;

/**
 * A relative path in the docs tree: segments of letters, digits and `._~-` that do not start with a
 * dot (so no `.` or `..`), one optional leading `/`, an optional `#fragment`. Nothing else: no scheme,
 * host, `//`, backslash, query, or percent-encoding (which is how `%2e%2e` and `%2f` tricks hide).
 */
export const DOCS_PATH_PATTERN =
  /^\/?(?:[A-Za-z0-9_~-][A-Za-z0-9._~-]*\/)*(?:[A-Za-z0-9_~-][A-Za-z0-9._~-]*)?(?:#[A-Za-z0-9._~-]*)?$/;

const invalidRedirect = (detail: string) =>
  new BadRequestError(`invalid redirect: ${detail}`, {
    reason: 'invalid_redirect',
    fields: [{ field: 'body.path', message: `invalid redirect: ${detail}`, code: RequestCodes.invalid_redirect }],
  });

/** The page path, normalised to start with `/`; throws 400 `invalid_redirect` for anything outside the tree. */
export function docsRedirectPath(baseUrl: string, raw: string): string {
  if (raw.length > MAX_DOCS_PATH_LENGTH || !DOCS_PATH_PATTERN.test(raw)) {
    throw invalidRedirect('give a relative path inside the docs tree (no scheme, host, `..`, backslash or %-encoding)');
  }
  const path = raw.startsWith('/') ? raw : `/${raw}`;
  // Belt and braces: resolved against the base, the page must stay under it.
  const resolved = new URL(`${baseUrl}${path}`);
  const base = new URL(`${baseUrl}/`);
  if (resolved.origin !== base.origin || !resolved.pathname.startsWith(base.pathname)) {
    throw invalidRedirect('the path leaves the docs tree');
  }
  return path;
}

export interface DocsCaller {
  id: string;
  tenant: string;
  displayName: string;
  email: string | null;
}

/** `baseUrl` is the effective `docs.base_url` setting (saved, then PLATFORM_DOCS_BASE_URL), already normalised. */
export async function createDocsSession(
  config: AppConfig,
  baseUrl: string | null,
  caller: DocsCaller,
  rawPath: string,
  now = new Date(),
): Promise<{ url: string; expires_at: string; expires_in: number; redirect: string }> {
  if (!baseUrl) {
    throw new ServiceUnavailableError(
      'docs',
      'Hosted documentation is not available on this deployment (setting docs.base_url, PLATFORM_DOCS_BASE_URL, is unset).',
    );
  }
  if (!config.signingKey) {
    throw new ServiceUnavailableError(
      'docs',
      'Hosted documentation sign-in needs PLATFORM_SIGNING_KEY (shared with the docs host); it is unset.',
    );
  }
  const redirect = docsRedirectPath(baseUrl, rawPath);
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + DOCS_LOGIN_TTL_SECONDS;
  const token = await new SignJWT({
    tenant: caller.tenant,
    name: caller.displayName,
    ...(caller.email ? { email: caller.email } : {}),
    redirect,
    session_max_seconds: DOCS_SESSION_MAX_SECONDS,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(config.publicBaseUrl ?? 'data-agent-platform')
    .setAudience(DOCS_AUDIENCE)
    .setSubject(caller.id)
    .setJti(randomUUID())
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(config.signingKey));
  return {
    url: `${baseUrl}${DOCS_LOGIN_PATH}?token=${encodeURIComponent(token)}`,
    expires_at: new Date(exp * 1000).toISOString(),
    expires_in: DOCS_LOGIN_TTL_SECONDS,
    redirect,
  };
}

/** A sign-in link for the calling person (their saved e-mail address, if any, goes into the JWT). */
export async function startDocsSession(deps: AppDeps, em: EntityManager, principal: Principal, rawPath: string) {
  const user = await em.findOne(UserEntity, { id: principal.id });
  return createDocsSession(
    deps.config,
    await deps.settings.get('docs.base_url'),
    { id: principal.id, tenant: principal.tenant, displayName: principal.displayName, email: user?.email ?? null },
    rawPath,
  );
}
