import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../../../shared/config.js';
import { McpOAuthAuthorizationEntity } from '../../../shared/db/entities/index.js';
import { BadRequestError, NotFoundError, PlatformError, ServiceUnavailableError } from '../../../shared/errors.js';
import { egressFor } from '../../../shared/http/trust.js';
import { SCOPES_SUPPORTED } from '../metadata.js';
import { PKCE_PATTERN, randomToken, sha256Hex, verifierMatches } from './pkce.js';
import { checkClientRedirectUri } from './redirect-uris.js';
import { discoverUpstream, postUpstreamToken } from './upstream.js';

/**
 * The gateway's OAuth proxy: MCP clients sign in through the platform, which holds the one client
 * registration at the identity provider. PKCE is kept end to end by forwarding the client's own
 * `code_challenge` upstream and, at /oauth/token, its `code_verifier` (the provider verifies it; the
 * platform checks it first too). The platform's `state` upstream is single use and lives 10 minutes;
 * the code it hands the client is single use and lives 5 minutes; the provider's tokens pass through.
 */
const STATE_TTL_MS = 10 * 60_000;
const CODE_TTL_MS = 5 * 60_000;

export function requireProxyEnabled(config: AppConfig): void {
  if (!config.mcp.oauthProxyEnabled) {
    throw new NotFoundError('The OAuth proxy is not enabled on this deployment (PLATFORM_OAUTH_PROXY_ENABLED).', {
      reason: 'oauth_proxy_disabled',
    });
  }
}

export interface AuthorizeRequest {
  response_type: string;
  client_id: string;
  redirect_uri: string;
  state?: string | undefined;
  code_challenge: string;
  code_challenge_method: string;
  scope?: string | undefined;
}

/** Validates the client's request (refusals never redirect), records it, and returns the upstream authorization URL. */
export async function startAuthorization(
  em: EntityManager,
  config: AppConfig,
  origin: string,
  req: AuthorizeRequest,
  now = new Date(),
): Promise<string> {
  const redirect = checkClientRedirectUri(req.redirect_uri, config.auth.mcpClientRedirectUris);
  if (!redirect.ok)
    throw new BadRequestError(redirect.message, {
      oauth_error: 'invalid_request',
      reason: `redirect_uri_${redirect.reason}`,
    });
  if (req.response_type !== 'code')
    throw new BadRequestError('response_type must be "code".', { oauth_error: 'unsupported_response_type' });
  if (req.code_challenge_method !== 'S256')
    throw new BadRequestError('code_challenge_method must be S256 (PKCE is required).', {
      oauth_error: 'invalid_request',
    });
  if (!PKCE_PATTERN.test(req.code_challenge))
    throw new BadRequestError('code_challenge is not a valid S256 challenge.', { oauth_error: 'invalid_request' });
  const upstream = await discoverUpstream(config.auth.issuer!, egressFor(config, 'operator'));
  const state = randomToken();
  const callbackUri = `${origin}/oauth/callback`;
  const scope = req.scope?.trim() || SCOPES_SUPPORTED.join(' ');
  // Sign-ins abandoned long ago are of no use to anyone.
  await em.nativeDelete(McpOAuthAuthorizationEntity, { expiresAt: { $lt: new Date(now.getTime() - 24 * 3_600_000) } });
  await em.insert(McpOAuthAuthorizationEntity, {
    id: state,
    clientId: req.client_id,
    redirectUri: req.redirect_uri,
    clientState: req.state ?? null,
    codeChallenge: req.code_challenge,
    scope,
    callbackUri,
    createdAt: now,
    expiresAt: new Date(now.getTime() + STATE_TTL_MS),
    callbackAt: null,
    upstreamCode: null,
    codeHash: null,
    codeExpiresAt: null,
    redeemedAt: null,
  });
  const url = new URL(upstream.authorization_endpoint);
  const params = {
    response_type: 'code',
    client_id: config.auth.clientId!,
    redirect_uri: callbackUri,
    state,
    scope,
    code_challenge: req.code_challenge,
    code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/** Consumes the platform's `state` once and returns where to send the browser: the client's callback with a platform code (or the provider's error). */
export async function completeCallback(
  em: EntityManager,
  origin: string,
  query: {
    state?: string | undefined;
    code?: string | undefined;
    error?: string | undefined;
    error_description?: string | undefined;
  },
  now = new Date(),
): Promise<string> {
  if (!query.state) throw new BadRequestError('The callback carries no state.', { reason: 'missing_state' });
  const row = await em.findOne(McpOAuthAuthorizationEntity, { id: query.state });
  if (!row) throw new BadRequestError('The callback state is not recognised.', { reason: 'unknown_state' });
  if (row.expiresAt <= now)
    throw new PlatformError('gone', 'This sign-in took longer than 10 minutes; start again from your client.', {
      reason: 'state_expired',
    });
  const claimed = await em.nativeUpdate(
    McpOAuthAuthorizationEntity,
    { id: row.id, callbackAt: null },
    { callbackAt: now },
  );
  if (claimed !== 1)
    throw new PlatformError('gone', 'This sign-in has already been completed; start again from your client.', {
      reason: 'state_used',
    });
  const target = new URL(row.redirectUri);
  const reply: Record<string, string> = { iss: origin };
  if (row.clientState !== null) reply.state = row.clientState;
  if (query.error || !query.code) {
    reply.error = query.error ?? 'server_error';
    if (query.error_description) reply.error_description = query.error_description;
  } else {
    const code = randomToken();
    await em.nativeUpdate(
      McpOAuthAuthorizationEntity,
      { id: row.id },
      { upstreamCode: query.code, codeHash: sha256Hex(code), codeExpiresAt: new Date(now.getTime() + CODE_TTL_MS) },
    );
    reply.code = code;
  }
  for (const [k, v] of Object.entries(reply)) target.searchParams.set(k, v);
  return target.toString();
}

/** An RFC 6749 section 5.2 refusal at the token endpoint. */
export class OAuthTokenError extends Error {
  constructor(
    readonly oauthError: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

export interface TokenRequest {
  grant_type?: string | undefined;
  code?: string | undefined;
  redirect_uri?: string | undefined;
  client_id?: string | undefined;
  code_verifier?: string | undefined;
  refresh_token?: string | undefined;
  scope?: string | undefined;
}

/** Redeems a platform code (once) or passes a refresh through, and answers the provider's tokens. */
export async function exchangeToken(
  em: EntityManager,
  config: AppConfig,
  req: TokenRequest,
  now = new Date(),
): Promise<Record<string, unknown>> {
  const upstream = await discoverUpstream(config.auth.issuer!, egressFor(config, 'operator'));
  const client = {
    client_id: config.auth.clientId!,
    ...(config.auth.clientSecret ? { client_secret: config.auth.clientSecret } : {}),
  };
  let form: Record<string, string>;
  if (req.grant_type === 'authorization_code') {
    if (!req.code || !req.code_verifier || !req.redirect_uri || !req.client_id) {
      throw new OAuthTokenError('invalid_request', 'code, code_verifier, redirect_uri and client_id are required.');
    }
    const row = await em.findOne(McpOAuthAuthorizationEntity, { codeHash: sha256Hex(req.code) });
    // Consumed on the first attempt whatever its outcome, so a code can never be tried twice.
    const consumed = row
      ? await em.nativeUpdate(McpOAuthAuthorizationEntity, { id: row.id, redeemedAt: null }, { redeemedAt: now })
      : 0;
    if (!row || consumed !== 1 || !row.codeExpiresAt || row.codeExpiresAt <= now)
      throw new OAuthTokenError('invalid_grant', 'The code is unknown, expired or already used.');
    if (row.clientId !== req.client_id || row.redirectUri !== req.redirect_uri)
      throw new OAuthTokenError('invalid_grant', 'client_id or redirect_uri differ from the authorization request.');
    if (!verifierMatches(req.code_verifier, row.codeChallenge))
      throw new OAuthTokenError(
        'invalid_grant',
        'PKCE verification failed: code_verifier does not match code_challenge.',
      );
    form = {
      grant_type: 'authorization_code',
      code: row.upstreamCode!,
      redirect_uri: row.callbackUri,
      code_verifier: req.code_verifier,
      ...client,
    };
  } else if (req.grant_type === 'refresh_token') {
    if (!req.refresh_token) throw new OAuthTokenError('invalid_request', 'refresh_token is required.');
    form = {
      grant_type: 'refresh_token',
      refresh_token: req.refresh_token,
      ...(req.scope ? { scope: req.scope } : {}),
      ...client,
    };
  } else {
    throw new OAuthTokenError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
  }
  const answer = await postUpstreamToken(upstream.token_endpoint, form, egressFor(config, 'operator'));
  if (answer.status >= 500)
    throw new ServiceUnavailableError(
      'identity_provider',
      "The identity provider's token endpoint failed; retry shortly.",
    );
  if (answer.status !== 200 || typeof answer.body.access_token !== 'string') {
    const error = typeof answer.body.error === 'string' ? answer.body.error : 'invalid_grant';
    const description =
      typeof answer.body.error_description === 'string'
        ? answer.body.error_description
        : 'The identity provider refused the grant.';
    throw new OAuthTokenError(error, description);
  }
  const keep = ['access_token', 'token_type', 'expires_in', 'refresh_token', 'id_token', 'scope'];
  return Object.fromEntries(Object.entries(answer.body).filter(([k]) => keep.includes(k)));
}
