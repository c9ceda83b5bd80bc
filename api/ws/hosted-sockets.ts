import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { onBindingRevoked } from '../../shared/auth/hosted-identities.js';
import type { Principal } from '../../shared/auth/principal.js';
import { PlatformError } from '../../shared/errors.js';
import { describeError, tapLogLines } from '../../shared/log.js';
import { LogRelaySubscriber, startLogRelayPublisher } from '../../shared/log-relay.js';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';
import { authenticate } from '../auth/authenticate.js';
import { authenticationRequired } from '../auth/refusals.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { toPlatformError } from '../middleware/errors.js';
import { acceptKey, closeFrame, encodeFrame, FrameParser, OPCODES } from './frames.js';

/**
 * Hosted-mode WebSockets (spec, Events; Hosted identity): `/api/ws/estate-live` (live status of the
 * caller's workflows), `/api/ws/log` (the caller's request and workflow log lines), `/api/ws/unified`
 * (both), `/api/ws/sandbox-terminal` and `/api/ws/cli-terminal` (501 `not_available_here`). The
 * upgrade is accepted only after the verified assertion and an active identity link (the same
 * `authenticate` as HTTP); a refusal is an HTTP answer with the error envelope. While open the
 * credential is rechecked every `recheckMs` and at once on any revoke in this process; a failed
 * recheck closes the socket with 4401 (link revoked or credential no longer valid).
 *
 * Frames (server → client, JSON text): `{type: "ready", channel}`, `{type: "estate", workflows:
 * [{workflow_id, workflow_type, status, start_time, close_time}]}` (sent when the set changes),
 * `{type: "log", line}` (one parsed log line). Client frames other than ping and close are ignored.
 */
export const HOSTED_SOCKET_PATHS = {
  estateLive: '/api/ws/estate-live',
  log: '/api/ws/log',
  unified: '/api/ws/unified',
  sandboxTerminal: '/api/ws/sandbox-terminal',
  cliTerminal: '/api/ws/cli-terminal',
} as const;

export const CLOSE_REVOKED = 4401;

export interface HostedSocketOptions {
  /** How often an open socket re-authenticates (and the estate is re-read); default 2000 ms. */
  recheckMs?: number;
}

const STATUS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  426: 'Upgrade Required',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

function refuse(socket: Duplex, requestId: string, error: PlatformError): void {
  const body = JSON.stringify({
    error: error.message,
    error_type: error.errorType,
    request_id: requestId,
    ...(error.payload ? { payload: error.payload } : {}),
  });
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    Connection: 'close',
    ...error.headers,
  };
  if (error.status === 401 && !headers['WWW-Authenticate']) headers['WWW-Authenticate'] = 'Bearer';
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n');
  socket.end(`HTTP/1.1 ${error.status} ${STATUS[error.status] ?? 'Error'}\r\n${head}\r\n\r\n${body}`);
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The subprotocol prefix carrying a bearer token (`Sec-WebSocket-Protocol: bearer.<token>`). */
export const BEARER_PROTOCOL_PREFIX = 'bearer.';

/**
 * The upgrade's credential. Browsers cannot set `Authorization` on a WebSocket, so besides that header
 * (and `X-Platform-Service-Token`) the token may come as the subprotocol `bearer.<token>` in
 * `Sec-WebSocket-Protocol` or as the `access_token` query parameter (the `Authorization` header wins
 * when sent; more than one bearer subprotocol or `access_token`, or the two naming different tokens,
 * are refused 400 `bad_request`, `payload.reason` `ambiguous_websocket_credential`). The
 * protocol echoed in the 101 (a browser fails the socket otherwise): the first offered one that is
 * not a token, else the bearer one.
 */
export function socketCredentials(req: IncomingMessage):
  | {
      credentials: { authorization: string | undefined; serviceToken: string | undefined };
      protocol: string | undefined;
    }
  | { refusal: PlatformError } {
  const offered = (req.headers['sec-websocket-protocol'] ?? '')
    .toString()
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const bearerOffers = offered.filter((p) => p.startsWith(BEARER_PROTOCOL_PREFIX));
  const protocolTokens = [...new Set(bearerOffers.map((p) => p.slice(BEARER_PROTOCOL_PREFIX.length)))];
  const queryTokens = new URL(req.url ?? '/', 'http://localhost').searchParams.getAll('access_token');
  const refusal = (message: string) => ({
    refusal: new PlatformError('bad_request', message, { reason: 'ambiguous_websocket_credential' }),
  });
  if (protocolTokens.length > 1 || protocolTokens.includes(''))
    return refusal('Offer at most one bearer.<token> subprotocol.');
  if (queryTokens.length > 1 || queryTokens.includes('')) return refusal('Send at most one non-empty access_token.');
  const header = headerOf(req, 'authorization');
  const token = protocolTokens[0] ?? queryTokens[0];
  if (protocolTokens[0] && queryTokens[0] && protocolTokens[0] !== queryTokens[0])
    return refusal('The bearer subprotocol and access_token name different tokens.');
  const protocol = offered.find((p) => !p.startsWith(BEARER_PROTOCOL_PREFIX)) ?? bearerOffers[0];
  return {
    credentials: {
      authorization: header ?? (token ? `Bearer ${token}` : undefined),
      serviceToken: headerOf(req, 'x-platform-service-token'),
    },
    protocol,
  };
}

/** Listens for upgrades on the API's server. */
export function attachHostedSockets(server: Server, deps: AppDeps, options: HostedSocketOptions = {}): () => void {
  const recheckMs = options.recheckMs ?? 2_000;
  const open = new Set<() => void>();
  // Worker log lines, and those of the other API replicas, arrive through PostgreSQL LISTEN/NOTIFY
  // (shared/log-relay.ts), hosted mode only; this API relays its own lines the same way, and skips
  // them when they come back (its sockets have them from this process already).
  const databaseUrl = deps.config.auth.provider === 'hosted' ? deps.config.databaseUrl : undefined;
  const publisher = databaseUrl
    ? startLogRelayPublisher({ databaseUrl, tenant: deps.config.auth.deploymentTenant })
    : null;
  const relay = databaseUrl ? new LogRelaySubscriber(databaseUrl, (pid) => publisher!.sentBy(pid)) : null;
  const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void handleUpgrade(req, socket, head).catch((err: unknown) => {
      deps.log.error('websocket upgrade failed', describeError(err));
      socket.destroy();
    });
  };
  server.on('upgrade', listener);

  async function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const requestId = randomUUID();
    socket.on('error', () => socket.destroy());
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const channel = (Object.values(HOSTED_SOCKET_PATHS) as string[]).includes(path) ? path : undefined;
    if (!channel) return refuse(socket, requestId, new PlatformError('not_found', `No WebSocket at ${path}.`));
    const log = deps.log.child({ request_id: requestId, websocket: path });
    if (deps.config.auth.provider !== 'hosted') {
      return refuse(
        socket,
        requestId,
        new PlatformError('not_available_here', 'These WebSockets exist only in hosted mode (AUTH_PROVIDER=hosted).', {
          reason: 'not_hosted_mode',
        }),
      );
    }
    const key = headerOf(req, 'sec-websocket-key');
    if (
      (headerOf(req, 'upgrade') ?? '').toLowerCase() !== 'websocket' ||
      !key ||
      headerOf(req, 'sec-websocket-version') !== '13'
    ) {
      return refuse(
        socket,
        requestId,
        new PlatformError(
          'bad_request',
          'A WebSocket upgrade needs Upgrade: websocket, Sec-WebSocket-Key and version 13.',
        ),
      );
    }
    const offered = socketCredentials(req);
    if ('refusal' in offered) return refuse(socket, requestId, offered.refusal);
    const { credentials, protocol } = offered;
    const check = async (): Promise<Principal> => {
      const principal = await authenticate(credentials, {
        config: deps.config,
        verifier: deps.verifier,
        em: deps.orm.em.fork(),
      });
      if (!principal) throw authenticationRequired(deps.config);
      return principal;
    };
    let principal: Principal;
    try {
      principal = await check();
    } catch (err) {
      const { error, unexpected } = toPlatformError(err);
      if (unexpected) log.error('websocket authentication failed', describeError(err));
      return refuse(socket, requestId, error);
    }
    if (path === HOSTED_SOCKET_PATHS.sandboxTerminal || path === HOSTED_SOCKET_PATHS.cliTerminal) {
      return refuse(
        socket,
        requestId,
        new PlatformError('not_available_here', 'Terminals are not enabled on this deployment.', {
          reason: 'terminal_not_enabled',
        }),
      );
    }
    socket.write(
      [
        'HTTP/1.1 101 Switching Protocols',
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Accept: ${acceptKey(key)}`,
        ...(protocol ? [`Sec-WebSocket-Protocol: ${protocol}`] : []),
        `X-Request-Id: ${requestId}`,
        '',
        '',
      ].join('\r\n'),
    );
    log.info('websocket opened', { principal_id: principal.id });
    runSocket(socket, head, path, principal, check, log);
  }

  function runSocket(
    socket: Duplex,
    head: Buffer,
    path: string,
    principal: Principal,
    check: () => Promise<Principal>,
    log: AppDeps['log'],
  ): void {
    let closed = false;
    const cleanups: (() => void)[] = [];
    const send = (value: unknown) => {
      if (!closed) socket.write(encodeFrame(OPCODES.text, Buffer.from(JSON.stringify(value))));
    };
    const close = (code: number, reason: string) => {
      if (closed) return;
      closed = true;
      for (const c of cleanups) c();
      open.delete(shutdown);
      socket.end(closeFrame(code, reason));
    };
    const shutdown = () => close(1001, 'server shutting down');
    open.add(shutdown);

    const parser = new FrameParser();
    const onData = (chunk: Buffer) => {
      try {
        for (const m of parser.push(chunk)) {
          if (m.opcode === OPCODES.close) close(1000, 'closed by client');
          else if (m.opcode === OPCODES.ping && !closed) socket.write(encodeFrame(OPCODES.pong, m.payload));
        }
      } catch {
        close(1009, 'message too large');
      }
    };
    socket.on('data', onData);
    socket.on('close', () => {
      if (!closed) {
        closed = true;
        for (const c of cleanups) c();
        open.delete(shutdown);
      }
    });
    if (head.length) onData(head);

    // The recheck: the same authentication as a request; a failure closes the socket.
    let checking = false;
    const recheck = async () => {
      if (closed || checking) return;
      checking = true;
      try {
        await check();
      } catch (err) {
        const { error } = toPlatformError(err);
        if (error.status === 401) {
          log.info('websocket closed: credential no longer valid', { principal_id: principal.id });
          close(CLOSE_REVOKED, error.message);
        }
      } finally {
        checking = false;
      }
    };
    const timer = setInterval(() => void recheck(), recheckMs);
    cleanups.push(() => clearInterval(timer));
    cleanups.push(onBindingRevoked(() => void recheck()));

    const ownWorkflows = new Set<string>();
    const wantsEstate = path === HOSTED_SOCKET_PATHS.estateLive || path === HOSTED_SOCKET_PATHS.unified;
    const wantsLog = path === HOSTED_SOCKET_PATHS.log || path === HOSTED_SOCKET_PATHS.unified;

    let lastEstate = '';
    let reading = false;
    const readEstate = async () => {
      if (closed || reading) return;
      reading = true;
      try {
        const workflows = await callerWorkflows(deps, principal);
        for (const w of workflows) ownWorkflows.add(w.workflow_id);
        const text = JSON.stringify(workflows);
        if (wantsEstate && text !== lastEstate) {
          lastEstate = text;
          send({ type: 'estate', workflows });
        }
      } catch (err) {
        log.warn('websocket estate read failed', describeError(err));
      } finally {
        reading = false;
      }
    };
    void readEstate();
    const estateTimer = setInterval(() => void readEstate(), recheckMs);
    cleanups.push(() => clearInterval(estateTimer));

    const deliver = (text: string) => {
      if (closed) return;
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return;
      }
      // This socket's own lines would echo forever: skip them.
      if (line.websocket !== undefined) return;
      const mine =
        (line.principal_id === principal.id && (line.tenant === undefined || line.tenant === principal.tenant)) ||
        (typeof line.workflow_id === 'string' && ownWorkflows.has(line.workflow_id));
      if (mine) send({ type: 'log', line });
    };
    const ready = () => send({ type: 'ready', channel: path.slice('/api/ws/'.length) });
    if (!wantsLog) return ready();
    cleanups.push(tapLogLines(deliver));
    if (!relay) return ready();
    // `ready` once the worker lines of the caller's tenant are listened to (or that failed: this process's lines only).
    relay.subscribe(principal.tenant, deliver).then(
      (unsubscribe) => {
        if (closed) unsubscribe();
        else cleanups.push(unsubscribe);
        ready();
      },
      (err: unknown) => {
        log.warn('websocket: worker log lines unavailable', describeError(err));
        ready();
      },
    );
  }

  return () => {
    server.off('upgrade', listener);
    for (const shutdown of [...open]) shutdown();
    void relay?.close();
    void publisher?.close();
  };
}

interface EstateEntry {
  workflow_id: string;
  workflow_type: string;
  status: string;
  start_time: string | null;
  close_time: string | null;
}

const ESTATE_LIMIT = 100;

/** The caller's workflows in its tenant: those whose memo names the caller (`requested_by` or `owner`). */
async function callerWorkflows(deps: AppDeps, principal: Principal): Promise<EstateEntry[]> {
  const tenant = principal.tenant.replace(/["\\]/g, '');
  const out: EstateEntry[] = [];
  let seen = 0;
  for await (const w of deps.temporal.workflow.list({
    query: `${SearchAttributes.tenant.name} = "${tenant}"`,
  })) {
    if (++seen > 1000 || out.length >= ESTATE_LIMIT) break;
    const memo = (w.memo ?? {}) as { requested_by?: unknown; owner?: unknown };
    if (memo.requested_by !== principal.id && memo.owner !== principal.id) continue;
    out.push({
      workflow_id: w.workflowId,
      workflow_type: w.type,
      status: w.status.name,
      start_time: w.startTime ? w.startTime.toISOString() : null,
      close_time: w.closeTime ? w.closeTime.toISOString() : null,
    });
  }
  return out.sort((a, b) => a.workflow_id.localeCompare(b.workflow_id));
}
