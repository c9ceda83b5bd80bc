import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';

/** A signed-in person of the default tenant, for suites that call services in-process (default: the local admin). */
export function personPrincipal(id = 'local-admin', roles: string[] = ['admin'], displayName = id): Principal {
  return {
    kind: 'person',
    id,
    tenant: 'default',
    displayName,
    roles,
    permissions: permissionsFor(roles),
    credential: 'idp_jwt',
  };
}
