/**
 * Worker metrics come from the Temporal SDK Runtime's own Prometheus endpoint, on its own port
 * (TEMPORAL_WORKER_METRICS_ADDRESS, off by default), in a worker process of its own (the Runtime is
 * installed once per process). After an echo job it reports task slots, schedule-to-start latency
 * and activity executions; every worker metric the provisioned dashboard queries is served.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/lib/net.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

let stack: Stack;
let worker: WorkerProcess;
let metricsUrl: string;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  worker = spawnWorkerProcess({
    DATABASE_URL: stack.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    TEMPORAL_WORKER_METRICS_ADDRESS: `127.0.0.1:${port}`,
  });
  await worker.ready;
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
});

/** Metric family names a PromQL expression refers to (`temporal_…`). */
const temporalNames = (expr: string) => [...expr.matchAll(/\b(temporal_[a-z_]+)/g)].map((m) => m[1]!);

describe('worker Prometheus endpoint', () => {
  it('serves the SDK metrics after a job, including those the dashboard queries', async () => {
    const res = await http(stack.url, 'POST', '/api/jobs/echo', { body: { message: 'measured' } });
    expect(res.status).toBe(200);
    const expected = [
      'temporal_worker_task_slots_available',
      'temporal_activity_schedule_to_start_latency_seconds',
      'temporal_workflow_task_schedule_to_start_latency_seconds',
      'temporal_activity_execution_latency_seconds',
      'temporal_workflow_completed_total',
    ];
    // The job's result reaches the API when the server has recorded the completion, which can be a moment
    // before the worker counts it: scrape until every expected family is served (10 s at most).
    let text = '';
    let families = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const scraped = await fetch(metricsUrl);
      expect(scraped.status).toBe(200);
      text = await scraped.text();
      families = new Set(
        text
          .split('\n')
          .filter((l) => l.startsWith('# TYPE '))
          .map((l) => l.split(' ')[2]!),
      );
      if (expected.every((name) => families.has(name))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const name of expected) expect(families, name).toContain(name);
    expect(text).toContain(`task_queue="${stack.config.temporal.taskQueue}"`);

    // The dashboard's worker panels: histogram and counter families the endpoint serves (failure
    // counters appear once something fails, so they are checked by name shape only).
    const dashboard = JSON.parse(
      readFileSync(
        new URL('../../temporal-config/observability/grafana/dashboards/platform.json', import.meta.url),
        'utf8',
      ),
    ) as { panels: { targets: { expr: string }[] }[] };
    const queried = dashboard.panels.flatMap((p) => p.targets.flatMap((t) => temporalNames(t.expr)));
    expect(queried.length).toBeGreaterThan(0);
    for (const name of queried) {
      const family = name.replace(/_bucket$/, '');
      if (/_failed_total$/.test(family))
        expect(family).toMatch(/^temporal_(activity_execution|workflow)_failed_total$/);
      else expect(families, name).toContain(family);
    }
  });
});
