/**
 * The one outbound HTTP client (issue 9, section 3). Node-only (node:http, node:https, node:dns).
 *
 * Every request to a CRM, the identity provider, the language model, the issue tracker or any later
 * integration goes through `egressFetch`, which:
 * - resolves the host itself and checks every address against the egress policy (egress-policy.ts)
 *   before any socket exists, then connects to exactly those checked addresses (a custom `lookup`
 *   that answers the checked list: no second DNS answer, no rebinding gap);
 * - applies one deadline (connect, answer and body), a response size cap (streamed; the request is
 *   aborted past the cap) and follows redirects only by hand, checking each hop, up to a hop limit;
 * - fails with an `EgressError` whose code and message are classified and name the policy; the raw
 *   socket text stays in `detailForLogs`.
 * It answers a standard `Response` (the body already read), so callers keep their fetch-shaped code.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import {
  checkAddress,
  checkDestination,
  checkHostName,
  EgressError,
  type EgressPolicy,
  EgressCodes,
} from './egress-policy.js';

export { EgressError, type EgressErrorCode, type EgressPolicy } from './egress-policy.js';

/** Resolves a host name to its addresses (all of them); injectable so tests simulate DNS answers. */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const defaultResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_MAX_REDIRECTS = 5;

export interface EgressInit {
  /** The deployment's egress policy (`config.egress`). */
  policy: EgressPolicy;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The caller's cancellation (e.g. a worker stopping); answers `egress_aborted`. */
  signal?: AbortSignal;
  /** One deadline for the whole exchange, redirects included. */
  timeoutMs?: number;
  maxResponseBytes?: number;
  /**
   * Sees the final answer's body as it arrives (a streamed model answer), chunk by chunk, when its status
   * is 2xx; the body is still read whole and answered as usual.
   */
  onChunk?: (chunk: Buffer) => void;
  /** `follow` (default) re-checks every hop; `manual` answers the 3xx itself. */
  redirect?: 'follow' | 'manual';
  maxRedirects?: number;
  resolve?: Resolver;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 204, 205, 304]);

/** What a socket error code means, in words a caller may show (the raw text goes to logs only). */
const SOCKET_MEANING: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed while sending',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (temporary DNS failure)',
  CERT_HAS_EXPIRED: 'the TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the TLS certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'the TLS certificate chain is not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the TLS certificate cannot be verified',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the TLS certificate does not match the host name',
};

/** Socket errors that prove the request never left this process. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function failed(host: string, err: unknown, sent: boolean): EgressError {
  const code = (err as { code?: unknown }).code;
  const socketCode = typeof code === 'string' ? code : undefined;
  const meaning = (socketCode && SOCKET_MEANING[socketCode]) ?? 'the connection failed';
  return new EgressError(
    EgressCodes.egress_failed,
    `outbound request to ${host} failed: ${meaning}${socketCode ? ` (${socketCode})` : ''}`,
    {
      socketCode,
      sent: sent && !(socketCode && NOT_SENT.has(socketCode)),
      detailForLogs: err instanceof Error ? err.message : String(err),
    },
  );
}

/** Checks the URL's scheme and host, resolves it, and answers the addresses a connection may use. */
export async function checkedAddresses(
  url: URL,
  policy: EgressPolicy,
  resolve: Resolver = defaultResolver,
): Promise<Array<{ address: string; family: number }>> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressError(
      EgressCodes.egress_refused,
      `scheme ${url.protocol.replace(/:$/, '')} is not allowed for outbound requests (http and https only)`,
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  checkHostName(host);
  await checkDestination(url, policy);
  if (isIP(host)) {
    checkAddress(host, policy);
    return [{ address: host, family: isIP(host) }];
  }
  let answers: Array<{ address: string; family: number }>;
  try {
    answers = await resolve(host);
  } catch (err) {
    throw failed(host, err, false);
  }
  if (answers.length === 0)
    throw failed(host, Object.assign(new Error(`no address for ${host}`), { code: 'ENOTFOUND' }), false);
  // Every answer must pass: a name that resolves to a public and a metadata address is refused.
  for (const a of answers) {
    try {
      checkAddress(a.address, policy);
    } catch (err) {
      if (err instanceof EgressError)
        throw new EgressError(err.code, `host ${host} resolves to ${a.address}: ${err.message}`);
      throw err;
    }
  }
  return answers;
}

/** Refuses a URL the policy does not allow (scheme, host name, every resolved address) without connecting. */
export async function assertEgressAllowed(url: string | URL, policy: EgressPolicy, resolve?: Resolver): Promise<void> {
  await checkedAddresses(toUrl(url), policy, resolve);
}

function toUrl(url: string | URL): URL {
  try {
    return url instanceof URL ? url : new URL(url);
  } catch {
    throw new EgressError(EgressCodes.egress_refused, `"${String(url)}" is not a URL; refusing to send a request`);
  }
}

interface Hop {
  status: number;
  statusText: string;
  headers: Headers;
  body: Buffer;
}

/** One request to one URL: check, connect to the checked addresses, read the answer under the cap. */
async function once(
  url: URL,
  init: EgressInit,
  method: string,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined,
  stop: AbortSignal,
): Promise<Hop> {
  const addresses = await untilStopped(checkedAddresses(url, init.policy, init.resolve), stop);
  const host = url.hostname;
  const maxBytes = init.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  // The connection uses exactly the addresses checked above, whatever DNS would answer now.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    const all = (options as { all?: boolean }).all;
    if (all) (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  return new Promise<Hop>((resolve, reject) => {
    let connected = false;
    let settled = false;
    const finish = (err: Error | null, hop?: Hop) => {
      if (settled) return;
      settled = true;
      stop.removeEventListener('abort', onStop);
      if (err) reject(err);
      else resolve(hop!);
    };
    const requestFn = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = requestFn(url, { method, headers, lookup, agent: false }, (res: IncomingMessage) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        finish(tooLarge(host, maxBytes));
        res.destroy();
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      const status = res.statusCode ?? 0;
      const seen = status >= 200 && status < 300 ? init.onChunk : undefined;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          finish(tooLarge(host, maxBytes));
          res.destroy();
          req.destroy();
          return;
        }
        chunks.push(chunk);
        seen?.(chunk);
      });
      res.on('error', (err) => finish(err instanceof EgressError ? err : failed(host, err, true)));
      res.on('aborted', () =>
        finish(failed(host, Object.assign(new Error('response aborted'), { code: 'ECONNRESET' }), true)),
      );
      res.on('end', () => {
        const h = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        finish(null, {
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? '',
          headers: h,
          body: Buffer.concat(chunks),
        });
      });
    });
    req.on('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
        connected = true;
      });
    });
    req.on('error', (err) => finish(err instanceof EgressError ? err : failed(host, err, connected)));
    const onStop = () => {
      const reason =
        stop.reason instanceof EgressError
          ? stop.reason
          : new EgressError(EgressCodes.egress_aborted, `outbound request to ${host} was cancelled`);
      if (reason.sent === undefined) reason.sent = connected;
      req.destroy(reason);
      finish(reason);
    };
    stop.addEventListener('abort', onStop, { once: true });
    req.end(body);
  });
}

/** Settles with `work`, or with the stop reason (nothing was sent yet) if `stop` aborts first. */
function untilStopped<T>(work: Promise<T>, stop: AbortSignal): Promise<T> {
  const stopped = () => {
    const reason = stop.reason as EgressError;
    if (reason instanceof EgressError && reason.sent === undefined) reason.sent = false;
    return reason;
  };
  if (stop.aborted) return Promise.reject(stopped());
  return new Promise<T>((resolve, reject) => {
    const onStop = () => reject(stopped());
    stop.addEventListener('abort', onStop, { once: true });
    work.then(resolve, reject).finally(() => stop.removeEventListener('abort', onStop));
  });
}

const tooLarge = (host: string, maxBytes: number) =>
  new EgressError(
    EgressCodes.egress_too_large,
    `the answer from ${host} is larger than ${maxBytes} bytes; the request was aborted`,
    { sent: true },
  );

/**
 * One outbound request under the egress policy. Answers a `Response` whose body is already read
 * (at most `maxResponseBytes`); throws `EgressError` (egress_refused, egress_timeout,
 * egress_too_large, egress_failed, egress_aborted) otherwise.
 */
export async function egressFetch(target: string | URL, init: EgressInit): Promise<Response> {
  let url = toUrl(target);
  const timeoutMs = init.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(
    () =>
      deadline.abort(
        new EgressError(
          EgressCodes.egress_timeout,
          `outbound request to ${url.hostname} did not complete within ${timeoutMs} ms`,
        ),
      ),
    timeoutMs,
  );
  const onCaller = () =>
    deadline.abort(new EgressError(EgressCodes.egress_aborted, `outbound request to ${url.hostname} was cancelled`));
  if (init.signal?.aborted) onCaller();
  init.signal?.addEventListener('abort', onCaller, { once: true });
  let method = (init.method ?? 'GET').toUpperCase();
  let headers = { ...init.headers };
  let body = init.body;
  const maxRedirects = init.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  try {
    for (let hop = 0; ; hop++) {
      const answer = await once(url, init, method, headers, body, deadline.signal);
      const location = answer.headers.get('location');
      if (init.redirect === 'manual' || !REDIRECTS.has(answer.status) || !location)
        return toResponse(answer, url, hop > 0);
      if (hop >= maxRedirects) {
        throw new EgressError(
          EgressCodes.egress_failed,
          `outbound request to ${url.hostname} was redirected more than ${maxRedirects} times`,
          { sent: true },
        );
      }
      const next = toUrl(new URL(location, url).href);
      if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === 'POST')) {
        method = method === 'HEAD' ? 'HEAD' : 'GET';
        body = undefined;
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
      }
      // Credentials are for the origin they were given to.
      if (next.origin !== url.origin)
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^(authorization|cookie)$/i.test(k)));
      url = next;
    }
  } finally {
    clearTimeout(timer);
    init.signal?.removeEventListener('abort', onCaller);
  }
}

function toResponse(hop: Hop, url: URL, redirected: boolean): Response {
  if (hop.status < 200 || hop.status > 599) {
    throw new EgressError(
      EgressCodes.egress_failed,
      `outbound request to ${url.hostname} got an invalid HTTP status (${hop.status})`,
      { sent: true },
    );
  }
  const res = new Response(NULL_BODY.has(hop.status) ? null : new Uint8Array(hop.body), {
    status: hop.status,
    statusText: hop.statusText,
    headers: hop.headers,
  });
  Object.defineProperty(res, 'url', { value: url.href });
  Object.defineProperty(res, 'redirected', { value: redirected });
  return res;
}

/**
 * A `fetch`-shaped function bound to a policy, for libraries that take a custom fetch (jose's
 * remote JWK set). String bodies only; the library's timeout signal ends the request as a timeout.
 */
export function egressFetchFunction(
  policy: EgressPolicy,
  defaults: Omit<EgressInit, 'policy'> = {},
): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (input, requestInit = {}) => {
    const url = input instanceof Request ? input.url : input;
    const headers: Record<string, string> = {};
    new Headers(requestInit.headers).forEach((value, key) => {
      headers[key] = value;
    });
    if (requestInit.body !== undefined && requestInit.body !== null && typeof requestInit.body !== 'string') {
      throw new TypeError('egressFetchFunction sends string bodies only');
    }
    try {
      return await egressFetch(url, {
        ...defaults,
        policy,
        method: requestInit.method ?? 'GET',
        headers,
        ...(typeof requestInit.body === 'string' ? { body: requestInit.body } : {}),
        ...(requestInit.signal ? { signal: requestInit.signal } : {}),
        redirect: requestInit.redirect === 'manual' ? 'manual' : 'follow',
      });
    } catch (err) {
      // A caller's timeout signal (AbortSignal.timeout) is a timeout, named as fetch names it.
      if (
        err instanceof EgressError &&
        err.code === EgressCodes.egress_aborted &&
        (requestInit.signal?.reason as Error | undefined)?.name === 'TimeoutError'
      ) {
        const timeout = new EgressError(EgressCodes.egress_timeout, err.message.replace('was cancelled', 'timed out'), {
          sent: err.sent ?? false,
        });
        timeout.name = 'TimeoutError';
        throw timeout;
      }
      throw err;
    }
  };
}
