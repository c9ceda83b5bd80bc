import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from '../../shared/log.js';

const SAFE_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * Gives every request an id (an inbound `X-Request-Id` is kept when it looks sane), echoes it in the
 * response header, and writes one structured access-log line carrying it.
 */
export function requestIdAndAccessLog(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const inbound = ctx.get('x-request-id');
    const requestId = SAFE_ID.test(inbound) ? inbound : `req_${randomUUID().replace(/-/g, '')}`;
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const principal = ctx.state.principal as { kind: string; id: string } | undefined;
      (ctx.state.log as Logger).info('request', {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        ...(principal ? { principal_kind: principal.kind, principal_id: principal.id } : {}),
      });
    }
  };
}
