/**
 * Agent thread turns through the MCP gateway (Streamable HTTP, auth, `platform` tool dispatch,
 * update-with-start) versus the bare workflow Update path (no MCP, no HTTP), both against the same
 * local OpenAI-compatible fake model, so the ratio is the gateway's overhead.
 */
import { randomUUID } from 'node:crypto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { createThread } from '../shared/threads/store.js';
import { postMessageUpdate, threadWorkflowId } from '../workflows/thread-definitions.js';
import { measure, measurePair, report } from './lib/measure.js';
import type { BenchStack } from './lib/stack.js';
import { workflowRef } from '../shared/temporal/workflow-refs.js';

export async function mcpClient(url: string): Promise<McpClient> {
  const client = new McpClient({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url + '/mcp/v2/')));
  return client;
}

export async function call(client: McpClient, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name: 'platform', arguments: args })) as CallToolResult;
  const text = result.content.find((c) => c.type === 'text');
  if (result.isError || !text || !('text' in text))
    throw new Error(`platform ${String(args.action)} failed: ${JSON.stringify(result.content)}`);
  return JSON.parse(text.text) as Record<string, unknown>;
}

export async function benchThreads(stack: BenchStack, count: number, concurrency: number): Promise<string> {
  const { temporal, config, orm } = stack.api.deps;
  // One thread per concurrent client: turns of one thread run one at a time by design.
  const bareThreads = await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const id = `bench_${randomUUID().replace(/-/g, '')}`;
      return createThread(orm.em.fork(), {
        id,
        tenant: 'default',
        agentId: 'eve',
        ownerId: 'local-admin',
        origin: 'bench',
        callerPersona: null,
        callerGoal: null,
        title: null,
      });
    }),
  );
  const bareTurn = async (i: number) => {
    const thread = bareThreads[i % concurrency]!;
    const result = await temporal.workflow.executeUpdateWithStart(postMessageUpdate, {
      args: [{ messageId: randomUUID(), content: `turn ${i}`, authorKind: 'person', authorId: 'local-admin' }],
      startWorkflowOperation: new WithStartWorkflowOperation(workflowRef('threadWorkflow'), {
        workflowId: threadWorkflowId(thread.id),
        taskQueue: config.temporal.taskQueue,
        args: [{ threadId: thread.id, tenant: 'default', agentId: 'eve' }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    if (!result.ok) throw new Error(`turn failed: ${result.llmFailure.kind}`);
  };
  const clients = await Promise.all(Array.from({ length: concurrency }, () => mcpClient(stack.api.url)));
  const mcpThreads = await Promise.all(
    clients.map(
      async (c) => (await call(c, { action: 'thread_create', initial_prompt: 'warm-up' })).platform_thread_id as string,
    ),
  );
  await measure('warm-up', concurrency * 2, concurrency, bareTurn);
  try {
    const [gateway, bare] = await measurePair(
      {
        label: 'MCP thread_continue',
        op: async (i) => {
          await call(clients[i % concurrency]!, {
            action: 'thread_continue',
            platform_thread_id: mcpThreads[i % concurrency],
            message: `turn ${i}`,
          });
        },
      },
      { label: 'bare workflow Update', op: bareTurn },
      count,
      concurrency,
    );
    return report(`Agent thread turns, ${count} turns over ${concurrency} threads (fake model)`, gateway, bare);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}
