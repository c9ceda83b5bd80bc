import type Koa from 'koa';
import type { AppConfig } from '../../shared/config.js';
import { ForbiddenError } from '../../shared/errors.js';
import { isMcpPath, originAllowed } from './public-url.js';

const MCP_ALLOW_HEADERS = 'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID';
const MCP_EXPOSE_HEADERS = 'Mcp-Session-Id, WWW-Authenticate, X-Request-Id';

/**
 * CORS for the gateway: the well-known documents are readable from any origin (OAuth discovery runs
 * in browsers too); `/mcp*` only from an allowed Origin (see `originAllowed`), which also answers the
 * preflight. The Origin refusal itself happens in the gateway handler, so it is one rule for both.
 */
export function gatewayCors(config: AppConfig): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path.startsWith('/.well-known/')) {
      ctx.set('Access-Control-Allow-Origin', '*');
      if (ctx.method === 'OPTIONS') {
        ctx.set('Access-Control-Allow-Methods', 'GET, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', 'Mcp-Protocol-Version, Content-Type');
        ctx.status = 204;
        return;
      }
    } else if (isMcpPath(ctx.path)) {
      const origin = ctx.get('origin');
      if (origin && originAllowed(origin, config)) {
        ctx.set('Access-Control-Allow-Origin', origin);
        ctx.set('Access-Control-Expose-Headers', MCP_EXPOSE_HEADERS);
        ctx.vary('Origin');
      }
      if (ctx.method === 'OPTIONS') {
        if (origin && !originAllowed(origin, config)) throw originRefused(origin);
        ctx.set('Access-Control-Allow-Methods', 'POST, GET, DELETE, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', MCP_ALLOW_HEADERS);
        ctx.set('Access-Control-Max-Age', '600');
        ctx.status = 204;
        return;
      }
    }
    await next();
  };
}

export function originRefused(origin: string): ForbiddenError {
  return new ForbiddenError(
    `Origin "${origin}" may not call this gateway: only the platform's public origin (PLATFORM_MCP_PUBLIC_URL) and loopback origins may. Ask an administrator to set the public URL if your client runs there.`,
    { reason: 'origin_not_allowed', origin },
  );
}
