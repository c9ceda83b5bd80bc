import { z } from 'zod';
import { PAT_GUIDANCE } from '../auth-mode.js';
import { authView, callerView } from './caller.js';
import { defineMcpAction, type GatewayContext } from './registry.js';
import type { AppConfig } from '../../../shared/config.js';

/** Where a person signs in: the platform's OAuth proxy, the identity provider, or nowhere (header auth, sign-in off). */
function signInUrl(config: AppConfig, gateway: GatewayContext): string | null {
  if (config.auth.provider === 'none') return null;
  if (config.mcp.oauthProxyEnabled) return `${gateway.publicOrigin}/authorize`;
  return config.auth.issuer ?? null;
}

// v1 only: the v2 gateway leaves sign-in to the client's OAuth flow (the 401 challenge and metadata).
export const loginAction = defineMcpAction({
  name: 'login',
  versions: ['v1'],
  description: 'How to sign in to this gateway: OAuth or a personal access token, and the public sign-in URL.',
  params: z.object({}),
  handler: async ({ deps, gateway }) => {
    const auth = authView(deps.config, gateway);
    return {
      mode: auth.mode,
      sign_in_url: signInUrl(deps.config, gateway),
      resource_metadata: auth.resource_metadata,
      personal_access_tokens: { create: `POST ${gateway.publicOrigin}/api/auth/pats`, guidance: PAT_GUIDANCE },
      guidance: auth.guidance,
    };
  },
});

export const loginStatusAction = defineMcpAction({
  name: 'login_status',
  versions: ['v1'],
  description: 'Whether this call is authenticated, and as whom.',
  params: z.object({}),
  handler: async ({ principal, deps, gateway }) => ({
    authenticated: principal.credential !== 'auth_disabled',
    sign_in_required: deps.config.auth.provider !== 'none',
    caller: callerView(principal),
    mode: authView(deps.config, gateway).mode,
  }),
});

export const logoutAction = defineMcpAction({
  name: 'logout',
  versions: ['v1'],
  description: 'How to end access: the gateway keeps no session; tokens are revoked where they were issued.',
  params: z.object({}),
  handler: async ({ principal, gateway }) => ({
    session: 'none',
    message:
      'The gateway keeps no session to end. Revoke a personal access token with DELETE /api/auth/pats/{id}; identity-provider tokens end at the identity provider (sign out there) or when they expire. Then remove the credential from your MCP client.',
    ...(principal.patId
      ? { revoke_current_token: `DELETE ${gateway.publicOrigin}/api/auth/pats/${principal.patId}` }
      : {}),
  }),
});
