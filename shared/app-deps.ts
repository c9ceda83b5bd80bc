import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client, Connection } from '@temporalio/client';
import type { AppConfig } from './config.js';
import type { Logger } from './log.js';
import type { ApiMetrics } from './observability/metrics.js';
import type { Tracing } from './observability/tracing.js';
import type { Settings } from './settings/store.js';
import type { TokenVerifier } from './auth/jwt.js';
import type { EmbeddingSmokeTests } from './llm/embedding-smoke.js';
import type { VersionRestorer } from './blueprints/versioning.js';
import type { ThreadEventHub } from './threads/events.js';

/** Everything the API needs, built once per process by api/server.ts (or a test). */
export interface AppDeps {
  config: AppConfig;
  orm: MikroORM;
  temporal: Client;
  temporalConnection: Connection;
  log: Logger;
  /** Run-time settings (saved configuration, then env, then default), seen without a restart. */
  settings: Settings;
  /** Present when an identity provider is configured. */
  verifier: TokenVerifier | undefined;
  /** This process's startup embedding smoke test (started by `startApi`). */
  embeddingSmoke?: EmbeddingSmokeTests;
  /** This process's Prometheus registry (`GET /metrics`); created by `createApp` when absent. */
  metrics?: ApiMetrics;
  /** Present when tracing is on (`OTEL_EXPORTER_OTLP_ENDPOINT`, or a test's in-memory exporter). */
  tracing?: Tracing;
  /** This process's saved blueprint version restore pass (started by `startApi`, or by the first versioning call). */
  blueprintVersions?: VersionRestorer;
  /** This process's LISTEN connection for thread events (opened by the first follower; `threadEventHub`). */
  threadEvents?: ThreadEventHub;
}
