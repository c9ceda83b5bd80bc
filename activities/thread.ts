import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Principal } from '../shared/auth/principal.js';
import { adoptedLearningsFor, learningsBlock } from '../shared/action-review/learnings.js';
import { AgentRowEntity } from '../shared/db/entities/index.js';
import { activeProviders } from '../shared/llm/active-provider.js';
import { LlmError, type ChatMessage, type ToolCall } from '../shared/llm/client.js';
import { appendMessage, findThread, listMessages } from '../shared/threads/store.js';
import { appendThreadEvent, type ThreadEventData } from '../shared/threads/events.js';
import { withHeartbeat } from './heartbeat.js';
import type { ActivityDeps } from './deps.js';

/** Which model call of which turn: the round of a turn (a turn's id is its user message's id). */
interface TurnStep {
  threadId: string;
  agentId: string;
  tenant: string;
  turnId: string;
  round: number;
  toolsDisabled: boolean;
}

export interface ModelStep {
  content: string | null;
  toolCalls: ToolCall[];
  messageId: string;
}

/** Thread turns: record the user's message, ask the model, run the tools it asks for. Each write is keyed, so retries never duplicate. */
export function createThreadActivities(deps: ActivityDeps) {
  /** One turn event for the thread's followers (`GET /api/threads/{id}/events`); a retried write is a no-op. */
  const emit = (threadId: string, turnId: string, key: string, event: ThreadEventData) =>
    appendThreadEvent(deps.orm.em, threadId, turnId, key, event);

  /** The events a finished model step leaves: its message, and the turn's end when it answers. */
  async function stepEvents(input: TurnStep, step: ModelStep): Promise<void> {
    const { threadId, turnId, round } = input;
    await emit(threadId, turnId, `${turnId}:${round}:message`, {
      kind: 'assistant_message',
      round,
      message_id: step.messageId,
      content: step.content ?? '',
      tool_calls: step.toolCalls.map((c) => ({ id: c.id, name: c.function.name })),
    });
    // The same rule as the workflow's: no tool calls (or tools disabled) means this is the answer.
    if (step.toolCalls.length === 0 || input.toolsDisabled)
      await emit(threadId, turnId, `${turnId}:end`, {
        kind: 'turn_completed',
        message_id: step.messageId,
        reply: step.content ?? '',
      });
  }

  /**
   * Follows one model call's output: each piece of text becomes a `delta` event, written in order
   * behind the call (a failed write is logged; the message and the turn's end carry the whole text).
   * A retried attempt first says so (`round_restarted`): its deltas replace the earlier attempt's.
   */
  function deltaWriter(input: TurnStep, attempt: number) {
    const { threadId, turnId, round } = input;
    let written = Promise.resolve();
    let n = 0;
    const queue = (key: string, event: ThreadEventData) => {
      written = written
        .then(() => emit(threadId, turnId, key, event))
        .then(
          () => undefined,
          (err: unknown) =>
            deps.log.warn('a thread event could not be written', {
              thread_id: threadId,
              error: (err as Error).message,
            }),
        );
    };
    if (attempt > 1) queue(`${turnId}:${round}:${attempt}:restart`, { kind: 'round_restarted', round, attempt });
    return {
      onDelta: (text: string) =>
        queue(`${turnId}:${round}:${attempt}:d${n++}`, { kind: 'delta', round, attempt, text }),
      drained: () => written,
    };
  }

  return {
    async recordUserMessage(input: {
      threadId: string;
      messageId: string;
      content: string;
      authorKind: string;
      authorId: string;
    }): Promise<void> {
      await appendMessage(deps.orm.em.fork(), {
        threadId: input.threadId,
        role: 'user',
        authorKind: input.authorKind,
        authorId: input.authorId,
        content: input.content,
        idempotencyKey: `${input.messageId}:user`,
      });
      await emit(input.threadId, input.messageId, `${input.messageId}:user`, {
        kind: 'user_message',
        content: input.content,
      });
    },

    async callModel(input: TurnStep): Promise<ModelStep> {
      const em = deps.orm.em.fork();
      const key = `${input.turnId}:assistant:${input.round}`;
      const done = (await listMessages(em, input.threadId)).find((m) => m.idempotencyKey === key);
      if (done) {
        await stepEvents(input, stepOf(done));
        return stepOf(done);
      }
      const thread = await findThread(em, input.threadId);
      const agent = await em.findOne(AgentRowEntity, { id: input.agentId });
      if (!thread || !agent)
        throw ApplicationFailure.nonRetryable(
          `thread ${input.threadId} or agent ${input.agentId} is gone`,
          'ThreadGone',
        );
      const messages = await listMessages(em, input.threadId);
      const system = [
        agent.instructions,
        learningsBlock(await adoptedLearningsFor(em, input.tenant, agent.id)),
        thread.callerPersona ? `The caller describes themselves as: ${thread.callerPersona}` : '',
        thread.callerGoal ? `The caller's goal: ${thread.callerGoal}` : '',
      ]
        .filter(Boolean)
        .join('\n\n');
      const chat: ChatMessage[] = [{ role: 'system', content: system }, ...messages.map(toChatMessage)];
      const tools = input.toolsDisabled ? [] : (deps.toolbox?.specs(agent.toolGroups) ?? []);
      let result;
      // Resolved per call (cached by the tenant's version), so a provider switch applies to the next turn.
      const active = await (deps.llmProviders ?? activeProviders(deps.config)).resolve(em, input.tenant);
      const info = Context.current().info;
      const deltas = deltaWriter(input, info.attempt);
      try {
        // Heartbeats while the model thinks, so a dead worker is noticed in seconds, not at the timeout.
        // The metered call refuses at the demo budget cap and records the spend against the thread.
        result = await withHeartbeat(2_000, () =>
          active.chat({ em, tenant: input.tenant, purpose: 'thread_turn', threadId: input.threadId }, chat, tools, {
            onDelta: deltas.onDelta,
          }),
        );
        await deltas.drained();
      } catch (err) {
        await deltas.drained();
        if (err instanceof LlmError) {
          deps.log.warn('language-model call failed', {
            error_id: err.failure.error_id,
            kind: err.failure.kind,
            detail: err.detailForLogs?.slice(0, 500),
          });
          const failure = { ...err.failure };
          // The turn ends here when no attempt follows: its followers get the classified failure.
          const max = info.retryPolicy?.maximumAttempts;
          if (!err.retryable || (max !== undefined && max > 0 && info.attempt >= max))
            await emit(input.threadId, input.turnId, `${input.turnId}:end`, {
              kind: 'llm_failure',
              llm_failure: failure,
            });
          throw err.retryable
            ? ApplicationFailure.retryable(err.message, 'LlmError', failure)
            : ApplicationFailure.nonRetryable(err.message, 'LlmError', failure);
        }
        throw err;
      }
      const stored = await appendMessage(em, {
        threadId: input.threadId,
        role: 'assistant',
        authorKind: 'agent',
        authorId: agent.id,
        content: result.content ?? '',
        metadata: result.toolCalls.length ? { tool_calls: result.toolCalls } : {},
        idempotencyKey: key,
      });
      await stepEvents(input, stepOf(stored));
      return stepOf(stored);
    },

    async runToolCall(input: {
      threadId: string;
      agentId: string;
      tenant: string;
      turnId: string;
      call: ToolCall;
    }): Promise<void> {
      const em = deps.orm.em.fork();
      const key = `${input.turnId}:tool:${input.call.id}`;
      const toolEvent = (ok: boolean) =>
        emit(input.threadId, input.turnId, key, {
          kind: 'tool_result',
          tool_call_id: input.call.id,
          tool: input.call.function.name,
          ok,
        });
      const done = (await listMessages(em, input.threadId)).find((m) => m.idempotencyKey === key);
      if (done) {
        await toolEvent(done.metadata.ok === true);
        return;
      }
      const principal: Principal = {
        kind: 'agent',
        id: input.agentId,
        tenant: input.tenant,
        displayName: `agent ${input.agentId}`,
        roles: [],
        permissions: new Set(),
        credential: 'sandbox_token',
        botId: input.agentId,
        threadId: input.threadId,
      };
      let outcome: { ok: boolean; result: unknown };
      if (!deps.toolbox) outcome = { ok: false, result: { error: 'No tools are available in this deployment.' } };
      else {
        let args: unknown;
        try {
          args = JSON.parse(input.call.function.arguments || '{}');
        } catch {
          args = undefined;
        }
        outcome =
          args === undefined
            ? { ok: false, result: { error: 'The tool arguments are not valid JSON.' } }
            : await deps.toolbox.invoke(input.call.function.name, args, principal, key);
      }
      await appendMessage(em, {
        threadId: input.threadId,
        role: 'tool',
        authorKind: 'tool',
        authorId: input.call.function.name,
        content: JSON.stringify(outcome.result),
        metadata: { tool_call_id: input.call.id, tool: input.call.function.name, ok: outcome.ok },
        idempotencyKey: key,
      });
      await toolEvent(outcome.ok);
    },
  };
}

export type ThreadActivities = ReturnType<typeof createThreadActivities>;

function stepOf(m: { id: string; content: string; metadata: Record<string, unknown> }): ModelStep {
  return { content: m.content, toolCalls: (m.metadata.tool_calls as ToolCall[] | undefined) ?? [], messageId: m.id };
}

/** Stored messages as the model sees them; platform notes (e.g. Action Review hand-backs) become system messages. */
function toChatMessage(m: { role: string; content: string; metadata: Record<string, unknown> }): ChatMessage {
  if (m.role === 'user') return { role: 'user', content: m.content };
  if (m.role === 'assistant') {
    const calls = m.metadata.tool_calls as ToolCall[] | undefined;
    return calls?.length
      ? { role: 'assistant', content: m.content || null, tool_calls: calls }
      : { role: 'assistant', content: m.content };
  }
  if (m.role === 'tool' && typeof m.metadata.tool_call_id === 'string')
    return { role: 'tool', tool_call_id: m.metadata.tool_call_id, content: m.content };
  return { role: 'system', content: `[platform note] ${m.content}` };
}
