import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import type Koa from 'koa';
import type { AnyRoute } from '../http/route.js';

/**
 * One SERVER span per request, continuing the caller's W3C `traceparent` when given; the rest of
 * the request (access log, Temporal client calls) runs inside it, so logs carry its `trace_id` and
 * workflow starts and Updates become its children. Mounted only when tracing is on.
 */
export function requestTracing(): Koa.Middleware {
  const tracer = trace.getTracer('platform-api');
  return async (ctx, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const span = tracer.startSpan(
      ctx.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path } },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route =
        (ctx.state.route as AnyRoute | undefined)?.path ??
        (ctx as { _matchedRoute?: string | RegExp })._matchedRoute?.toString();
      if (route) {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', ctx.status);
      if (typeof ctx.state.requestId === 'string') span.setAttribute('platform.request_id', ctx.state.requestId);
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
