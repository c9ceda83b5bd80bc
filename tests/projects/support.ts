import { startOidcStack, type OidcStack, type OidcStackOptions, type People } from '../helpers/oidc-stack.js';

/** The project suites' stack: OIDC sign-in (by default admin: root, member: ann), no worker. */
export function startProjectsStack<K extends string = People>(
  options: OidcStackOptions<K> = {},
): Promise<OidcStack<K>> {
  return startOidcStack<K>({ worker: false, dataDirPrefix: 'projects-test-', ...options });
}
