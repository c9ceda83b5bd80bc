import type { IncomingMessage } from 'node:http';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type Koa from 'koa';
import type { Principal } from '../../shared/auth/principal.js';
import { AuthenticationError, PlatformError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { authenticate } from '../auth/authenticate.js';
import { INGRESS_USER_HEADER, ingressPrincipal } from '../auth/ingress.js';
import { authenticationRequired } from '../auth/refusals.js';
import type { AppDeps } from '../../shared/app-deps.js';
import type { GatewayVersion } from './actions/registry.js';
import { credentialGuidance, gatewayAuthMode } from './auth-mode.js';
import { originRefused } from './cors.js';
import { originAllowed, publicOrigin, resourceMetadataUrl } from './public-url.js';
import { createPlatformServer } from './server.js';
import { mcpActionCatalog } from './actions/index.js';

export interface GatewayRequest {
  koa: Koa.Context;
  deps: AppDeps;
  em: EntityManager;
  requestId: string;
  log: Logger;
}

/** Who called the gateway: the principal and the bearer token it presented (empty for other credentials). */
export interface GatewayCaller {
  principal: Principal;
  token: string;
}

/** Refuses a browser Origin that is neither the public origin nor loopback (403, DNS-rebinding guard). */
export function checkOrigin(ctx: Koa.Context, deps: AppDeps): void {
  const origin = ctx.get('origin');
  if (origin && !originAllowed(origin, deps.config)) throw originRefused(origin);
}

/**
 * Authenticates like the rest of the API (IdP bearer tokens, `gp_` PATs, the local admin with auth
 * off), but a refusal carries the MCP challenge: `WWW-Authenticate: Bearer resource_metadata="…"`,
 * plus `error="invalid_token"` when a credential was presented and did not hold.
 */
export async function authenticateGateway(
  req: Pick<GatewayRequest, 'koa' | 'deps' | 'em'>,
  mountPath: string,
): Promise<GatewayCaller> {
  const { koa: ctx, deps, em } = req;
  const metadata = resourceMetadataUrl(publicOrigin(ctx, deps.config), mountPath);
  const authorization = ctx.get('authorization') || undefined;
  const ingressLogin = gatewayAuthMode(deps.config) === 'ingress' ? ctx.get(INGRESS_USER_HEADER) : '';
  let principal: Principal | null;
  try {
    // Behind a container-service ingress the login it vouches for is the caller (the client's warehouse
    // credential went to the ingress); a request without it may still bring a PAT.
    principal = ingressLogin
      ? await ingressPrincipal(em, deps.config, ingressLogin)
      : await authenticate(
          { authorization, serviceToken: ctx.get('x-platform-service-token') || undefined },
          { config: deps.config, verifier: deps.verifier, em },
        );
  } catch (err) {
    if (err instanceof AuthenticationError)
      err.headers['WWW-Authenticate'] = `Bearer resource_metadata="${metadata}", error="invalid_token"`;
    throw err;
  }
  if (!principal) {
    const error = authenticationRequired(
      deps.config,
      `Authentication required. ${credentialGuidance(gatewayAuthMode(deps.config))}`,
    );
    error.headers['WWW-Authenticate'] = `Bearer resource_metadata="${metadata}"`;
    throw error;
  }
  const token = /^Bearer\s+(\S+)/i.exec(authorization ?? '')?.[1] ?? '';
  return { principal, token };
}

/**
 * The POST route's guard, before its body is read: the browser origin, then the credential (`authenticateGateway`);
 * the caller is left in `ctx.state.gatewayCaller` for `handleGatewayPost`.
 */
export async function guardGatewayPost(ctx: Koa.Context, deps: AppDeps, em: EntityManager, mountPath: string) {
  checkOrigin(ctx, deps);
  const caller = await authenticateGateway({ koa: ctx, deps, em }, mountPath);
  ctx.state.gatewayCaller = caller;
  ctx.state.principal = caller.principal; // named in the access log, as on other routes
}

/**
 * POST on a gateway path, once `guardGatewayPost` passed: a new server and transport for this one request
 * (stateless Streamable HTTP, JSON responses).
 */
export async function handleGatewayPost(
  req: GatewayRequest,
  mount: { path: string; version: GatewayVersion },
): Promise<void> {
  const { koa: ctx, deps } = req;
  const caller = ctx.state.gatewayCaller as GatewayCaller | undefined;
  if (!caller) throw new Error('handleGatewayPost runs after guardGatewayPost');
  const { principal, token } = caller;
  const origin = publicOrigin(ctx, deps.config);
  const server = createPlatformServer({
    deps,
    em: req.em,
    requestId: req.requestId,
    log: req.log,
    gateway: { version: mount.version, publicOrigin: origin, endpoint: `${origin}${mount.path}/` },
    catalog: mcpActionCatalog,
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const authInfo: AuthInfo = { token, clientId: principal.id, scopes: [], extra: { principal } };
  ctx.respond = false;
  (ctx.req as IncomingMessage & { auth?: AuthInfo }).auth = authInfo;
  ctx.res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(ctx.req, ctx.res, (ctx.request as { body?: unknown }).body);
}

/** GET and DELETE: stateless mode has no standalone SSE stream and no session to end. */
export function refuseGatewayMethod(ctx: Koa.Context, deps: AppDeps): never {
  checkOrigin(ctx, deps);
  const error = new PlatformError(
    'method_not_allowed',
    'This gateway is stateless: send MCP messages with POST (no SSE stream to open, no session to delete).',
    {
      allowed: ['POST'],
    },
  );
  error.headers.Allow = 'POST';
  throw error;
}
