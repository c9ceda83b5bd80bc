import type { AppConfig } from '../../shared/config.js';

/**
 * How MCP clients authenticate (spec, Authentication item 3):
 * - `none`: sign-in is off; every call is the local admin.
 * - `header`: `auth.provider` proxy without `auth.issuer` — the ingress authenticates; MCP clients send a PAT; OIDC checks are not applicable.
 * - `ingress`: the same in a container-service deployment (`PLATFORM_CONTAINER_SERVICE_MODE`): the warehouse's
 *   ingress authenticates MCP clients with the user's own warehouse credentials and names the login in
 *   `Sf-Context-Current-User` (api/auth/ingress.ts); a PAT works too; OIDC checks are not applicable.
 * - `oidc`: browser OAuth directly at the identity provider (`AUTH_ISSUER`); its access tokens (or PATs) are the bearer.
 * - `oauth_proxy`: browser OAuth through the platform's own /authorize and /oauth/token, which proxy the identity provider.
 */
export type GatewayAuthMode = 'none' | 'header' | 'ingress' | 'oidc' | 'oauth_proxy';

export function gatewayAuthMode(config: AppConfig): GatewayAuthMode {
  if (config.auth.provider === 'none') return 'none';
  if (config.mcp.oauthProxyEnabled) return 'oauth_proxy';
  if (!config.auth.issuer)
    return config.containerServiceMode && config.auth.provider === 'proxy' ? 'ingress' : 'header';
  return 'oidc';
}

export const PAT_GUIDANCE =
  'Mint a personal access token with POST /api/auth/pats while signed in as yourself, then send it as "Authorization: Bearer gp_…".';

/** What a client should do to authenticate, in one sentence per mode. */
export function credentialGuidance(mode: GatewayAuthMode): string {
  switch (mode) {
    case 'none':
      return 'Sign-in is off on this deployment: every call acts as the local admin.';
    case 'header':
      return `This deployment uses header/proxy authentication at its ingress; MCP clients use a personal access token. ${PAT_GUIDANCE}`;
    case 'ingress':
      return `This deployment is a warehouse container service: connect through its ingress and sign in with your own warehouse credentials (the ingress authenticates you), or send a personal access token. ${PAT_GUIDANCE}`;
    case 'oidc':
      return `Sign in through the identity provider (OAuth with PKCE, discovered from the protected-resource metadata), or use a personal access token. ${PAT_GUIDANCE}`;
    case 'oauth_proxy':
      return `Sign in through the platform's OAuth endpoints (/authorize, /oauth/token; PKCE S256), or use a personal access token. ${PAT_GUIDANCE}`;
  }
}
