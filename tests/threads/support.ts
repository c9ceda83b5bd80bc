import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';

/** A signed-in administrator of the default tenant, as the thread service sees a caller. */
export const person = (id: string): Principal => ({
  kind: 'person',
  id,
  tenant: 'default',
  displayName: id,
  roles: ['admin'],
  permissions: permissionsFor(['admin']),
  credential: 'idp_jwt',
});
