/**
 * Recognises "Temporal cannot be reached" (gRPC UNAVAILABLE / DEADLINE_EXCEEDED from the client, or
 * a transport failure) as opposed to business refusals, so the API answers 503 with a generic
 * message. Only gRPC-shaped errors count: a PostgreSQL ECONNREFUSED is not a Temporal outage.
 */
const UNAVAILABLE = 14;
const DEADLINE_EXCEEDED = 4;

export function isTemporalUnavailable(err: unknown): boolean {
  let grpcLike = false;
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      cause?: unknown;
      details?: unknown;
      metadata?: unknown;
    };
    if (
      x.name === 'ServiceError' ||
      x.name === 'TransportError' ||
      (typeof x.code === 'number' && ('details' in x || 'metadata' in x))
    ) {
      grpcLike = true;
    }
    if (grpcLike) {
      if (x.code === UNAVAILABLE || x.code === DEADLINE_EXCEEDED || x.name === 'TransportError') return true;
      const message = typeof x.message === 'string' ? x.message : '';
      if (/UNAVAILABLE|DEADLINE_EXCEEDED|Failed to connect|No connection established/.test(message)) return true;
    }
    e = x.cause;
  }
  return false;
}
