/**
 * The backbone's overhead: the echo lifecycle (workflow + activity writing a PostgreSQL row) through
 * the HTTP API (request id, auth, validation, ORM read-back) versus the bare Temporal client.
 */
import { randomUUID } from 'node:crypto';
import { measure, measurePair, report } from './lib/measure.js';
import type { BenchStack } from './lib/stack.js';
import { workflowRef } from '../shared/temporal/workflow-refs.js';

export async function benchEcho(stack: BenchStack, count: number, concurrency: number): Promise<string> {
  const run = randomUUID().slice(0, 8);
  // Warm both paths (workflow bundle caches, pool connections).
  await measure('warm-up', 20, 4, async (i) => {
    await stack.bareClient.workflow.execute(workflowRef('echoWorkflow'), {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `echo/warm-${run}-${i}`,
      args: [{ jobId: `warm-${run}-${i}`, tenant: 'default', message: 'warm', requestedBy: 'bench' }],
    });
  });
  const bare = {
    label: 'bare Temporal client',
    op: async (i: number) => {
      const jobId = `bare-${run}-${i}`;
      await stack.bareClient.workflow.execute(workflowRef('echoWorkflow'), {
        taskQueue: stack.config.temporal.taskQueue,
        workflowId: `echo/${jobId}`,
        args: [{ jobId, tenant: 'default', message: 'bench', requestedBy: 'bench' }],
      });
    },
  };
  const viaApi = {
    label: 'HTTP API',
    op: async (i: number) => {
      const res = await fetch(`${stack.api.url}/api/jobs/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'bench', job_id: `api-${run}-${i}` }),
      });
      if (res.status !== 200) throw new Error(`echo answered ${res.status}: ${await res.text()}`);
    },
  };
  const [api, baseline] = await measurePair(viaApi, bare, count, concurrency);
  return report(`Echo lifecycle, ${count} runs at concurrency ${concurrency}`, api, baseline);
}
