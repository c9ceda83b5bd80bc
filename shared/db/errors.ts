/**
 * Recognises failures that mean "PostgreSQL is unreachable or going away", as opposed to a bug or a
 * constraint violation. Those become a 503 with a generic message; the driver text stays in the logs.
 */
const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

export function isDatabaseUnavailable(err: unknown): boolean {
  // An outbound HTTP call (undici's "fetch failed", cause ECONNREFUSED…) is not the database.
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++, e = (e as { cause?: unknown }).cause) {
    if ((e as { message?: unknown }).message === 'fetch failed') return false;
  }
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; sqlState?: unknown };
    const code = typeof x.code === 'string' ? x.code : typeof x.sqlState === 'string' ? x.sqlState : '';
    if (connectionCodes.has(code)) return true;
    // SQLSTATE class 08 (connection exception), 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now).
    if (/^08/.test(code) || /^57P0[123]$/.test(code)) return true;
    const name = typeof x.name === 'string' ? x.name : '';
    if (name === 'ConnectionException' || name === 'KnexTimeoutError') return true;
    const message = typeof x.message === 'string' ? x.message : '';
    if (
      /Connection terminated|connect ECONNREFUSED|Timeout acquiring a connection|the database system is (shutting down|starting up)|terminating connection due to administrator command/i.test(
        message,
      )
    ) {
      return true;
    }
    e = x.cause;
  }
  return false;
}
