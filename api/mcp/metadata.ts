import type { AppConfig } from '../../shared/config.js';
import { NotFoundError } from '../../shared/errors.js';
import { egressFor } from '../../shared/http/trust.js';
import { credentialGuidance, gatewayAuthMode } from './auth-mode.js';
import { discoverUpstream } from './oauth/upstream.js';

/** Scopes the gateway asks for (OpenID sign-in plus refresh tokens); access is decided by roles, not scopes. */
export const SCOPES_SUPPORTED = ['openid', 'profile', 'email', 'offline_access'];

/**
 * RFC 9728 protected-resource metadata for the origin (`mountPath` '') or one mounted gateway path.
 * `authorization_servers` is the platform itself with the OAuth proxy on, else `AUTH_ISSUER`; with
 * header/proxy auth or sign-in off there is none, so the field is omitted and `platform_auth_mode` /
 * `platform_auth_guidance` (extension fields) tell clients to use a personal access token.
 */
export function protectedResourceMetadata(config: AppConfig, origin: string, mountPath: string) {
  const mode = gatewayAuthMode(config);
  const servers = mode === 'oauth_proxy' ? [origin] : mode === 'oidc' ? [config.auth.issuer!] : [];
  return {
    resource: `${origin}${mountPath}`,
    ...(servers.length ? { authorization_servers: servers } : {}),
    scopes_supported: servers.length ? SCOPES_SUPPORTED : [],
    bearer_methods_supported: ['header'],
    resource_name: 'Data-agent platform MCP gateway',
    resource_documentation: `${origin}/docs`,
    platform_auth_mode: mode,
    platform_auth_guidance: credentialGuidance(mode),
  };
}

/**
 * RFC 8414 authorization-server metadata. OAuth proxy on: the platform (issuer = the public origin,
 * /authorize, /oauth/token, public clients with PKCE S256). Otherwise a mirror of the upstream
 * provider's endpoints (issuer = AUTH_ISSUER; clients normally read the provider's own document).
 * Without an issuer (header/proxy auth, sign-in off) there is no authorization server: 404.
 */
export async function authorizationServerMetadata(config: AppConfig, origin: string) {
  const mode = gatewayAuthMode(config);
  const common = {
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: SCOPES_SUPPORTED,
  };
  if (mode === 'oauth_proxy') {
    return {
      issuer: origin,
      authorization_endpoint: `${origin}/authorize`,
      token_endpoint: `${origin}/oauth/token`,
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
      ...common,
    };
  }
  if (mode === 'oidc') {
    const upstream = await discoverUpstream(config.auth.issuer!, egressFor(config, 'operator'));
    return {
      issuer: upstream.issuer,
      authorization_endpoint: upstream.authorization_endpoint,
      token_endpoint: upstream.token_endpoint,
      grant_types_supported: upstream.grant_types_supported ?? ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: upstream.token_endpoint_auth_methods_supported ?? ['client_secret_basic'],
      ...(upstream.jwks_uri ? { jwks_uri: upstream.jwks_uri } : {}),
      ...(upstream.registration_endpoint ? { registration_endpoint: upstream.registration_endpoint } : {}),
      ...(upstream.revocation_endpoint ? { revocation_endpoint: upstream.revocation_endpoint } : {}),
      ...common,
      scopes_supported: upstream.scopes_supported ?? SCOPES_SUPPORTED,
    };
  }
  throw new NotFoundError(
    `This deployment has no OAuth authorization server for MCP clients. ${credentialGuidance(mode)}`,
    {
      reason: 'no_authorization_server',
      platform_auth_mode: mode,
    },
  );
}
