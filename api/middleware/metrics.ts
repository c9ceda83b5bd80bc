import type Koa from 'koa';
import type { AnyRoute } from '../http/route.js';
import type { ApiMetrics } from '../../shared/observability/metrics.js';

/**
 * Counts every answered request and its duration by method, route TEMPLATE (`/api/agents/:id`, never
 * the raw path) and final status. Outermost middleware, so refusals and 404s are counted as answered.
 * A request refused before its handler ran (its body too large, not JSON, malformed; its caller refused)
 * is labelled by the route `templateOf` finds for it; only a path no route declares is `unmatched`.
 */
export function requestMetrics(
  metrics: ApiMetrics,
  templateOf: (method: string, path: string) => string | undefined,
): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const route =
        (ctx.state.route as AnyRoute | undefined)?.path ??
        (ctx as { _matchedRoute?: string | RegExp })._matchedRoute?.toString() ??
        templateOf(ctx.method, ctx.path) ??
        'unmatched';
      metrics.observeRequest(ctx.method, route, ctx.status, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}
