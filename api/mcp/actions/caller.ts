import type { Principal } from '../../../shared/auth/principal.js';
import type { AppConfig } from '../../../shared/config.js';
import { credentialGuidance, gatewayAuthMode } from '../auth-mode.js';
import { resourceMetadataUrl } from '../public-url.js';
import type { GatewayContext } from './registry.js';

/** Who is calling, as status and login_status show it (never the credential itself). */
export function callerView(principal: Principal) {
  return {
    kind: principal.kind,
    id: principal.id,
    display_name: principal.displayName,
    tenant: principal.tenant,
    roles: principal.roles,
    credential: principal.credential,
    ...(principal.patId ? { pat_id: principal.patId } : {}),
  };
}

/** How this deployment authenticates MCP clients (spec, Authentication item 3). */
export function authView(config: AppConfig, gateway: GatewayContext) {
  const mode = gatewayAuthMode(config);
  const mountPath = new URL(gateway.endpoint).pathname.replace(/\/$/, '');
  return {
    mode,
    provider: config.auth.provider,
    oauth_proxy_enabled: config.mcp.oauthProxyEnabled,
    issuer: config.auth.issuer ?? null,
    // Header/proxy and ingress auth have no issuer to check; with sign-in off there is nothing to check either.
    oidc_checks: mode === 'header' || mode === 'ingress' || mode === 'none' ? 'not_applicable' : 'applicable',
    resource_metadata: resourceMetadataUrl(gateway.publicOrigin, mountPath),
    guidance: credentialGuidance(mode),
  };
}
