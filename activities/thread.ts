import { ApplicationFailure } from '@temporalio/activity';
import type { Principal } from '../shared/auth/principal.js';
import { adoptedLearningsFor, learningsBlock } from '../shared/action-review/learnings.js';
import { AgentRowEntity } from '../shared/db/entities/index.js';
import { activeProviders } from '../shared/llm/active-provider.js';
import { LlmError, type ChatMessage, type ToolCall } from '../shared/llm/client.js';
import { appendMessage, findThread, listMessages } from '../shared/threads/store.js';
import { withHeartbeat } from './heartbeat.js';
import type { ActivityDeps } from './deps.js';

export interface ModelStep {
  content: string | null;
  toolCalls: ToolCall[];
  messageId: string;
}

/** Thread turns: record the user's message, ask the model, run the tools it asks for. Each write is keyed, so retries never duplicate. */
export function createThreadActivities(deps: ActivityDeps) {
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
    },

    async callModel(input: {
      threadId: string;
      agentId: string;
      tenant: string;
      turnId: string;
      round: number;
      toolsDisabled: boolean;
    }): Promise<ModelStep> {
      const em = deps.orm.em.fork();
      const key = `${input.turnId}:assistant:${input.round}`;
      const done = (await listMessages(em, input.threadId)).find((m) => m.idempotencyKey === key);
      if (done) return stepOf(done);
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
      try {
        // Heartbeats while the model thinks, so a dead worker is noticed in seconds, not at the timeout.
        // The metered call refuses at the demo budget cap and records the spend against the thread.
        result = await withHeartbeat(2_000, () =>
          active.chat({ em, tenant: input.tenant, purpose: 'thread_turn', threadId: input.threadId }, chat, tools),
        );
      } catch (err) {
        if (err instanceof LlmError) {
          deps.log.warn('language-model call failed', {
            error_id: err.failure.error_id,
            kind: err.failure.kind,
            detail: err.detailForLogs?.slice(0, 500),
          });
          const failure = { ...err.failure };
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
      if ((await listMessages(em, input.threadId)).some((m) => m.idempotencyKey === key)) return;
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
