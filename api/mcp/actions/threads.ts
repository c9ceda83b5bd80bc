import { z } from 'zod';
import { openThread, postMessage, readThread, startThread } from '../../../shared/threads/service.js';
import { getOwnThread, updateCallerGoal } from '../../../shared/threads/store.js';
import { defineMcpAction, type McpActionContext } from './registry.js';
import { signDownload } from '../../../shared/downloads/signed-urls.js';
import { filesOfTurn } from '../../../shared/threads/store.js';
import { toIso } from '../../../shared/dates.js';

/** How long a file link an agent produced stays valid (single use either way). */
export const FILE_LINK_TTL_SECONDS = 600;

/** Signed, single-use links to the files the agent wrote during this turn. */
async function fileLinks(ctx: McpActionContext<unknown>, threadId: string, turnId: string) {
  const files = await filesOfTurn(ctx.em, threadId, turnId);
  return Promise.all(
    files.map(async (f) => ({
      name: f.name,
      download_url: await signDownload(ctx.deps.config, {
        fileId: f.fileId,
        tenant: ctx.principal.tenant,
        ttlSeconds: FILE_LINK_TTL_SECONDS,
        publicOrigin: ctx.gateway.publicOrigin,
      }),
      expires_in_seconds: FILE_LINK_TTL_SECONDS,
      single_use: true,
    })),
  );
}

/** Tag of threads opened through the gateway (spec: new v2 threads are tagged `mcp_origin`). */
export const MCP_ORIGIN = 'mcp_origin';
const ThreadId = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'a platform_thread_id returned by thread_create');
const Text = (max: number) => z.string().trim().min(1).max(max);

/** What thread_create and start_thread take to choose the agent and frame the thread. */
const openParams = {
  caller_persona: Text(2_000).optional(),
  caller_goal: Text(2_000).optional(),
  agent_id: z.string().min(1).max(200).optional(),
};

function openOptions(params: { caller_persona?: string; caller_goal?: string; agent_id?: string }) {
  return {
    agentId: params.agent_id,
    callerPersona: params.caller_persona,
    callerGoal: params.caller_goal,
    origin: MCP_ORIGIN,
  };
}

/** What a turn answers: the agent's reply, its tool calls and links to the files it wrote. */
async function turnAnswer(
  ctx: McpActionContext<unknown>,
  threadId: string,
  turn: Pick<Awaited<ReturnType<typeof postMessage>>, 'reply' | 'toolCalls' | 'turnId'>,
) {
  return { reply: turn.reply, tool_calls: turn.toolCalls, files: await fileLinks(ctx, threadId, turn.turnId) };
}

export const threadCreateAction = defineMcpAction({
  name: 'thread_create',
  versions: ['v1', 'v2'],
  description:
    'Open a thread with an agent (yours by default) and get its answer to initial_prompt. Keep platform_thread_id to continue.',
  params: z.object({ initial_prompt: Text(20_000), ...openParams }),
  handler: async (ctx) => {
    const { deps, em, principal, params } = ctx;
    const { thread, agent, turn } = await startThread(deps, em, principal, {
      ...openOptions(params),
      initialPrompt: params.initial_prompt,
    });
    return {
      platform_thread_id: thread.id,
      origin: MCP_ORIGIN,
      agent: { agent_id: agent.id, name: agent.name },
      ...(await turnAnswer(ctx, thread.id, turn)),
    };
  },
});

export const startThreadAction = defineMcpAction({
  name: 'start_thread',
  versions: ['v1', 'v2'],
  description:
    'Open an empty thread with an agent (yours by default) without sending a message yet; continue it with thread_continue.',
  params: z.object(openParams),
  handler: async ({ deps, em, principal, params }) => {
    const { thread, agent } = await openThread(deps, em, principal, openOptions(params));
    return { platform_thread_id: thread.id, origin: MCP_ORIGIN, agent: { agent_id: agent.id, name: agent.name } };
  },
});

export const threadContinueAction = defineMcpAction({
  name: 'thread_continue',
  versions: ['v1', 'v2'],
  description: 'Send the next message in one of your threads and get the agent’s reply.',
  params: z.object({ platform_thread_id: ThreadId, message: Text(20_000) }),
  handler: async (ctx) => {
    const { deps, em, principal, params } = ctx;
    const thread = await getOwnThread(em, principal, params.platform_thread_id);
    const turn = await postMessage(deps, principal, thread, params.message);
    return { platform_thread_id: thread.id, ...(await turnAnswer(ctx, thread.id, turn)) };
  },
});

export const threadGetAction = defineMcpAction({
  name: 'thread_get',
  versions: ['v1', 'v2'],
  description: 'One of your threads with its messages.',
  params: z.object({ platform_thread_id: ThreadId }),
  handler: async ({ em, principal, params }) => {
    const { thread, messages } = await readThread(em, principal, params.platform_thread_id);
    return {
      platform_thread_id: thread.id,
      agent_id: thread.agentId,
      origin: thread.origin,
      caller_persona: thread.callerPersona,
      caller_goal: thread.callerGoal,
      created_at: toIso(thread.createdAt),
      messages: messages.map((m) => ({
        role: m.role,
        author: m.authorId,
        content: m.content,
        created_at: toIso(m.createdAt),
      })),
    };
  },
});

export const updateGoalAction = defineMcpAction({
  name: 'update_goal',
  versions: ['v1', 'v2'],
  description: 'Change the goal you pursue in one of your threads; the agent sees it from the next turn.',
  params: z.object({ platform_thread_id: ThreadId, caller_goal: Text(2_000) }),
  handler: async ({ em, principal, params }) => {
    const thread = await getOwnThread(em, principal, params.platform_thread_id);
    await updateCallerGoal(em, thread.id, params.caller_goal);
    return { platform_thread_id: thread.id, caller_goal: params.caller_goal };
  },
});

export const askAction = defineMcpAction({
  name: 'ask',
  versions: ['v1'],
  description: 'Legacy one-shot question to your default agent (opens a thread you may continue).',
  params: z.object({ question: Text(20_000), agent_id: z.string().min(1).max(200).optional() }),
  handler: async ({ deps, em, principal, params }) => {
    const { thread, agent, turn } = await startThread(deps, em, principal, {
      agentId: params.agent_id,
      initialPrompt: params.question,
      origin: MCP_ORIGIN,
    });
    return { answer: turn.reply, platform_thread_id: thread.id, agent: { agent_id: agent.id, name: agent.name } };
  },
});
