import { createLogger, type Logger } from '../../shared/log.js';
import { loadConfig, type AppConfig } from '../../shared/config.js';
import { startApi, type RunningApi } from '../../api/server.js';
import { inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from './db.js';
import { watchStatusContract } from './status-contract.js';
import { startWorker, uniqueTaskQueue, type RunningWorker } from './temporal.js';

export interface StackOptions {
  /** Extra environment (AUTH_PROVIDER, tokens, limits…), as a deployment would set it. */
  env?: Record<string, string>;
  /** Run a worker for the stack's task queue (default true). */
  worker?: boolean;
  /** Collect log lines (structured JSON) instead of discarding them. */
  logLines?: string[];
}

export interface Stack {
  url: string;
  config: AppConfig;
  db: TestDatabase;
  api: RunningApi;
  worker: RunningWorker | undefined;
  log: Logger;
  close(): Promise<void>;
}

/** The API over real HTTP on an ephemeral port, a worker, its own database and task queue. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const db = await createTestDatabase();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '4',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue(),
    AUTH_PROVIDER: 'none',
    // The fakes (model, tracker, Git server, CRM) listen on loopback: allow it, as a local run would
    // (PLATFORM_EGRESS_ALLOW_PRIVATE for administrator-saved endpoints, the CRM flag for CRM hosts).
    PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
    CRM_ALLOW_INSECURE_LOOPBACK: 'true',
    ...options.env,
  });
  const lines = options.logLines;
  const log = createLogger({ level: lines ? 'debug' : 'error', sink: lines ? (line) => lines.push(line) : () => {} });
  const api = await startApi(config, log);
  const contract = watchStatusContract(api.server);
  const worker = options.worker === false ? undefined : await startWorker({ orm: api.deps.orm, config, log });
  const stack: Stack = {
    url: api.url,
    config,
    db,
    api,
    worker,
    log,
    async close() {
      // A test may have replaced the worker (to simulate a restart): stop whichever runs now.
      await stack.worker?.stop();
      await api.close();
      await db.drop();
      const violations = contract.violations();
      if (violations.length)
        throw new Error(
          `Response contract violations (undocumented statuses, success false in a 2xx, tool results off the rule):\n${violations.join('\n')}`,
        );
    },
  };
  return stack;
}

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** One HTTP call; the body is sent as JSON unless `raw` is given. */
export async function http<T = Record<string, any>>(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; token?: string } = {},
): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}
