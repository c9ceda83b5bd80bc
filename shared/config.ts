import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { operatorEndpointRefusal } from './http/egress-policy.js';
import { fromProjectRoot } from './project-root.js';
import { SETTING_ENV_NAMES, SETTING_PATHS, settingDef } from './settings/definitions.js';

/** The authentication providers the spec names (`auth.provider`), plus `none` for the embedded default. */
export const AUTH_PROVIDERS = ['oidc', 'proxy', 'hosted', 'none'] as const;
export type AuthProvider = (typeof AUTH_PROVIDERS)[number];

const truthy = (value: string | undefined): boolean =>
  value !== undefined && ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const port = (fallback: number) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0 || n > 65535) {
        ctx.addIssue({ code: 'custom', message: `not a TCP port: ${value}` });
        return z.NEVER;
      }
      return n;
    });

const EnvSchema = z.object({
  NODE_ENV: optionalString,
  PORT: port(8080),
  HOST: optionalString,
  PLATFORM_PUBLIC_BASE_URL: optionalString,
  DATABASE_URL: optionalString,
  DATABASE_POOL_MAX: optionalString,
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: optionalString,
  TEMPORAL_TASK_QUEUE: optionalString,
  TEMPORAL_UI_URL: optionalString,
  TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS: optionalString,
  TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: optionalString,
  TEMPORAL_WORKER_STICKY_TIMEOUT_MS: optionalString,
  TEMPORAL_WORKER_SHUTDOWN_GRACE_SECONDS: optionalString,
  TEMPORAL_WORKER_BUNDLE_CACHE: optionalString,
  CONSOLE_SESSION_TTL_SECONDS: optionalString,
  TEMPORAL_WORKER_METRICS_ADDRESS: optionalString,
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString,
  AUTH_PROVIDER: optionalString,
  AUTH_JWKS_URL: optionalString,
  AUTH_ISSUER: optionalString,
  AUTH_AUDIENCE: optionalString,
  AUTH_CLIENT_ID: optionalString,
  AUTH_CLIENT_SECRET: optionalString,
  AUTH_MCP_CLIENT_REDIRECT_URIS: optionalString,
  PLATFORM_MCP_PUBLIC_URL: optionalString,
  PLATFORM_OAUTH_PROXY_ENABLED: optionalString,
  PLATFORM_SIGNING_KEY: optionalString,
  AUTH_ROLES_CLAIM: optionalString,
  AUTH_INSTALLATION: optionalString,
  PLATFORM_TENANT: optionalString,
  PLATFORM_SERVICE_TOKEN: optionalString,
  PLATFORM_INTERNAL_TOKEN: optionalString,
  MAX_JSON_BODY_BYTES: optionalString,
  LOG_LEVEL: optionalString,
  ACTION_REVIEW_SWEEP_INTERVAL_SECONDS: optionalString,
  ACTION_REVIEW_MAX_PROPOSAL_BYTES: optionalString,
  ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS: optionalString,
  ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: optionalString,
  ACTION_REVIEW_HANDBACK_MAX_ATTEMPTS: optionalString,
  LOCAL_CLI_ALLOWED_COMMANDS: optionalString,
  LOCAL_CLI_TIMEOUT_SECONDS: optionalString,
  TICKET_TRACKER_URL: optionalString,
  TICKET_TRACKER_TOKEN: optionalString,
  PLATFORM_MCP_DEFAULT_AGENT_ID: optionalString,
  PLATFORM_MCP_DEFAULT_AGENT_UNAVAILABLE_POLICY: optionalString,
  PLATFORM_LLM_BASE_URL: optionalString,
  PLATFORM_LLM_API_KEY: optionalString,
  PLATFORM_LLM_MODEL: optionalString,
  PLATFORM_LLM_TIMEOUT_SECONDS: optionalString,
  PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE: optionalString,
  PLATFORM_LLM_INPUT_USD_PER_MTOK: optionalString,
  PLATFORM_LLM_OUTPUT_USD_PER_MTOK: optionalString,
  PLATFORM_DATA_DIR: optionalString,
  PLATFORM_BLUEPRINTS_DIR: optionalString,
  PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS: optionalString,
  PLATFORM_SECRETS_KEY: optionalString,
  PLATFORM_SECRETS_RESEAL_BATCH_SIZE: optionalString,
  PLATFORM_SECRETS_RESEAL_PAUSE_MS: optionalString,
  PLATFORM_CONTAINER_SERVICE_MODE: optionalString,
  PLATFORM_MESH_AUTH_KEY_FILE: optionalString,
  CRM_ALLOW_INSECURE_LOOPBACK: optionalString,
  PLATFORM_EGRESS_ALLOW_PRIVATE: optionalString,
  CRM_MAX_APPROVAL_TTL_SECONDS: optionalString,
  PLATFORM_SKILLS_DIR: optionalString,
  PLATFORM_DOCUMENT_INDEX_ROOTS: optionalString,
  PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_INTERVAL: optionalString,
  PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_SLEEP_S: optionalString,
  PLATFORM_DOCUMENT_INDEX_COMPACTION_MAX_RETRIES: optionalString,
  PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB: optionalString,
  PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB: optionalString,
  PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_WORKERS: optionalString,
  PLATFORM_DOCUMENT_INDEX_HNSW_MIN_ROWS: optionalString,
  PLATFORM_DOCUMENT_INDEX_HNSW_EF_SEARCH: optionalString,
  PLATFORM_DOCUMENT_INDEX_HNSW_ONLY: optionalString,
  PLATFORM_LICENSE_PUBLIC_KEY: optionalString,
  PLATFORM_LICENSE_ENFORCEMENT_DISABLED: optionalString,
  PLATFORM_DOCS_BASE_URL: optionalString,
  AWS_ACCESS_KEY_ID: optionalString,
  AWS_SECRET_ACCESS_KEY: optionalString,
  AWS_SESSION_TOKEN: optionalString,
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: optionalString,
  AWS_ENDPOINT_URL_STS: optionalString,
});

export interface AppConfig {
  port: number;
  host: string;
  publicBaseUrl: string | undefined;
  /** Unset until the start script or the environment provides one. */
  databaseUrl: string | undefined;
  databasePoolMax: number;
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    uiUrl: string | undefined;
    /**
     * Worker tuning: `TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS` bounds the sticky cache of workflow
     * executions (evicted ones replay on their next task, so waiting missions cost no memory);
     * `TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS` the workflow tasks run at once (at most the cache size).
     */
    workerMaxCachedWorkflows: number;
    workerMaxConcurrentWorkflowTasks: number;
    /**
     * `TEMPORAL_WORKER_STICKY_TIMEOUT_MS` (default 1000): how long a workflow task waits on the sticky
     * queue of the worker that cached the workflow before any worker may take it. The SDK's 10 s made a
     * workflow cached on a SIGKILLed worker wait 10 s; a second costs a replay now and then on a busy worker.
     */
    workerStickyTimeoutMs: number;
    /**
     * `TEMPORAL_WORKER_SHUTDOWN_GRACE_SECONDS` (default 10): on SIGTERM the worker stops polling, lets
     * running activities finish for this long, then cancels them (the SDK's default is 0: cancel at once).
     */
    workerShutdownGraceSeconds: number;
    /**
     * `TEMPORAL_WORKER_BUNDLE_CACHE` (unset by default): a file for the worker's workflow bundle. A worker
     * that finds it uses it; one that does not bundles the workflows and writes it there. `npm start` sets
     * a fresh file per start, so a worker it restarts (after a crash) polls in a second instead of
     * bundling again; unset, every worker start bundles.
     */
    workerBundleCache: string | undefined;
  };
  /** The review console (`/console`): `CONSOLE_SESSION_TTL_SECONDS`, how long a sign-in lasts (default 8 h). */
  console: { sessionTtlSeconds: number };
  auth: {
    provider: AuthProvider;
    jwksUrl: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    clientId: string | undefined;
    /** Upstream client secret the OAuth proxy presents at the identity provider's token endpoint. */
    clientSecret: string | undefined;
    /** `auth.mcp_client_redirect_uris`: extra MCP client callbacks, accepted verbatim. */
    mcpClientRedirectUris: string[];
    rolesClaim: string;
    /** `AUTH_INSTALLATION` (hosted mode): the installation a signed assertion's `installation` claim must name. */
    installation: string | undefined;
    deploymentTenant: string;
    serviceToken: string | undefined;
    internalToken: string | undefined;
  };
  limits: { jsonBodyBytes: number };
  mcp: {
    /** Customer-facing HTTPS origin of the gateway (`PLATFORM_MCP_PUBLIC_URL`, else `PLATFORM_PUBLIC_BASE_URL`); unset: the request's origin. */
    publicOrigin: string | undefined;
    /** `PLATFORM_OAUTH_PROXY_ENABLED`: serve /authorize, /oauth/callback and /oauth/token. */
    oauthProxyEnabled: boolean;
  };
  /** HS256 key for signed download URLs; unset: derived from the secrets root key (else a random key per process, logged warning). */
  signingKey: string | undefined;
  gateway: {
    defaultAgentId: string | undefined;
    defaultAgentUnavailablePolicy: 'require_selection' | 'first_available' | undefined;
  };
  /** The active language-model provider (any OpenAI-compatible chat endpoint); unset means none configured. */
  llm: {
    baseUrl: string | undefined;
    apiKey: string | undefined;
    model: string | undefined;
    timeoutSeconds: number;
    /** Prices in USD per million tokens, for the spend each call records (0 when unknown). */
    inputUsdPerMtok: number;
    outputUsdPerMtok: number;
    /** `PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE`: texts one re-embedding activity sends in one embedding call. */
    reindexBatchSize: number;
  };
  /**
   * `PLATFORM_DATA_DIR` (default `.data`). Every path here is absolute: a relative one was resolved
   * against the project root once, at load (`configuredPath`), so no consumer compares or joins a relative path.
   */
  dataDir: string;
  /** Folder of skills (`<skill>/<files>`) the gateway's read_skill serves; unset means none. */
  skillsDir: string | undefined;
  /** Document indexes (issue 13). */
  documentIndex: {
    /** `PLATFORM_DOCUMENT_INDEX_ROOTS`: directories ADD_DOCUMENTS may read (`:`-separated; default `.data/documents`). */
    roots: string[];
    /** Spec Limits, ingestion compaction: checkpoint every N documents, pause seconds, retries. */
    compactionInterval: number;
    compactionSleepS: number;
    compactionMaxRetries: number;
    /** `PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB`: memory the API's exact-search vector cache may hold (vectors and rows). */
    vectorCacheMb: number;
    /** `PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB`: `maintenance_work_mem` of a pgvector HNSW build (default 1024). */
    hnswBuildMemoryMb: number;
    /** `PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_WORKERS`: parallel workers of an HNSW build (default 2). */
    hnswBuildWorkers: number;
    /** `PLATFORM_DOCUMENT_INDEX_HNSW_EF_SEARCH`: pgvector's HNSW candidate list per search (default 100; at least 50). */
    hnswEfSearch: number;
    /** `PLATFORM_DOCUMENT_INDEX_HNSW_MIN_ROWS`: vectors below which no HNSW index is built (exact scan; default 2000). */
    hnswMinRows: number;
    /**
     * `PLATFORM_DOCUMENT_INDEX_HNSW_ONLY`: with pgvector, every search ranks vectors through PostgreSQL (HNSW);
     * by default an index whose vectors fit the vector cache is searched by the exact in-process scan once cached.
     */
    hnswOnly: boolean;
  };
  actionReview: {
    /** `action_review.sweep_interval_seconds`: how often the schedule sweeps undelivered hand-backs. */
    sweepIntervalSeconds: number;
    /** A proposal whose stored form (JSON) is larger answers 413. */
    maxProposalBytes: number;
    /** Start-to-close and heartbeat timeouts of the one-attempt effect activity. */
    effectTimeoutSeconds: number;
    effectHeartbeatSeconds: number;
    /** Delivery attempts of one hand-back workflow before it leaves the rest to the sweep. */
    handbackMaxAttempts: number;
    /** Executables `local_cli.run.v1` may run (absolute paths or names on PATH); empty allows none. */
    localCliAllowedCommands: string[];
    localCliTimeoutSeconds: number;
    /** Issue tracker `ticket.write.v1` posts to; unset refuses with TICKETING_SETUP_REQUIRED. */
    ticketTrackerUrl: string | undefined;
    ticketTrackerToken: string | undefined;
  };
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Metrics and traces (README, Operating). */
  observability: {
    /** `TEMPORAL_WORKER_METRICS_ADDRESS` (`host:port`): the worker's Temporal SDK Prometheus endpoint; unset: off. */
    workerMetricsAddress: string | undefined;
    /** `OTEL_EXPORTER_OTLP_ENDPOINT`: OTLP/HTTP collector for traces; unset: tracing off. */
    otlpEndpoint: string | undefined;
  };
  /** Secrets at rest (connection credentials, cached tokens): AES-256-GCM with a key derived from `key`. */
  secrets: {
    /** `PLATFORM_SECRETS_KEY`; unset: a random key generated once into `keyFile` (one machine only). */
    key: string | undefined;
    /** `<PLATFORM_DATA_DIR>/secrets.key`. */
    keyFile: string;
    /** `PLATFORM_SECRETS_RESEAL_BATCH_SIZE`: rows one re-seal activity handles (one transaction). */
    resealBatchSize: number;
    /** `PLATFORM_SECRETS_RESEAL_PAUSE_MS`: a durable pause between re-seal batches, to spare the database (0: none). */
    resealPauseMs: number;
  };
  /**
   * `PLATFORM_CONTAINER_SERVICE_MODE`: the deployment runs as a warehouse container service. The
   * encryption-key enable/verify and mesh auth key routes answer only then, and the mesh egress list
   * restricts outbound requests. Process-level: setting `platform.container_service_mode` (env-only).
   */
  containerServiceMode: boolean;
  /** Managed sources (Git): each source's working tree and object store live under `dir/<source_id>/`. */
  managedSources: {
    /** `<PLATFORM_DATA_DIR>/managed-sources`. */
    dir: string;
  };
  /** Blueprint working copies: one Git repository per blueprint under `dir/<tenant>/<blueprint_id>/` (API and worker share it). */
  blueprints: {
    /** `PLATFORM_BLUEPRINTS_DIR`, else `<PLATFORM_DATA_DIR>/blueprints`. */
    dir: string;
    /** `PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS` (default 20000): a slower model answer falls back to the lexical ranker. */
    wizardTimeoutMs: number;
  };
  mesh: {
    /** `PLATFORM_MESH_AUTH_KEY_FILE`: where the container service mounts the mesh auth key (read by enable, never served). */
    authKeyFile: string;
  };
  /**
   * Outbound requests to administrator-saved endpoints (shared/http/egress.ts): link-local and
   * cloud-metadata addresses are always refused; private ranges and loopback only with
   * `PLATFORM_EGRESS_ALLOW_PRIVATE`. Operator, CRM and request-supplied endpoints derive their own
   * policy from it (shared/http/trust.ts).
   */
  egress: {
    allowPrivate: boolean;
    allowLoopback: boolean;
    /** Container-service mode: only destinations on the mesh egress list (shared/secrets/mesh.ts) are reached. */
    containerService: boolean;
    /** The mesh egress list's source, attached by API and worker (`attachMeshEgress`); absent: the default list. */
    destinations?: () => Promise<readonly string[]>;
  };
  license: {
    /** `PLATFORM_LICENSE_PUBLIC_KEY`: PEM (SPKI) or JWK JSON of the EdDSA/ES256 key licenses are signed with. */
    publicKey: string | undefined;
    /** `PLATFORM_LICENSE_ENFORCEMENT_DISABLED`: `check` always answers ok (reported by `status`). */
    enforcementDisabled: boolean;
  };
  /**
   * AWS credentials for the Bedrock-type provider's `iam_role` mode (the standard variables; signed
   * with SigV4 by shared/aws/sigv4.ts) and the SDKs' standard endpoint overrides (default: the
   * regional `bedrock-runtime` and `sts` hosts).
   */
  aws: {
    accessKeyId: string | undefined;
    secretAccessKey: string | undefined;
    sessionToken: string | undefined;
    bedrockRuntimeEndpoint: string | undefined;
    stsEndpoint: string | undefined;
  };
  crm: {
    /** `crm.allow_insecure_loopback`: accept plain-http loopback hosts (local testing only). */
    allowInsecureLoopback: boolean;
    /** `crm.max_approval_ttl_seconds`: cap on a merge approval's lifetime. */
    maxApprovalTtlSeconds: number;
  };
  /**
   * The environment variables the settings schema names (shared/settings), as set: the `env` layer
   * of every setting (saved configuration, then this, then the default).
   */
  settingsEnv: Readonly<Record<string, string>>;
}

/** Thrown when the environment cannot describe a runnable deployment. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** AES-256 wants 32 bytes of key; HKDF cannot add entropy a shorter passphrase lacks. */
export const MIN_SECRETS_KEY_BYTES = 32;

/** Refuses a configured secrets key too short to protect anything (checked at start and at use). */
export function checkSecretsKey(key: string): void {
  const bytes = new TextEncoder().encode(key).length;
  if (bytes < MIN_SECRETS_KEY_BYTES) {
    throw new ConfigError(
      `PLATFORM_SECRETS_KEY must be at least ${MIN_SECRETS_KEY_BYTES} bytes (got ${bytes}); generate one with \`openssl rand -hex 32\`, or unset it to use a generated key file (one machine only).`,
    );
  }
}

/**
 * Reads the deployment settings from the environment. Every setting has an env name; the
 * README lists them. Invalid values stop the process with a message naming the variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid environment: ${detail}`);
  }
  const e = parsed.data;
  const provider = (e.AUTH_PROVIDER ?? 'none').toLowerCase();
  if (!(AUTH_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`AUTH_PROVIDER must be one of ${AUTH_PROVIDERS.join(', ')} (got "${provider}")`);
  }
  if (provider === 'oidc' && (!e.AUTH_JWKS_URL || !e.AUTH_ISSUER || !e.AUTH_AUDIENCE)) {
    throw new ConfigError('AUTH_PROVIDER=oidc needs AUTH_JWKS_URL, AUTH_ISSUER and AUTH_AUDIENCE');
  }
  if (provider === 'hosted' && (!e.AUTH_JWKS_URL || !e.AUTH_ISSUER || !e.AUTH_AUDIENCE || !e.AUTH_INSTALLATION)) {
    throw new ConfigError('AUTH_PROVIDER=hosted needs AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE and AUTH_INSTALLATION');
  }
  const positiveInt = (name: string, raw: string | undefined, fallback: number): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer (got "${raw}")`);
    return n;
  };
  const publicOrigin = publicOriginOf(
    e.PLATFORM_MCP_PUBLIC_URL ? 'PLATFORM_MCP_PUBLIC_URL' : 'PLATFORM_PUBLIC_BASE_URL',
    e.PLATFORM_MCP_PUBLIC_URL ?? e.PLATFORM_PUBLIC_BASE_URL,
  );
  const oauthProxyEnabled = truthy(e.PLATFORM_OAUTH_PROXY_ENABLED);
  if (oauthProxyEnabled && (!e.AUTH_ISSUER || !e.AUTH_CLIENT_ID)) {
    throw new ConfigError(
      "PLATFORM_OAUTH_PROXY_ENABLED needs AUTH_ISSUER and AUTH_CLIENT_ID (the upstream identity provider and the platform's client there)",
    );
  }
  if (e.PLATFORM_SECRETS_KEY !== undefined) checkSecretsKey(e.PLATFORM_SECRETS_KEY);
  const logLevel = (e.LOG_LEVEL ?? 'info').toLowerCase();
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be debug, info, warn or error (got "${logLevel}")`);
  }
  const settingsEnv = settingsEnvOf(env);
  const dataDir = dataDirOf(env);
  const containerServiceMode = truthy(e.PLATFORM_CONTAINER_SERVICE_MODE);
  return {
    settingsEnv,
    port: e.PORT,
    host: e.HOST ?? '0.0.0.0',
    publicBaseUrl: e.PLATFORM_PUBLIC_BASE_URL,
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: positiveInt('DATABASE_POOL_MAX', e.DATABASE_POOL_MAX, 10),
    temporal: {
      address: e.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      namespace: e.TEMPORAL_NAMESPACE ?? 'default',
      taskQueue: e.TEMPORAL_TASK_QUEUE ?? 'platform',
      uiUrl: e.TEMPORAL_UI_URL,
      workerMaxCachedWorkflows: positiveInt(
        'TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS',
        e.TEMPORAL_WORKER_MAX_CACHED_WORKFLOWS,
        100,
      ),
      workerMaxConcurrentWorkflowTasks: positiveInt(
        'TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
        e.TEMPORAL_WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
        20,
      ),
      workerStickyTimeoutMs: positiveInt(
        'TEMPORAL_WORKER_STICKY_TIMEOUT_MS',
        e.TEMPORAL_WORKER_STICKY_TIMEOUT_MS,
        1000,
      ),
      workerShutdownGraceSeconds: positiveInt(
        'TEMPORAL_WORKER_SHUTDOWN_GRACE_SECONDS',
        e.TEMPORAL_WORKER_SHUTDOWN_GRACE_SECONDS,
        10,
      ),
      workerBundleCache: e.TEMPORAL_WORKER_BUNDLE_CACHE || undefined,
    },
    console: { sessionTtlSeconds: positiveInt('CONSOLE_SESSION_TTL_SECONDS', e.CONSOLE_SESSION_TTL_SECONDS, 8 * 3600) },
    auth: {
      provider: provider as AuthProvider,
      jwksUrl: operatorUrl('AUTH_JWKS_URL', e.AUTH_JWKS_URL),
      issuer: issuerOf(e.AUTH_ISSUER, oauthProxyEnabled),
      audience: e.AUTH_AUDIENCE,
      clientId: e.AUTH_CLIENT_ID,
      clientSecret: e.AUTH_CLIENT_SECRET,
      mcpClientRedirectUris: (e.AUTH_MCP_CLIENT_REDIRECT_URIS ?? '').split(/[\s,]+/).filter(Boolean),
      rolesClaim: e.AUTH_ROLES_CLAIM ?? 'roles',
      installation: e.AUTH_INSTALLATION,
      deploymentTenant: e.PLATFORM_TENANT ?? 'default',
      serviceToken: e.PLATFORM_SERVICE_TOKEN,
      internalToken: e.PLATFORM_INTERNAL_TOKEN,
    },
    limits: { jsonBodyBytes: positiveInt('MAX_JSON_BODY_BYTES', e.MAX_JSON_BODY_BYTES, 1024 * 1024) },
    mcp: { publicOrigin, oauthProxyEnabled },
    signingKey: e.PLATFORM_SIGNING_KEY,
    gateway: {
      defaultAgentId: e.PLATFORM_MCP_DEFAULT_AGENT_ID,
      defaultAgentUnavailablePolicy: unavailablePolicy(e.PLATFORM_MCP_DEFAULT_AGENT_UNAVAILABLE_POLICY),
    },
    dataDir,
    skillsDir: e.PLATFORM_SKILLS_DIR === undefined ? undefined : configuredPath(e.PLATFORM_SKILLS_DIR),
    documentIndex: {
      roots: e.PLATFORM_DOCUMENT_INDEX_ROOTS
        ? e.PLATFORM_DOCUMENT_INDEX_ROOTS.split(':').filter(Boolean).map(configuredPath)
        : [path.join(dataDir, 'documents')],
      compactionInterval: positiveInt(
        'PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_INTERVAL',
        e.PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_INTERVAL,
        50,
      ),
      compactionSleepS: nonNegative(
        'PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_SLEEP_S',
        e.PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_SLEEP_S ?? '0.5',
      ),
      compactionMaxRetries: positiveInt(
        'PLATFORM_DOCUMENT_INDEX_COMPACTION_MAX_RETRIES',
        e.PLATFORM_DOCUMENT_INDEX_COMPACTION_MAX_RETRIES,
        3,
      ),
      vectorCacheMb: nonNegative(
        'PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB',
        e.PLATFORM_DOCUMENT_INDEX_VECTOR_CACHE_MB ?? String(defaultVectorCacheMb()),
      ),
      hnswBuildMemoryMb: positiveInt(
        'PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB',
        e.PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB,
        1024,
      ),
      hnswBuildWorkers: nonNegative(
        'PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_WORKERS',
        e.PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_WORKERS ?? '2',
      ),
      hnswEfSearch: positiveInt(
        'PLATFORM_DOCUMENT_INDEX_HNSW_EF_SEARCH',
        e.PLATFORM_DOCUMENT_INDEX_HNSW_EF_SEARCH,
        100,
      ),
      hnswMinRows: nonNegative(
        'PLATFORM_DOCUMENT_INDEX_HNSW_MIN_ROWS',
        e.PLATFORM_DOCUMENT_INDEX_HNSW_MIN_ROWS ?? '2000',
      ),
      hnswOnly: truthy(e.PLATFORM_DOCUMENT_INDEX_HNSW_ONLY),
    },
    llm: {
      baseUrl: operatorEndpoint('PLATFORM_LLM_BASE_URL', e.PLATFORM_LLM_BASE_URL),
      apiKey: e.PLATFORM_LLM_API_KEY,
      model: e.PLATFORM_LLM_MODEL,
      timeoutSeconds: positiveInt('PLATFORM_LLM_TIMEOUT_SECONDS', e.PLATFORM_LLM_TIMEOUT_SECONDS, 120),
      inputUsdPerMtok: nonNegative('PLATFORM_LLM_INPUT_USD_PER_MTOK', e.PLATFORM_LLM_INPUT_USD_PER_MTOK),
      outputUsdPerMtok: nonNegative('PLATFORM_LLM_OUTPUT_USD_PER_MTOK', e.PLATFORM_LLM_OUTPUT_USD_PER_MTOK),
      // Spec Limits: vector inserts in batches of 64.
      reindexBatchSize: positiveInt(
        'PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE',
        e.PLATFORM_EMBEDDING_REINDEX_BATCH_SIZE,
        64,
      ),
    },
    actionReview: {
      sweepIntervalSeconds: positiveInt(
        'ACTION_REVIEW_SWEEP_INTERVAL_SECONDS',
        e.ACTION_REVIEW_SWEEP_INTERVAL_SECONDS,
        600,
      ),
      maxProposalBytes: positiveInt('ACTION_REVIEW_MAX_PROPOSAL_BYTES', e.ACTION_REVIEW_MAX_PROPOSAL_BYTES, 256 * 1024),
      effectTimeoutSeconds: positiveInt(
        'ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS',
        e.ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS,
        600,
      ),
      effectHeartbeatSeconds: positiveInt(
        'ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS',
        e.ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS,
        30,
      ),
      handbackMaxAttempts: positiveInt(
        'ACTION_REVIEW_HANDBACK_MAX_ATTEMPTS',
        e.ACTION_REVIEW_HANDBACK_MAX_ATTEMPTS,
        20,
      ),
      localCliAllowedCommands: (e.LOCAL_CLI_ALLOWED_COMMANDS ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
      localCliTimeoutSeconds: positiveInt('LOCAL_CLI_TIMEOUT_SECONDS', e.LOCAL_CLI_TIMEOUT_SECONDS, 120),
      ticketTrackerUrl: operatorEndpoint('TICKET_TRACKER_URL', e.TICKET_TRACKER_URL),
      ticketTrackerToken: e.TICKET_TRACKER_TOKEN,
    },
    logLevel: logLevel as AppConfig['logLevel'],
    observability: {
      workerMetricsAddress: hostPort('TEMPORAL_WORKER_METRICS_ADDRESS', e.TEMPORAL_WORKER_METRICS_ADDRESS),
      otlpEndpoint: operatorEndpoint('OTEL_EXPORTER_OTLP_ENDPOINT', e.OTEL_EXPORTER_OTLP_ENDPOINT),
    },
    secrets: {
      key: e.PLATFORM_SECRETS_KEY,
      keyFile: path.join(dataDir, 'secrets.key'),
      resealBatchSize: positiveInt('PLATFORM_SECRETS_RESEAL_BATCH_SIZE', e.PLATFORM_SECRETS_RESEAL_BATCH_SIZE, 100),
      resealPauseMs: nonNegative('PLATFORM_SECRETS_RESEAL_PAUSE_MS', e.PLATFORM_SECRETS_RESEAL_PAUSE_MS),
    },
    containerServiceMode,
    managedSources: {
      dir: path.join(dataDir, 'managed-sources'),
    },
    blueprints: {
      dir: e.PLATFORM_BLUEPRINTS_DIR ? configuredPath(e.PLATFORM_BLUEPRINTS_DIR) : path.join(dataDir, 'blueprints'),
      wizardTimeoutMs: positiveInt(
        'PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS',
        e.PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS,
        20_000,
      ),
    },
    mesh: {
      authKeyFile: e.PLATFORM_MESH_AUTH_KEY_FILE
        ? configuredPath(e.PLATFORM_MESH_AUTH_KEY_FILE)
        : path.join(dataDir, 'mesh-auth.key'),
    },
    egress: {
      allowPrivate: truthy(e.PLATFORM_EGRESS_ALLOW_PRIVATE),
      // CRM_ALLOW_INSECURE_LOOPBACK opens loopback for CRM hosts only (crmEgress).
      allowLoopback: false,
      containerService: containerServiceMode,
    },
    license: {
      publicKey: e.PLATFORM_LICENSE_PUBLIC_KEY,
      enforcementDisabled: truthy(e.PLATFORM_LICENSE_ENFORCEMENT_DISABLED),
    },
    aws: {
      accessKeyId: e.AWS_ACCESS_KEY_ID,
      secretAccessKey: e.AWS_SECRET_ACCESS_KEY,
      sessionToken: e.AWS_SESSION_TOKEN,
      bedrockRuntimeEndpoint: operatorEndpoint('AWS_ENDPOINT_URL_BEDROCK_RUNTIME', e.AWS_ENDPOINT_URL_BEDROCK_RUNTIME),
      stsEndpoint: operatorEndpoint('AWS_ENDPOINT_URL_STS', e.AWS_ENDPOINT_URL_STS),
    },
    crm: {
      allowInsecureLoopback: truthy(e.CRM_ALLOW_INSECURE_LOOPBACK),
      maxApprovalTtlSeconds: positiveInt('CRM_MAX_APPROVAL_TTL_SECONDS', e.CRM_MAX_APPROVAL_TTL_SECONDS, 86_400),
    },
  };
}

/** A configured file or folder, absolute: a relative one is relative to the project root (whatever the cwd). */
const configuredPath = (raw: string): string => fromProjectRoot(raw);

/** `PLATFORM_DATA_DIR` (default `.data`) as an absolute path; `npm start` (scripts/lib/paths.ts) uses the same. */
export function dataDirOf(env: NodeJS.ProcessEnv): string {
  const raw = env.PLATFORM_DATA_DIR?.trim();
  return configuredPath(raw ? raw : '.data');
}

/**
 * An operator endpoint (shared/http/trust.ts): an http(s) URL whose host the operator policy can
 * reach (loopback and private allowed; link-local and cloud metadata never), kept without trailing
 * slashes. Anything else stops the start naming the variable, instead of failing every request later.
 */
function operatorEndpoint(name: string, raw: string | undefined): string | undefined {
  return operatorUrl(name, raw)?.replace(/\/+$/, '');
}

/** Parses an operator-set URL; `problem` says what a value that is no URL at all fails to be. */
function parsedUrl(name: string, raw: string, problem: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new ConfigError(`${name} ${problem} (got "${raw}")`);
  }
}

/** An operator endpoint kept exactly as written (a JWKS URL's path is the provider's). */
function operatorUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const url = parsedUrl(name, raw, 'must be an http(s) URL');
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name} must be an http(s) URL (got "${raw}")`);
  const refusal = operatorEndpointRefusal(raw);
  if (refusal) throw new ConfigError(`${name} is not allowed for outbound requests: ${refusal} (got "${raw}")`);
  return raw;
}

/**
 * `AUTH_ISSUER` is compared with the tokens' `iss` as written. An http(s) issuer is where discovery
 * is fetched (OAuth proxy, console sign-in): an operator endpoint, checked as one. The OAuth proxy
 * needs one.
 */
function issuerOf(raw: string | undefined, oauthProxyEnabled: boolean): string | undefined {
  if (raw === undefined || (!oauthProxyEnabled && !/^https?:\/\//i.test(raw))) return raw;
  return operatorUrl('AUTH_ISSUER', raw);
}

/** Keeps the variables settings read; a run-time setting's variable must parse as its type. */
function settingsEnvOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of SETTING_ENV_NAMES) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') kept[name] = value;
  }
  for (const path of SETTING_PATHS) {
    const def = settingDef(path);
    if (!def.writable || !def.env || kept[def.env] === undefined) continue;
    try {
      def.kind.fromEnv(kept[def.env]!);
    } catch (err) {
      throw new ConfigError(`${def.env} (${path}) ${(err as Error).message}`);
    }
  }
  return kept;
}

/** `host:port` (IPv6 hosts in brackets), as a listener's bind address. */
function hostPort(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(raw);
  if (!m || Number(m[2]) > 65535) throw new ConfigError(`${name} must be host:port, e.g. 0.0.0.0:9464 (got "${raw}")`);
  return raw;
}

/**
 * The exact vector path's default cache budget (MB): an eighth of the memory the process may use (the
 * machine's, or the container's limit when lower), at least 512 MB. A million chunks of the local hashing
 * embedder take about 600 MB as posting lists, so a machine of 5 GB or more keeps them without a setting.
 */
export function defaultVectorCacheMb(totalBytes = memoryLimitBytes()): number {
  return Math.max(512, Math.floor(totalBytes / 8 / 2 ** 20));
}

function memoryLimitBytes(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  return limit > 0 ? Math.min(limit, os.totalmem()) : os.totalmem();
}

function nonNegative(name: string, raw: string | undefined): number {
  if (raw === undefined) return 0;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new ConfigError(`${name} must be a number >= 0 (got "${raw}")`);
  return n;
}

function unavailablePolicy(value: string | undefined): AppConfig['gateway']['defaultAgentUnavailablePolicy'] {
  if (value === undefined) return undefined;
  if (value === 'require_selection' || value === 'first_available') return value;
  throw new ConfigError(
    `PLATFORM_MCP_DEFAULT_AGENT_UNAVAILABLE_POLICY must be require_selection or first_available (got "${value}")`,
  );
}

/**
 * The public URL's origin (only the origin is used: the gateway lives at <origin>/mcp/). It must be
 * HTTPS; plain http is accepted for loopback hosts only (local runs and tests).
 */
function publicOriginOf(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const url = parsedUrl(name, raw, 'is not a URL');
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new ConfigError(`${name} must be an https:// URL (plain http only for loopback), got "${raw}"`);
  }
  return url.origin;
}

export { truthy as isTruthy };
