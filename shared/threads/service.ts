import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { resolveDefaultAgent } from '../agents/default-agent.js';
import { defaultAgentSettings } from '../agents/gateway-settings.js';
import { agentsNamed, listUsableAgents } from '../agents/registry.js';
import type { Principal } from '../auth/principal.js';
import type { AgentRow } from '../db/entities/index.js';
import { ConflictError, ForbiddenError, LlmFailureError, NotFoundError } from '../errors.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { createThread, deleteThread, getOwnThread, listMessages, type ThreadRecord } from './store.js';
import { postMessageUpdate, threadWorkflowId, type TurnResult } from '../../workflows/thread-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { AgentCodes } from '../agents/error-codes.js';
import { followThreadEvents, ThreadEventHub, type ThreadEvent } from './events.js';

/** New gateway thread ids: `mcp_` + 32 lowercase hex (spec, Hosted gateway). */
export const newMcpThreadId = () => `mcp_${randomBytes(16).toString('hex')}`;

/** The agent a new thread talks to: the one named (if the caller may use it), else the default. */
export async function chooseAgent(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  agentId?: string,
): Promise<AgentRow> {
  const usable = await listUsableAgents(em, principal);
  if (agentId) {
    // An imported agent answers to its manifest id too, as long as only one source imported that id.
    const named = agentsNamed(usable, agentId);
    if (!named.length) throw new NotFoundError(`No agent ${agentId} is available to you; list_agents shows yours.`);
    if (named.length > 1)
      throw new ConflictError(`Agent id ${agentId} names ${named.length} agents; pass one of their ids.`, {
        code: AgentCodes.ambiguous_agent_id,
        agent_id: agentId,
        candidates: named.map((a) => ({ agent_id: a.id, name: a.name })),
      });
    return named[0]!;
  }
  const resolved = resolveDefaultAgent(usable, await defaultAgentSettings(em, deps.config, principal.tenant));
  if (resolved.ok) return resolved.agent;
  if (resolved.code === AgentCodes.no_accessible_agent)
    throw new ForbiddenError(resolved.message, { code: resolved.code });
  throw new ConflictError(resolved.message, {
    code: resolved.code,
    available_agents: usable.map((a) => ({ agent_id: a.id, name: a.name })),
  });
}

export interface StartThreadInput {
  agentId?: string;
  callerPersona?: string;
  callerGoal?: string;
  initialPrompt: string;
  origin: string;
}

/** Creates the caller's thread with the chosen agent, without a turn yet. */
export async function openThread(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: Omit<StartThreadInput, 'initialPrompt'> & { title?: string | null },
) {
  const agent = await chooseAgent(deps, em, principal, input.agentId);
  const thread = await createThread(em, {
    id: newMcpThreadId(),
    tenant: principal.tenant,
    agentId: agent.id,
    ownerId: principal.id,
    origin: input.origin,
    callerPersona: input.callerPersona ?? null,
    callerGoal: input.callerGoal ?? null,
    title: input.title ?? null,
  });
  return { thread, agent };
}

/** Creates the caller's thread and runs its first turn. */
export async function startThread(deps: AppDeps, em: EntityManager, principal: Principal, input: StartThreadInput) {
  const { thread, agent } = await openThread(deps, em, principal, {
    ...input,
    title: input.initialPrompt.slice(0, 120),
  });
  try {
    const turn = await postMessage(deps, principal, thread, input.initialPrompt);
    return { thread, agent, turn };
  } catch (err) {
    // A create that failed leaves nothing behind: no running thread workflow, no thread row.
    await discardThread(deps, em, thread.id).catch((cleanup: unknown) =>
      deps.log.error('a failed thread_create could not discard its thread', {
        thread_id: thread.id,
        error: (cleanup as Error).message,
      }),
    );
    throw err;
  }
}

/** Stops a thread's workflow (if it started) and deletes its row with its messages. */
async function discardThread(deps: AppDeps, em: EntityManager, threadId: string) {
  await deps.temporal.workflow
    .getHandle(threadWorkflowId(threadId))
    .terminate('the thread_create that started it failed')
    .catch((err: unknown) => {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    });
  await deleteThread(em, threadId);
}

/**
 * One turn: update-with-start on `thread/<id>` (the first message starts the workflow, later ones
 * reuse it), answered with the agent's reply. A classified model failure becomes `llm_error`.
 */
export async function postMessage(
  deps: AppDeps,
  principal: Principal,
  thread: ThreadRecord,
  content: string,
  messageId: string = randomUUID(),
) {
  const startWorkflowOperation = new WithStartWorkflowOperation(workflowRef('threadWorkflow'), {
    workflowId: threadWorkflowId(thread.id),
    taskQueue: deps.config.temporal.taskQueue,
    args: [{ threadId: thread.id, tenant: thread.tenant, agentId: thread.agentId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: lifecycleSearchAttributes('threadWorkflow', {
      tenant: thread.tenant,
      resourceId: thread.id,
      status: 'idle',
    }),
    memo: { agent_id: thread.agentId, owner: thread.ownerId, origin: thread.origin },
  });
  const result: TurnResult = await deps.temporal.workflow.executeUpdateWithStart(postMessageUpdate, {
    args: [{ messageId, content, authorKind: principal.kind, authorId: principal.id }],
    startWorkflowOperation,
  });
  if (!result.ok) throw new LlmFailureError(result.llmFailure);
  return { ...result, turnId: messageId };
}

/** The caller's own thread with its messages (others' threads answer 404). */
export async function readThread(em: EntityManager, principal: Principal, threadId: string) {
  const thread = await getOwnThread(em, principal, threadId);
  const messages = await listMessages(em, thread.id);
  return { thread, messages };
}

/** This process's thread-event hub, created on first use (closed with the API). */
export function threadEventHub(deps: AppDeps): ThreadEventHub {
  // The ORM's own address: the API cannot run without it (api/server.ts refuses an unset DATABASE_URL).
  return (deps.threadEvents ??= new ThreadEventHub(deps.config.databaseUrl ?? deps.orm.config.get('clientUrl') ?? ''));
}

/**
 * The caller's own thread's events after id `after`, then each new one as the worker writes it, until
 * `signal` aborts (another person's thread answers 404 before anything is streamed).
 */
export async function followOwnThread(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  threadId: string,
  after: number,
): Promise<(signal: AbortSignal) => AsyncGenerator<ThreadEvent>> {
  const thread = await getOwnThread(em, principal, threadId);
  return (signal) => followThreadEvents(em, threadEventHub(deps), thread.id, after, signal);
}
