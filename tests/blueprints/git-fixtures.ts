/** Fixtures of the blueprint tests that drive the store directly, without a stack. */
import type { Principal } from '../../shared/auth/principal.js';

/** The author of commits made by the store (authentication disabled). */
export const principal: Principal = {
  kind: 'person',
  id: 'u1',
  tenant: 't1',
  displayName: 'User One',
  roles: [],
  permissions: new Set(),
  credential: 'auth_disabled',
};
