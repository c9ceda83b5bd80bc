import { startOidcStack, type OidcStack, type OidcStackOptions, type People } from '../helpers/oidc-stack.js';

/** The desktop suites' stack: OIDC sign-in (by default admin: root, member: ann), no worker; `options.env` adds to the settings. */
export function startDesktopStack<K extends string = People>(options: OidcStackOptions<K> = {}): Promise<OidcStack<K>> {
  return startOidcStack<K>({ worker: false, dataDirPrefix: 'desktop-test-', ...options });
}
