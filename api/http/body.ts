import type { IncomingMessage, ServerResponse } from 'node:http';
import coBody from 'co-body';
import type Koa from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { BadRequestError, PayloadTooLargeError, PlatformError } from '../../shared/errors.js';
import { totalFileBytes } from './multipart.js';
import type { AnyRoute } from './route.js';

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

/** Whether the request carries a body (a positive Content-Length, or chunked). */
export function hasRequestBody(ctx: Koa.Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
}

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

/**
 * Reads a request's body, once its route is known and its caller has passed the route's guard: JSON (`jsonBody`),
 * or a urlencoded form where the route takes one (`form` routes and the review console's pages); a multipart
 * route's upload is read by the route itself. A body on a JSON route must be JSON, and a multipart route takes
 * only multipart/form-data: anything else is refused (415) before any handler runs. `bodyKind` null: a console
 * page (forms or JSON); `none`: a route that declares no body (none is read).
 */
export function bodyReader(limitBytes: number) {
  const json = jsonBody(limitBytes);
  const forms = koaBody({
    // JSON is parsed by jsonBody, which drops prototype keys instead of refusing the body.
    json: false,
    urlencoded: true,
    formLimit: limitBytes,
    text: false,
    multipart: false,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    onError: (err) => {
      throw bodyParseError(err, limitBytes);
    },
  });
  const noop = () => Promise.resolve();
  return async (ctx: Koa.Context, bodyKind: AnyRoute['bodyKind'] | null | 'none'): Promise<void> => {
    if (bodyKind === 'none') return; // a route that declares no body ignores one sent (its 413 and 415 are not documented)
    if (hasRequestBody(ctx) && ['POST', 'PUT', 'PATCH'].includes(ctx.method)) {
      if (bodyKind === 'multipart') {
        if (!ctx.is('multipart/form-data'))
          throw new PlatformError('unsupported_media_type', 'Send this request body as multipart/form-data.');
        return;
      }
      const formAllowed = (bodyKind === 'form' || bodyKind === null) && ctx.is('application/x-www-form-urlencoded');
      if (!ctx.is('application/json', '+json') && !formAllowed)
        throw new PlatformError('unsupported_media_type', 'Send the request body as application/json.');
    }
    if (bodyKind === 'multipart') return;
    await json(ctx, noop);
    if (bodyKind === 'form' || bodyKind === null) await forms(ctx, noop);
  };
}

/** Reads the body of the request being answered (`bodyReader`): `bodyKind` null for the review console's pages. */
export type ReadBody = (ctx: Koa.Context, bodyKind: AnyRoute['bodyKind'] | null | 'none') => Promise<void>;

/**
 * The largest request body any of `routes` accepts: the JSON limit, or a multipart route's files with room for its
 * fields (the JSON limit again).
 */
export function largestAcceptedBody(routes: readonly AnyRoute[], jsonBodyBytes: number): number {
  let largest = jsonBodyBytes;
  for (const { multipart } of routes)
    if (multipart) largest = Math.max(largest, totalFileBytes(multipart) + jsonBodyBytes);
  return largest;
}

/**
 * A request answered before its body was read whole (a caller the guard refused, a body over the size limit, a
 * route that reads none): Node reads and discards the rest so that the client gets the answer and the connection
 * can carry the next request, for as long as the client goes on sending (within the server's `requestTimeout`,
 * 300 s from the request's start). This bounds it in bytes too: once `bytes` more than had arrived at the answer
 * have arrived, the connection is closed (the answer was written before; a client still sending gets a reset).
 * With `bytes` the largest body any route accepts (`largestAcceptedBody`), a client refused part way through an
 * upload of a size the server takes still gets its answer as before; only a body larger than anything accepted is
 * cut. A body read whole, or none, leaves the connection as it is.
 */
export function boundUnreadBody(req: IncomingMessage, res: ServerResponse, bytes: number): void {
  res.once('finish', () => {
    if (req.complete) return;
    const socket = req.socket;
    const from = socket.bytesRead;
    const check = setInterval(() => {
      if (req.complete || socket.destroyed) clearInterval(check);
      else if (socket.bytesRead - from > bytes) {
        clearInterval(check);
        socket.destroy();
      }
    }, 50);
    check.unref();
  });
}
