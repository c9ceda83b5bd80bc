/** The configuration suites' stack serves these suites too: OIDC sign-in (admin: root, member: ann), no worker. */
export { startConfigStack as startMiscStack } from '../config/support.js';
