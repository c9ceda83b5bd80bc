import type Koa from 'koa';
import { isDatabaseUnavailable } from '../../shared/db/errors.js';
import { NotFoundError, PlatformError, ServiceUnavailableError } from '../../shared/errors.js';
import { describeError, type Logger } from '../../shared/log.js';
import { isTemporalUnavailable } from '../../shared/temporal/errors.js';

/** Turns any thrown value into a PlatformError a caller may see; unknown errors become a generic 500. */
export function toPlatformError(err: unknown): { error: PlatformError; unexpected: boolean } {
  if (err instanceof PlatformError) return { error: err, unexpected: false };
  if (isTemporalUnavailable(err))
    return {
      error: new ServiceUnavailableError('temporal', 'The workflow service is unavailable; retry shortly.'),
      unexpected: false,
    };
  if (isDatabaseUnavailable(err))
    return {
      error: new ServiceUnavailableError('database', 'The database is unavailable; retry shortly.'),
      unexpected: false,
    };
  return {
    error: new PlatformError('internal', 'Internal error; the request id identifies it in the logs.'),
    unexpected: true,
  };
}

/** The one error middleware (top of the stack): every refusal leaves as the spec's envelope. */
export function errorEnvelope(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      // Nothing matched and nothing answered: an unknown route.
      // (A handler that answered on the raw response, like the MCP transport, set respond = false.)
      if (ctx.status === 404 && ctx.body == null && ctx.respond !== false)
        throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}.`);
    } catch (err) {
      const { error, unexpected } = toPlatformError(err);
      const requestLog = (ctx.state.log as Logger | undefined) ?? log;
      if (unexpected) requestLog.error('unhandled error', describeError(err));
      else if (error.status >= 500)
        requestLog.warn('dependency failure', { error_type: error.errorType, ...describeError(err) });
      // A refusal relaying a dependency's answer keeps that text out of the response: it is logged here, under the error_id the response names.
      else if ('logDetail' in error)
        requestLog.info('refusal detail', { error_type: error.errorType, ...describeError(err) });
      ctx.status = error.status;
      ctx.type = 'application/json';
      if (ctx.state.refusalBody === 'oauth' && error.status === 400) {
        // An OAuth token endpoint's clients parse RFC 6749 section 5.2 bodies: `error` is the OAuth code.
        ctx.body = {
          error: 'invalid_request',
          error_description: error.message,
          error_type: error.errorType,
          request_id: ctx.state.requestId as string,
        };
        return;
      }
      ctx.body = {
        error: error.message,
        error_type: error.errorType,
        request_id: ctx.state.requestId as string,
        ...(error.payload ? { payload: error.payload } : {}),
      };
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      // A route with its own challenge (the MCP gateway's resource_metadata) keeps it.
      if (error.status === 401 && !ctx.response.get('WWW-Authenticate')) ctx.set('WWW-Authenticate', 'Bearer');
    }
  };
}
