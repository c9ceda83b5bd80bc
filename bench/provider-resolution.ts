/**
 * Issue 10's benchmark: agent thread turns whose model call resolves the tenant's active provider from
 * the store (version read per call, cached resolution, reload on change) against turns on a second
 * worker whose activities hold one fixed client resolved once at start. Same workflow, same fake
 * model, bare workflow Updates (no HTTP), so the ratio is the per-call resolution's overhead.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { ensureBuiltInAgents } from '../shared/agents/registry.js';
import { activeProviders } from '../shared/llm/active-provider.js';
import { workflowRef } from '../shared/temporal/workflow-refs.js';
import { createThread } from '../shared/threads/store.js';
import { workerDefaults, workflowsPath } from '../worker/index.js';
import { postMessageUpdate, threadWorkflowId } from '../workflows/thread-definitions.js';
import { measure, measurePair, report } from './lib/measure.js';
import type { BenchStack } from './lib/stack.js';

export async function benchProviderResolution(
  stack: BenchStack,
  count: number,
  concurrency: number,
  fakeBaseUrl: string,
): Promise<string> {
  const { temporal, config, orm, log } = stack.api.deps;
  const post = (path: string, body: unknown) =>
    fetch(stack.api.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<{ success: boolean; message?: string }>);
  // A saved, active provider, so the store path is the real one (not the env bootstrap).
  const saved = await post('/api/config/llm-providers/other', {
    sub_provider: 'bench',
    base_url: fakeBaseUrl,
    api_key: 'bench-key',
    model_name: 'bench-model',
  });
  const activated = await post('/api/config/llm-providers/other/activate', { sub_provider: 'bench' });
  if (!saved.success || !activated.success)
    throw new Error(`provider setup failed: ${saved.message} ${activated.message}`);
  const tenant = config.auth.deploymentTenant;
  await ensureBuiltInAgents(orm.em.fork(), tenant);
  const fixed = await activeProviders(config).resolve(orm.em.fork(), tenant);
  const fixedQueue = `${config.temporal.taskQueue}-fixed-client`;
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await Worker.create({
    connection,
    taskQueue: fixedQueue,
    workflowsPath,
    activities: createActivities({ orm, config, log, llmProviders: { resolve: () => Promise.resolve(fixed) } }),
    maxConcurrentWorkflowTaskExecutions: 50,
    maxConcurrentActivityTaskExecutions: 50,
    ...workerDefaults,
  });
  const running = worker.run();
  const threads = async () =>
    Promise.all(
      Array.from({ length: concurrency }, () =>
        createThread(orm.em.fork(), {
          id: `bench_${randomUUID().replace(/-/g, '')}`,
          tenant,
          agentId: 'eve',
          ownerId: 'local-admin',
          origin: 'bench',
          callerPersona: null,
          callerGoal: null,
          title: null,
        }),
      ),
    );
  const [storeThreads, fixedThreads] = await Promise.all([threads(), threads()]);
  const turn = (list: typeof storeThreads, taskQueue: string) => async (i: number) => {
    const thread = list[i % concurrency]!;
    const result = await temporal.workflow.executeUpdateWithStart(postMessageUpdate, {
      args: [{ messageId: randomUUID(), content: `turn ${i}`, authorKind: 'person', authorId: 'local-admin' }],
      startWorkflowOperation: new WithStartWorkflowOperation(workflowRef('threadWorkflow'), {
        workflowId: threadWorkflowId(thread.id),
        taskQueue,
        args: [{ threadId: thread.id, tenant, agentId: 'eve' }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    if (!result.ok) throw new Error(`turn failed: ${result.llmFailure.kind}`);
  };
  const storeTurn = turn(storeThreads, config.temporal.taskQueue);
  const fixedTurn = turn(fixedThreads, fixedQueue);
  try {
    await measure('warm-up store', concurrency * 2, concurrency, storeTurn);
    await measure('warm-up fixed', concurrency * 2, concurrency, fixedTurn);
    const [store, fixedClient] = await measurePair(
      { label: 'provider resolved from the store per call', op: storeTurn },
      { label: 'fixed client', op: fixedTurn },
      count,
      concurrency,
    );
    return report(
      `Provider resolution per model call, ${count} thread turns over ${concurrency} threads (fake model)`,
      store,
      fixedClient,
    );
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
}
