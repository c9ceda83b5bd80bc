import { z } from 'zod';
import { BadRequestError } from '../../shared/errors.js';
import {
  completeCallback,
  exchangeToken,
  OAuthTokenError,
  requireProxyEnabled,
  startAuthorization,
} from '../mcp/oauth/proxy.js';
import { publicOrigin } from '../mcp/public-url.js';
import { defineRoute, errorResponse, type AnyRoute } from '../http/route.js';

const DISABLED =
  'Only with PLATFORM_OAUTH_PROXY_ENABLED; otherwise 404 `not_found` (payload.reason oauth_proxy_disabled).';
const str = (description: string) => z.string().max(4096).describe(description);

const TokenResponse = z.object({
  access_token: z.string(),
  token_type: z.string(),
  expires_in: z.number().optional(),
  refresh_token: z.string().optional(),
  id_token: z.string().optional(),
  scope: z.string().optional(),
});
const OAuthError = z.object({
  error: z.string().describe('RFC 6749 error code, e.g. invalid_grant'),
  error_description: z.string(),
  error_type: z.string(),
  request_id: z.string(),
});

const AuthorizeQuery = z.object({
  response_type: str('Must be `code` (required)'),
  client_id: str("The client's identifier (required)"),
  redirect_uri: str("The client's callback (required)"),
  state: str('Returned unchanged to the client').optional(),
  code_challenge: str('PKCE S256 challenge (required)'),
  code_challenge_method: str('Must be `S256` (required)'),
  scope: str('Space-separated; default `openid profile email offline_access`').optional(),
  resource: str('RFC 8707 resource indicator; accepted, the token audience is the platform’s').optional(),
});

export const oauthProxyRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/authorize',
    operationId: 'oauthAuthorize',
    summary: 'OAuth proxy: start a sign-in (redirects to the identity provider)',
    description: `${DISABLED} PKCE S256 is required. The redirect_uri must be a loopback callback (any port, http allowed), a built-in client's fixed callback (Claude, ChatGPT, VS Code, Cursor) or listed verbatim in AUTH_MCP_CLIENT_REDIRECT_URIS; unsafe schemes are refused. Every refusal is a 400 envelope (payload.oauth_error, payload.reason) and never redirects. No registration endpoint: client_id is whatever the client calls itself and is bound to the code. The client's code_challenge is forwarded upstream with the platform's own single-use state (10 minutes) and callback ${'`<public origin>/oauth/callback`'}. Per-client consent is left to the identity provider's own consent screen.`,
    tags: ['mcp'],
    access: { kind: 'public' },
    // Declared optional so a disabled proxy answers 404 before validation; required fields are checked in the handler.
    query: AuthorizeQuery.partial(),
    responses: {
      302: { description: 'Redirect to the identity provider' },
      400: errorResponse('Refused request (not redirected)'),
      404: errorResponse('OAuth proxy disabled'),
    },
    handler: async ({ koa, deps, em, query }) => {
      requireProxyEnabled(deps.config);
      const parsed = AuthorizeQuery.safeParse(query);
      if (!parsed.success) {
        const fields = parsed.error.issues.map((i) => ({
          field: ['query', ...i.path.map(String)].join('.'),
          message: i.message,
          code: i.code,
        }));
        throw new BadRequestError(
          `Invalid authorization request: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`,
          { oauth_error: 'invalid_request', fields },
        );
      }
      koa.redirect(await startAuthorization(em, deps.config, publicOrigin(koa, deps.config), parsed.data));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/oauth/callback',
    operationId: 'oauthCallback',
    summary: 'OAuth proxy: the single callback registered with the identity provider',
    description: `${DISABLED} Consumes the platform's state once (unknown 400, used or older than 10 minutes 410 \`gone\`), exchanges nothing yet, and redirects to the client's redirect_uri with a single-use platform code (5 minutes), the client's state and \`iss\` (the public origin); a provider error is passed to the client as \`error\`.`,
    tags: ['mcp'],
    access: { kind: 'public' },
    query: z.object({
      state: str('The platform state').optional(),
      code: str("The provider's code").optional(),
      error: str("The provider's error").optional(),
      error_description: str("The provider's error description").optional(),
    }),
    responses: {
      302: { description: "Redirect to the client's callback" },
      400: errorResponse('Missing or unknown state'),
      404: errorResponse('OAuth proxy disabled'),
      410: errorResponse('State already used or expired'),
    },
    handler: async ({ koa, deps, em, query }) => {
      requireProxyEnabled(deps.config);
      koa.redirect(await completeCallback(em, publicOrigin(koa, deps.config), query));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/oauth/token',
    operationId: 'oauthToken',
    ownShape: 'Hosted gateway (MCP): the OAuth proxy token endpoint answers an RFC 6749 token response',
    summary: "OAuth proxy: redeem a platform code or refresh, answering the identity provider's tokens",
    description: `${DISABLED} Form-encoded. authorization_code: the platform code is single use (consumed by the first attempt), must match client_id and redirect_uri, and code_verifier must match the challenge (checked here, then by the provider, which receives the verifier with the platform's client credentials AUTH_CLIENT_ID / AUTH_CLIENT_SECRET as client_secret_post). refresh_token passes through. The access token's audience is the platform's, so it is a Bearer on /mcp. Refusals use the RFC 6749 body (\`error\` is the OAuth code) plus error_type and request_id.`,
    tags: ['mcp'],
    access: { kind: 'public' },
    bodyKind: 'form',
    refusalBody: 'oauth',
    body: z.object({
      grant_type: str('authorization_code or refresh_token').optional(),
      code: str('Platform code from the callback').optional(),
      redirect_uri: str('Same as in /authorize').optional(),
      client_id: str('Same as in /authorize').optional(),
      code_verifier: str('PKCE verifier').optional(),
      refresh_token: str('For grant_type refresh_token').optional(),
      scope: str('Optional narrower scope on refresh').optional(),
    }),
    responses: {
      200: { description: "The provider's tokens", schema: TokenResponse },
      400: { description: 'OAuth refusal (RFC 6749 section 5.2)', schema: OAuthError },
      404: errorResponse('OAuth proxy disabled'),
    },
    handler: async ({ koa, deps, em, body, requestId }) => {
      requireProxyEnabled(deps.config);
      koa.set('Cache-Control', 'no-store');
      koa.set('Pragma', 'no-cache');
      try {
        return await exchangeToken(em, deps.config, body);
      } catch (err) {
        // Token clients parse RFC 6749 errors, where `error` is the code; everything else stays an envelope.
        if (!(err instanceof OAuthTokenError)) throw err;
        koa.status = err.status;
        koa.body = {
          error: err.oauthError,
          error_description: err.description,
          error_type: 'bad_request',
          request_id: requestId,
        };
      }
    },
  }),
];
