import { createServer, type Server } from 'node:http';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { loadConfig, type AppConfig } from '../shared/config.js';
import { initOrm } from '../shared/db/orm.js';
import { egressFor } from '../shared/http/trust.js';
import { attachMeshEgress } from '../shared/secrets/mesh.js';
import { isMain } from '../shared/is-main.js';
import { createLogger, describeError, type Logger } from '../shared/log.js';
import { Settings } from '../shared/settings/store.js';
import { startTracing, temporalClientInterceptors, type Tracing } from '../shared/observability/tracing.js';
import { createApp } from './app.js';
import { boundUnreadBody, largestAcceptedBody } from './http/body.js';
import { allRoutes } from './routes/index.js';
import { createJwtVerifier } from '../shared/auth/jwt.js';
import type { AppDeps } from '../shared/app-deps.js';
import { EmbeddingSmokeTests } from '../shared/llm/embedding-smoke.js';
import { attachHostedSockets } from './ws/hosted-sockets.js';
import { VersionRestorer } from '../shared/blueprints/versioning.js';

/** Builds the API's dependencies; nothing here needs PostgreSQL or Temporal to be up yet. */
export async function buildDeps(config: AppConfig, log: Logger, options: { tracing?: Tracing } = {}): Promise<AppDeps> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (npm start sets it for the embedded PostgreSQL)');
  const orm = await initOrm({ clientUrl: config.databaseUrl, poolMax: config.databasePoolMax });
  const settings = new Settings(orm, config);
  // In container-service mode the mesh egress list (setting `mesh.egress`) is the outbound allow-list.
  attachMeshEgress(config, settings);
  // A request must not hang for long while Temporal is down: fewer gRPC retries than the SDK default,
  // then the error middleware answers 503.
  const temporalConnection = Connection.lazy({
    address: config.temporal.address,
    connectTimeout: 5_000,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 4, maxIntervalMs: () => 2_000 }))],
  });
  const temporal = new Client({
    connection: temporalConnection,
    namespace: config.temporal.namespace,
    interceptors: temporalClientInterceptors(options.tracing),
  });
  const verifier =
    config.auth.jwksUrl && config.auth.issuer && config.auth.audience
      ? createJwtVerifier({
          jwksUrl: config.auth.jwksUrl,
          issuer: config.auth.issuer,
          audience: config.auth.audience,
          // The operator chose the identity provider: a loopback or private one is reached as configured.
          egress: egressFor(config, 'operator'),
        })
      : undefined;
  return { config, orm, temporal, temporalConnection, log, verifier, settings, tracing: options.tracing };
}

export interface RunningApi {
  server: Server;
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

/** Starts the HTTP server on config.port (0 picks a free port). */
export async function startApi(config: AppConfig, log: Logger, deps?: AppDeps): Promise<RunningApi> {
  const d = deps ?? (await buildDeps(config, log));
  const app = createApp(d);
  const handle = app.callback();
  // Koa answers its own errors (the error middleware); the listener only starts the request. What is left of a
  // body nobody read is discarded up to the largest body any route accepts, then the connection closed.
  const unreadBytes = largestAcceptedBody(allRoutes(), d.config.limits.jsonBodyBytes);
  const server = createServer((req, res) => {
    boundUnreadBody(req, res, unreadBytes);
    void handle(req, res);
  });
  server.keepAliveTimeout = 65_000;
  // Hosted-mode WebSockets (estate-live, log, …) answer upgrades on the same server.
  const detachSockets = attachHostedSockets(server, d);
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  // The startup embedding smoke test: after listening, never awaited, so it cannot delay boot.
  d.embeddingSmoke ??= new EmbeddingSmokeTests();
  d.embeddingSmoke.start(d);
  // Saved blueprint versions lost with the repository volume are re-created from PostgreSQL; never awaited.
  d.blueprintVersions ??= new VersionRestorer();
  d.blueprintVersions.start(d);
  const address = server.address() as { port: number };
  const url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${address.port}`;
  return {
    server,
    url,
    deps: d,
    async close() {
      detachSockets();
      await d.threadEvents?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (!deps) {
        await d.orm.close();
        await d.temporalConnection.close();
      }
    },
  };
}

/**
 * How long a stop may take before the process exits anyway. Found in a CI run: an API whose `npm start`
 * had been killed, with PostgreSQL and Temporal gone too, was still listening 20 minutes later.
 */
const STOP_DEADLINE_MS = 10_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger({ level: config.logLevel, base: { service: 'api' } });
  const tracing = startTracing({ serviceName: 'platform-api', otlpEndpoint: config.observability.otlpEndpoint });
  const api = await startApi(config, log, tracing ? await buildDeps(config, log, { tracing }) : undefined);
  if (tracing) log.info('tracing on', { otlp_endpoint: config.observability.otlpEndpoint });
  log.info('api listening', { url: api.url, auth_provider: config.auth.provider });
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info('api stopping', { reason });
    // A close that hangs (PostgreSQL or Temporal gone with the parent) must not leave the process listening.
    setTimeout(() => {
      log.warn('api stop timed out; exiting', { reason, after_ms: STOP_DEADLINE_MS });
      process.exit(0);
    }, STOP_DEADLINE_MS).unref();
    await api.close().catch((err: unknown) => log.error('api stop failed', describeError(err)));
    await tracing?.shutdown().catch((err: unknown) => log.warn('trace flush failed', describeError(err)));
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // Started by `npm start` with an IPC channel: when the parent goes, so do we (no orphans).
  process.on('disconnect', () => void stop('parent exited'));
}

if (isMain(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
