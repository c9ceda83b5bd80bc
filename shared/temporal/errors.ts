/**
 * Recognises "Temporal cannot be reached" (gRPC UNAVAILABLE / DEADLINE_EXCEEDED, refused
 * connections) as opposed to business refusals, so the API answers 503 with a generic message.
 */
const UNAVAILABLE = 14;
const DEADLINE_EXCEEDED = 4;

export function isTemporalUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
    if (x.name === 'ServiceError' || x.name === 'TransportError' || typeof x.code === 'number') {
      if (x.code === UNAVAILABLE || x.code === DEADLINE_EXCEEDED) return true;
    }
    const message = typeof x.message === 'string' ? x.message : '';
    if (x.name === 'TransportError' || /14 UNAVAILABLE|4 DEADLINE_EXCEEDED|Failed to connect|No connection established|ECONNREFUSED/.test(message)) {
      return true;
    }
    e = x.cause;
  }
  return false;
}
