/**
 * One trace from an HTTP call through the workflow start, the workflow and its activities, collected
 * by an in-memory exporter: the caller's `traceparent` is continued, and the access log line carries
 * the trace id next to the request id. Tracing off registers nothing (no HTTP span, no headers).
 */
import { randomBytes } from 'node:crypto';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { buildDeps, startApi, type RunningApi } from '../../api/server.js';
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/log.js';
import { startTracing, temporalWorkerPlugins, type Tracing } from '../../shared/observability/tracing.js';
import { workerDefaults, workflowsPath } from '../../worker/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { installQuietRuntime, uniqueTaskQueue } from '../helpers/temporal.js';

let db: TestDatabase;
let api: RunningApi;
let worker: Worker;
let running: Promise<void>;
let connection: NativeConnection;
let tracing: Tracing;
const exporter = new InMemorySpanExporter();
const lines: string[] = [];

beforeAll(async () => {
  installQuietRuntime();
  tracing = startTracing({ serviceName: 'platform-test', exporter })!;
  db = await createTestDatabase();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '4',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue(),
    AUTH_PROVIDER: 'none',
  });
  const log = createLogger({ level: 'info', sink: (line) => lines.push(line) });
  api = await startApi(config, log, await buildDeps(config, log, { tracing }));
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  // Bundled here (not the suite's prebuilt bundle): the plugin adds its workflow interceptors to the bundle.
  worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowsPath,
    activities: createActivities({ orm: api.deps.orm, config, log }),
    ...workerDefaults,
    plugins: temporalWorkerPlugins(tracing),
  });
  running = worker.run();
});

afterAll(async () => {
  if (worker?.getState() === 'RUNNING') worker.shutdown();
  await running;
  await connection?.close();
  await api?.close();
  await api?.deps.orm.close();
  await api?.deps.temporalConnection.close();
  await db?.drop();
  await tracing?.shutdown();
});

describe('traces', () => {
  it('follows an echo job from the HTTP request through the workflow to its activity, under the caller trace', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentSpanId = randomBytes(8).toString('hex');
    const res = await http(api.url, 'POST', '/api/jobs/echo', {
      body: { message: 'traced' },
      headers: { traceparent: `00-${traceId}-${parentSpanId}-01` },
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id');

    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const names = spans.map((s) => s.name);
    const byName = (prefix: string) => spans.find((s) => s.name.startsWith(prefix)) as ReadableSpan;
    expect(names).toContain('POST /api/jobs/echo');
    for (const prefix of ['StartWorkflow:echoWorkflow', 'RunWorkflow:echoWorkflow', 'StartActivity:', 'RunActivity:'])
      expect(byName(prefix), `${prefix} in ${names.join(', ')}`).toBeDefined();

    // Parentage: the HTTP span continues the caller's span, the workflow start is its child.
    const httpSpan = byName('POST /api/jobs/echo');
    expect(httpSpan.parentSpanId).toBe(parentSpanId);
    expect(httpSpan.attributes).toMatchObject({
      'http.route': '/api/jobs/echo',
      'http.response.status_code': 200,
      'platform.request_id': requestId,
    });
    expect(byName('StartWorkflow:echoWorkflow').parentSpanId).toBe(httpSpan.spanContext().spanId);
    const runActivity = byName('RunActivity:');
    const startActivity = byName('StartActivity:');
    expect(runActivity.parentSpanId).toBe(startActivity.spanContext().spanId);

    // The access log line names both the request and the trace.
    const access = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.request_id === requestId);
    expect(access).toMatchObject({ trace_id: traceId, path: '/api/jobs/echo', status: 200 });
  });

  it('starts a new trace when the caller sends none', async () => {
    const before = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().spanId));
    const res = await http(api.url, 'GET', '/healthz');
    expect(res.status).toBe(200);
    const span = exporter
      .getFinishedSpans()
      .find((s) => !before.has(s.spanContext().spanId) && s.name === 'GET /healthz');
    expect(span).toBeDefined();
    expect(span!.parentSpanId).toBeUndefined();
  });
});
