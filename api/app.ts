import Router from '@koa/router';
import { RequestContext } from '@mikro-orm/postgresql';
import Koa from 'koa';
import { PlatformError } from '../shared/errors.js';
import type { AppDeps } from '../shared/app-deps.js';
import { bodyReader, type ReadBody } from './http/body.js';
import { mountRoutes } from './http/mount.js';
import { consoleRouter } from './console/router.js';
import { gatewayCors } from './mcp/cors.js';
import type { AnyRoute } from './http/route.js';
import { errorEnvelope } from './middleware/errors.js';
import { requestMetrics } from './middleware/metrics.js';
import { requestTracing } from './middleware/tracing.js';
import { requestIdAndAccessLog } from './middleware/request-id.js';
import { createApiMetrics } from '../shared/observability/metrics.js';
import { allRoutes } from './routes/index.js';

/**
 * The Koa application: request id and access log, one error middleware, then the routes. A body is read only
 * by a route, after its guard (`mountRoutes`): a caller that may not call a route gets its 401 or 403 whatever
 * it sent, and no body is read (or parsed up to the size limit) for a path no route answers or a caller the
 * guard refuses.
 */
export function createApp(deps: AppDeps, routes: AnyRoute[] = allRoutes()): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true;
  deps.metrics ??= createApiMetrics();
  const readBody: ReadBody = bodyReader(deps.config.limits.jsonBodyBytes);
  // Built first so the metrics can name a route whose request the body checks refuse.
  const consoleRoutes = consoleRouter(deps, readBody);
  const router = new Router();
  mountRoutes(router, routes, deps, readBody);
  app.use(requestMetrics(deps.metrics, (method, path) => routeTemplate([consoleRoutes, router], method, path)));
  if (deps.tracing) app.use(requestTracing());
  app.use(requestIdAndAccessLog(deps.log));
  app.use(errorEnvelope(deps.log));
  app.use((_ctx, next) => RequestContext.create(deps.orm.em, next));
  app.use(gatewayCors(deps.config));
  // The review console: server-rendered HTML pages, not part of the JSON API or its OpenAPI document (a page reads
  // its form once the session is known, before the form's CSRF token is checked).
  app.use(consoleRoutes.routes());
  app.use(router.routes());
  app.use(methodNotAllowed);
  app.use(trailingSlashRedirect([consoleRoutes, router]));
  return app;
}

/** The template of the route `method path` reaches (as Koa's router picks it: the last matching layer), if any. */
function routeTemplate(routers: Router[], method: string, path: string): string | undefined {
  for (const router of routers) {
    const layer = router
      .match(path, method)
      .pathAndMethod.toReversed()
      .find((l) => l.methods.length > 0);
    if (layer) return String(layer.path);
  }
  return undefined;
}

/**
 * A path no route answers that one does with a trailing slash (the spec's `/api/blueprints/`, asked as
 * `/api/blueprints`): 307 to it, query kept, so the method and body are sent again unchanged.
 */
function trailingSlashRedirect(routers: Router[]): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.status !== 404 || ctx.body != null || ctx.path.endsWith('/')) return;
    // Never a Location a browser could read as another host (`//host`, `/\host`), whatever routes come.
    if (ctx.path.startsWith('//') || ctx.path.includes('\\')) return;
    // A path some route declares (with another method) is the 405's, not this.
    if ((ctx as { matched?: Array<{ methods: string[] }> }).matched?.some((layer) => layer.methods.length)) return;
    const slashed = `${ctx.path}/`;
    if (!routeTemplate(routers, ctx.method, slashed)) return;
    ctx.status = 307;
    ctx.redirect(`${slashed}${ctx.search}`);
  };
}

/**
 * A declared path asked with a method it does not declare (including ones no route uses, such as
 * TRACE): 405 with `Allow`, in the error envelope; OPTIONS answers 204 with `Allow`.
 */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

const methodNotAllowed: Koa.Middleware = async (ctx, next) => {
  await next();
  const matched = (ctx as { matched?: Array<{ methods: string[] }> }).matched;
  if (!matched?.length || ctx.status !== 404 || ctx.body != null) return;
  const declared = new Set(matched.flatMap((layer) => layer.methods));
  const allowed = METHOD_ORDER.filter((m) => declared.has(m));
  if (allowed.length === 0 || allowed.includes(ctx.method)) return;
  const allow = [...allowed, 'OPTIONS'].join(', ');
  if (ctx.method === 'OPTIONS') {
    ctx.set('Allow', allow);
    ctx.status = 204;
    return;
  }
  const error = new PlatformError(
    'method_not_allowed',
    `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}.`,
    { allowed: allow.split(', ') },
  );
  error.headers.Allow = allow;
  throw error;
};
