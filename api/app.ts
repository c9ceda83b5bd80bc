import Router from '@koa/router';
import { RequestContext } from '@mikro-orm/postgresql';
import coBody from 'co-body';
import Koa from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { BadRequestError, PayloadTooLargeError, PlatformError } from '../shared/errors.js';
import type { AppDeps } from '../shared/app-deps.js';
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

/** Maps co-body's parse failures (plain errors carrying `status`) to the platform's refusals. */
function bodyParseError(err: Error, limitBytes: number): PlatformError {
  const status = (err as { status?: number }).status;
  if (status === 413)
    return new PayloadTooLargeError(`The request body is larger than ${limitBytes} bytes.`, {
      limit_bytes: limitBytes,
    });
  if (status === 415) return new PlatformError('unsupported_media_type', 'Unsupported request body encoding.');
  return new BadRequestError('The request body is not valid JSON.', { reason: 'malformed_json' });
}

const JSON_BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Parses JSON bodies (strict: an object or array at the root). Keys that would reach an object's
 * prototype (`__proto__`, and `constructor.prototype`) are removed rather than refused: they are valid
 * JSON and no schema declares them, so like any undeclared key they never reach a handler.
 */
function jsonBody(limitBytes: number): Koa.Middleware {
  return async (ctx, next) => {
    if (JSON_BODY_METHODS.has(ctx.method) && ctx.is('application/json', '+json')) {
      try {
        // `onProtoPoisoning` is co-body's (6.2) option for its JSON parser; its published types predate it.
        const options = {
          limit: limitBytes,
          strict: true,
          onProtoPoisoning: 'remove',
          returnRawBody: true,
        } as coBody.Options & { returnRawBody: true };
        const { parsed, raw } = (await coBody.json(ctx, options)) as { parsed: typeof ctx.request.body; raw: string };
        ctx.request.body = parsed;
        // The exact bytes, for routes that verify a signature over them (the service-desk webhook).
        (ctx.request as { rawBody?: string }).rawBody = raw;
      } catch (err) {
        throw bodyParseError(err as Error, limitBytes);
      }
    }
    await next();
  };
}

/** The Koa application: request id and access log, one error middleware, JSON bodies, then the routes. */
export function createApp(deps: AppDeps, routes: AnyRoute[] = allRoutes()): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true;
  deps.metrics ??= createApiMetrics();
  // Built first so the metrics can name a route whose request the body checks below refuse.
  const consoleRoutes = consoleRouter(deps);
  const router = new Router();
  mountRoutes(router, routes, deps);
  app.use(requestMetrics(deps.metrics, (method, path) => routeTemplate([consoleRoutes, router], method, path)));
  if (deps.tracing) app.use(requestTracing());
  app.use(requestIdAndAccessLog(deps.log));
  app.use(errorEnvelope(deps.log));
  app.use(jsonBody(deps.config.limits.jsonBodyBytes));
  app.use(
    koaBody({
      // JSON is parsed by jsonBody (above), which drops prototype keys instead of refusing the body.
      json: false,
      // Form bodies are parsed for every route but admitted only on `bodyKind: 'form'` routes (below).
      urlencoded: true,
      formLimit: deps.config.limits.jsonBodyBytes,
      text: false,
      multipart: false,
      jsonLimit: deps.config.limits.jsonBodyBytes,
      parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
      onError: (err) => {
        throw bodyParseError(err, deps.config.limits.jsonBodyBytes);
      },
    }),
  );
  const formRoutes = new Set(
    routes.filter((r) => r.bodyKind === 'form').map((r) => `${r.method.toUpperCase()} ${r.path}`),
  );
  // Multipart routes by method and path pattern (`:param` matches one segment).
  const multipartRoutes = routes
    .filter((r) => r.bodyKind === 'multipart')
    .map((r) => ({
      method: r.method.toUpperCase(),
      pattern: new RegExp(`^${r.path.replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`),
    }));
  const isMultipartRoute = (ctx: Koa.Context) =>
    multipartRoutes.some((r) => r.method === ctx.method && r.pattern.test(ctx.path));
  app.use((ctx, next) => {
    // A body on a JSON route must be JSON; a multipart route takes only multipart/form-data; anything
    // else is refused before any handler runs.
    const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
    if (!hasBody || !['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    if (isMultipartRoute(ctx)) {
      if (!ctx.is('multipart/form-data'))
        throw new PlatformError('unsupported_media_type', 'Send this request body as multipart/form-data.');
      return next();
    }
    // The review console's forms (`/console/…`, outside the JSON API) post urlencoded bodies.
    const formAllowed =
      (formRoutes.has(`${ctx.method} ${ctx.path}`) || ctx.path.startsWith('/console/')) &&
      ctx.is('application/x-www-form-urlencoded');
    if (!ctx.is('application/json', '+json') && !formAllowed) {
      throw new PlatformError('unsupported_media_type', 'Send the request body as application/json.');
    }
    return next();
  });
  app.use((_ctx, next) => RequestContext.create(deps.orm.em, next));
  app.use(gatewayCors(deps.config));
  // The review console: server-rendered HTML pages, not part of the JSON API or its OpenAPI document.
  app.use(consoleRoutes.routes());
  app.use(router.routes());
  app.use(methodNotAllowed);
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
