import type { EntityManager } from '@mikro-orm/postgresql';
import type { JWTPayload } from 'jose';
import { findBinding, type ActiveBinding, type HostedScope } from '../../shared/auth/hosted-identities.js';
import { PAT_PREFIX, SANDBOX_PREFIX } from '../../shared/auth/tokens.js';
import type { AppConfig } from '../../shared/config.js';
import { NotFoundError } from '../../shared/errors.js';
import { authenticationRequired, verifyIdpToken } from './refusals.js';
import type { TokenVerifier } from '../../shared/auth/jwt.js';

/** Hosted mode (spec, Authentication 4): the deployment's tenant and installation. */
export function hostedScope(config: AppConfig): HostedScope {
  return { tenant: config.auth.deploymentTenant, installation: config.auth.installation ?? '' };
}

/** Outside hosted mode the hosted-identity routes do not exist (404, naming why). */
export function notHostedMode(config: AppConfig): NotFoundError {
  return new NotFoundError(
    `Hosted identity links exist only in hosted mode (AUTH_PROVIDER=hosted); this deployment uses "${config.auth.provider}".`,
    { reason: 'not_hosted_mode' },
  );
}

/** The tenant and installation claims of a verified assertion must name this deployment's. */
export function checkHostedClaims(config: AppConfig, claims: JWTPayload): void {
  const { tenant, installation } = claims as { tenant?: unknown; installation?: unknown };
  if (tenant !== config.auth.deploymentTenant) {
    throw authenticationRequired(
      config,
      typeof tenant === 'string'
        ? 'The signed assertion belongs to another tenant.'
        : 'The signed assertion names no tenant.',
      { reason: 'tenant_mismatch' },
    );
  }
  if (installation !== config.auth.installation) {
    throw authenticationRequired(
      config,
      typeof installation === 'string'
        ? 'The signed assertion belongs to another installation.'
        : 'The signed assertion names no installation.',
      { reason: 'installation_mismatch' },
    );
  }
}

/** The subject's active identity link, else 401 (no caching: a revoke holds from the next request). */
export async function requireActiveBinding(
  config: AppConfig,
  em: EntityManager,
  subject: string,
): Promise<ActiveBinding> {
  const found = await findBinding(em, hostedScope(config), subject);
  if (found === 'revoked')
    throw authenticationRequired(config, "This identity's link to the installation has been revoked.", {
      reason: 'identity_link_revoked',
    });
  if (found === 'none')
    throw authenticationRequired(
      config,
      'This identity has no active link to the installation; ask an admin for an invitation.',
      {
        reason: 'identity_link_missing',
      },
    );
  return found;
}

function scopesOf(claims: JWTPayload): string[] {
  const { scope, scp } = claims as { scope?: unknown; scp?: unknown };
  const out: string[] = [];
  if (typeof scope === 'string') out.push(...scope.split(/\s+/).filter(Boolean));
  if (Array.isArray(scp)) out.push(...scp.filter((s): s is string => typeof s === 'string'));
  else if (typeof scp === 'string') out.push(...scp.split(/\s+/).filter(Boolean));
  return out;
}

/**
 * A verified management assertion (issuer, audience, JWKS, tenant, installation) carrying `scope`.
 * Answers its claims, `null` when the bearer credential is not an identity-provider assertion or
 * lacks the scope (the caller may still qualify another way), and throws 401 when it does not verify.
 */
export async function managementAssertion(
  config: AppConfig,
  verifier: TokenVerifier | undefined,
  authorization: string | undefined,
  scope: string,
): Promise<JWTPayload | null> {
  if (!authorization || !verifier) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) return null;
  const token = match[1]!;
  if (token.startsWith(PAT_PREFIX) || token.startsWith(SANDBOX_PREFIX)) return null;
  const claims = await verifyIdpToken(config, verifier, token);
  checkHostedClaims(config, claims);
  return scopesOf(claims).includes(scope) ? claims : null;
}
