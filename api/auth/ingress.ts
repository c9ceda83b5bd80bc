import type { EntityManager } from '@mikro-orm/postgresql';
import { resolvePermissions } from '../../shared/auth/custom-roles.js';
import type { Principal } from '../../shared/auth/principal.js';
import { findUserByLogin, recordSignIn } from '../../shared/auth/store.js';
import type { AppConfig } from '../../shared/config.js';
import { authenticationRequired } from './refusals.js';

/**
 * The header a warehouse's container-service ingress sets to the login it authenticated (the client
 * presented the user's own warehouse credentials to the ingress, never to the platform). The service is
 * reachable only through that ingress, so the header cannot be sent by anyone else.
 */
export const INGRESS_USER_HEADER = 'sf-context-current-user';

/** A warehouse login: 1 to 255 characters, no control characters, no spaces at the ends. */
function isLogin(value: string): boolean {
  if (value.length === 0 || value.length > 255 || value.trim() !== value) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

/**
 * The caller the ingress vouches for (spec, Authentication item 3: hosted MCP in container-service
 * deployments). A login that names a platform user acts as that user with their recorded tenant and
 * roles; a new login is recorded as a person of the deployment's tenant with no roles, so it reaches
 * only what needs none until an admin grants more.
 */
export async function ingressPrincipal(em: EntityManager, config: AppConfig, login: string): Promise<Principal> {
  if (!isLogin(login)) {
    throw authenticationRequired(config, `The ${INGRESS_USER_HEADER} header does not name a warehouse login.`);
  }
  const known = await findUserByLogin(em, login);
  const user = known ?? {
    id: login,
    tenant: config.auth.deploymentTenant,
    kind: 'person' as const,
    displayName: login,
    email: null,
    roles: [] as string[],
  };
  const displayName = user.displayName ?? user.id;
  await recordSignIn(em, { ...user, displayName });
  return {
    kind: user.kind === 'app' ? 'app' : 'person',
    id: user.id,
    tenant: user.tenant,
    displayName,
    roles: user.roles,
    permissions: await resolvePermissions(em, user.tenant, user.roles),
    credential: 'ingress',
  };
}
