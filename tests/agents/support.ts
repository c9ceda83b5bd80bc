import { startOidcStack, type OidcStack, type OidcStackOptions, type People } from '../helpers/oidc-stack.js';

/** The agent suites' stack: OIDC sign-in (by default admin: root, member: ann), a worker unless told otherwise. */
export function startAgentsStack<K extends string = People>(options: OidcStackOptions<K> = {}): Promise<OidcStack<K>> {
  return startOidcStack<K>({ dataDirPrefix: 'agents-test-', ...options });
}
