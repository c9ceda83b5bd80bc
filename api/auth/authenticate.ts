import type { EntityManager } from '@mikro-orm/postgresql';
import type { JWTPayload } from 'jose';
import type { Principal } from '../../shared/auth/principal.js';
import { resolvePermissions } from '../../shared/auth/custom-roles.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { findPat, findSandboxToken, recordSignIn } from '../../shared/auth/store.js';
import { PAT_PREFIX, SANDBOX_PREFIX, secretsEqual } from '../../shared/auth/tokens.js';
import type { AppConfig } from '../../shared/config.js';
import { checkHostedClaims, requireActiveBinding } from './hosted.js';
import { authenticationRequired, verifyIdpToken } from './refusals.js';
import type { TokenVerifier } from '../../shared/auth/jwt.js';

/** The identity used for every request when AUTH_PROVIDER=none (embedded local default only). */
export const LOCAL_ADMIN_ID = 'local-admin';

export interface AuthInput {
  authorization: string | undefined;
  serviceToken: string | undefined;
}

/** Reads roles from a claim; a dotted name reaches nested claims (`realm_access.roles`). */
function rolesFromClaims(claims: JWTPayload, claimName: string): string[] {
  let value: unknown = claims;
  for (const part of claimName.split('.')) value = (value as Record<string, unknown> | undefined)?.[part];
  if (Array.isArray(value)) return value.filter((r): r is string => typeof r === 'string');
  if (typeof value === 'string') return value.split(/[\s,]+/).filter(Boolean);
  return [];
}

/**
 * The person's name as the token carries it: `name`, else `preferred_username`, trimmed; null when both
 * are absent or blank. Whatever it says (even the login id) it is a name.
 */
function claimedName(c: { name?: unknown; preferred_username?: unknown }): string | null {
  for (const v of [c.name, c.preferred_username]) if (typeof v === 'string' && v.trim()) return v.trim();
  return null;
}

/**
 * App-only tokens: client-credentials grants (`gty`), a subject equal to the client (azp /
 * client_id), an Entra ID app token (`idtyp: app`), or a Keycloak service account
 * (`preferred_username: service-account-…`).
 */
export function isAppOnlyToken(claims: JWTPayload): boolean {
  const c = claims as JWTPayload & {
    gty?: unknown;
    azp?: unknown;
    client_id?: unknown;
    idtyp?: unknown;
    preferred_username?: unknown;
  };
  return (
    c.gty === 'client-credentials' ||
    c.idtyp === 'app' ||
    (typeof c.preferred_username === 'string' && c.preferred_username.startsWith('service-account-')) ||
    (c.sub !== undefined && (c.sub === c.azp || c.sub === c.client_id))
  );
}

/**
 * Resolves the caller from the request's credentials. Returns null when none was presented (and
 * auth is on); throws AuthenticationError for a presented credential that does not hold.
 */
export async function authenticate(
  input: AuthInput,
  deps: { config: AppConfig; verifier: TokenVerifier | undefined; em: EntityManager },
): Promise<Principal | null> {
  const { config, em } = deps;
  if (input.serviceToken !== undefined) {
    if (!config.auth.serviceToken || !secretsEqual(input.serviceToken, config.auth.serviceToken)) {
      throw authenticationRequired(config, 'The X-Platform-Service-Token header is not recognised.');
    }
    return {
      kind: 'system',
      id: 'system',
      tenant: config.auth.deploymentTenant,
      displayName: 'Platform system',
      roles: ['admin'],
      permissions: permissionsFor(['admin']),
      credential: 'service_token',
    };
  }

  if (input.authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(input.authorization);
    if (!match) throw authenticationRequired(config, 'The Authorization header is not a Bearer credential.');
    const token = match[1]!;

    if (token.startsWith(PAT_PREFIX)) {
      const found = await findPat(em, token);
      if (found === 'revoked') throw authenticationRequired(config, 'This personal access token has been revoked.');
      if (found === 'expired') throw authenticationRequired(config, 'This personal access token has expired.');
      if (found === 'unknown') throw authenticationRequired(config, 'The personal access token is not recognised.');
      const { pat, owner } = found;
      // Hosted mode: a PAT acts for its owner only while the owner's identity link is active.
      if (config.auth.provider === 'hosted') await requireActiveBinding(config, em, owner.id);
      // A PAT acts in the tenant it was minted in; the owner's roles count only if they are that tenant's.
      const roles = owner.tenant === pat.tenant ? owner.roles : [];
      return {
        kind: owner.kind === 'app' ? 'app' : 'person',
        id: owner.id,
        tenant: pat.tenant,
        displayName: owner.displayName ?? owner.id,
        roles,
        permissions: await resolvePermissions(em, pat.tenant, roles),
        credential: 'pat',
        patId: pat.id,
      };
    }

    if (token.startsWith(SANDBOX_PREFIX)) {
      const found = await findSandboxToken(em, token);
      if (found === 'expired')
        throw authenticationRequired(config, 'This sandbox thread token has expired with its run.');
      if (typeof found === 'string')
        throw authenticationRequired(config, 'The sandbox thread token is not recognised.');
      return {
        kind: 'agent',
        id: found.botId,
        tenant: found.tenant,
        displayName: `agent ${found.botId}`,
        roles: [],
        permissions: new Set(),
        credential: 'sandbox_token',
        botId: found.botId,
        threadId: found.threadId,
      };
    }

    if (!deps.verifier) {
      throw authenticationRequired(
        config,
        'Identity-provider bearer tokens are not accepted: no identity provider is configured.',
      );
    }
    const claims = await verifyIdpToken(config, deps.verifier, token);
    const c = claims as JWTPayload & {
      tenant?: unknown;
      name?: unknown;
      preferred_username?: unknown;
      email?: unknown;
    };
    const tenant = typeof c.tenant === 'string' && c.tenant ? c.tenant : config.auth.deploymentTenant;
    let roles = rolesFromClaims(claims, config.auth.rolesClaim);
    let bindingId: string | undefined;
    if (config.auth.provider === 'hosted') {
      // Spec, Authentication 4: tenant and installation, then an active explicit identity link.
      checkHostedClaims(config, claims);
      const binding = await requireActiveBinding(config, em, claims.sub!);
      bindingId = binding.bindingId;
      if (binding.role === 'admin' && !roles.includes('admin')) roles = [...roles, 'admin'];
    }
    const appOnly = isAppOnlyToken(claims);
    const email = typeof c.email === 'string' ? c.email : null;
    const nameClaim = claimedName(c);
    const displayName = nameClaim ?? (email || claims.sub!);
    await recordSignIn(em, {
      id: claims.sub!,
      tenant,
      kind: appOnly ? 'app' : 'person',
      displayName,
      nameClaim,
      email,
      roles,
    });
    return {
      kind: appOnly ? 'app' : 'person',
      id: claims.sub!,
      tenant,
      displayName,
      roles,
      permissions: await resolvePermissions(em, tenant, roles),
      credential: 'idp_jwt',
      ...(bindingId ? { bindingId } : {}),
    };
  }

  if (config.auth.provider === 'none') {
    await recordSignIn(em, {
      id: LOCAL_ADMIN_ID,
      tenant: config.auth.deploymentTenant,
      kind: 'person',
      displayName: 'Local admin',
      email: null,
      roles: ['admin'],
    });
    return {
      kind: 'person',
      id: LOCAL_ADMIN_ID,
      tenant: config.auth.deploymentTenant,
      displayName: 'Local admin',
      roles: ['admin'],
      permissions: permissionsFor(['admin']),
      credential: 'auth_disabled',
    };
  }
  return null;
}
