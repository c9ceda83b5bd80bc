import {
  ApplicationFailure,
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ThreadActivities } from '../activities/thread.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import {
  postMessageUpdate,
  turnsQuery,
  type LlmFailureView,
  type PostMessageInput,
  type ThreadWorkflowInput,
  type TurnResult,
} from './thread-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

const { recordUserMessage } = proxyActivities<ThreadActivities>(ActivityProfiles.externalIdempotent);
// The model call heartbeats: a worker that dies mid-call is detected within the heartbeat timeout.
const { callModel } = proxyActivities<ThreadActivities>(ActivityProfiles.modelCall);
const { runToolCall } = proxyActivities<ThreadActivities>(ActivityProfiles.toolCall);

/** Concurrent messages once could start turns together; the fix changes command order, hence a patch. */
const TURN_LOCK_PATCH = 'thread-turn-lock';

/** How many model ↔ tool round trips one turn may take before the agent must answer. */
const MAX_TOOL_ROUNDS = 6;
/** A thread's workflow ends after a day without messages; the next message starts it again. */
const IDLE_TIMEOUT = '1 day';

/**
 * An agent thread (`thread/<thread_id>`). Each user message is an Update that returns the agent's
 * reply; the model call and each tool call are activities, so a crashed worker resumes the turn
 * instead of losing the message. Messages live in PostgreSQL; the workflow carries only ids.
 */
export async function threadWorkflow(input: ThreadWorkflowInput): Promise<void> {
  let busy = false;
  let turns = 0;
  let received = 0;

  setHandler(turnsQuery, () => ({ turns, busy }));
  setHandler(
    postMessageUpdate,
    async (message: PostMessageInput): Promise<TurnResult> => {
      received++;
      if (patched(TURN_LOCK_PATCH)) {
        // A loop, not one wait: every waiter whose condition holds is released in the same pass, and
        // only the first to resume may take the turn.
        while (busy) await condition(() => !busy);
      } else {
        // Threads started before the fix keep their recorded command order.
        await condition(() => !busy);
      }
      busy = true;
      setLifecycleStatus('threadWorkflow', 'responding');
      let failed = true;
      try {
        const result = await runTurn(input, message);
        failed = !result.ok;
        return result;
      } finally {
        busy = false;
        turns++;
        // A turn whose model call failed stays findable until the next turn answers.
        setLifecycleStatus('threadWorkflow', failed ? 'turn_failed' : 'idle');
      }
    },
    {
      validator: (message) => {
        if (!message.content || !message.content.trim()) throw new Error('The message is empty.');
        if (!message.messageId) throw new Error('The message has no id.');
      },
    },
  );

  await trackFailure('threadWorkflow', async () => {
    for (;;) {
      const seen = received;
      const active = await condition(() => received !== seen, IDLE_TIMEOUT);
      if (!active && !busy) break;
      if (workflowInfo().continueAsNewSuggested) {
        await condition(() => !busy && allHandlersFinished());
        await continueAsNew<typeof threadWorkflow>(input);
      }
    }
    await condition(allHandlersFinished);
    setLifecycleStatus('threadWorkflow', 'closed');
  });
}

async function runTurn(input: ThreadWorkflowInput, message: PostMessageInput): Promise<TurnResult> {
  const turnId = message.messageId;
  await recordUserMessage({ threadId: input.threadId, ...message });
  let toolCalls = 0;
  for (let round = 0; round <= MAX_TOOL_ROUNDS; round++) {
    // The last round disables tools: the agent must answer with what it has.
    const toolsDisabled = round === MAX_TOOL_ROUNDS;
    let step: Awaited<ReturnType<typeof callModel>>;
    try {
      step = await callModel({
        threadId: input.threadId,
        agentId: input.agentId,
        tenant: input.tenant,
        turnId,
        round,
        toolsDisabled,
      });
    } catch (err) {
      const llmFailure = llmFailureOf(err);
      if (llmFailure) return { ok: false, llmFailure };
      throw err;
    }
    if (step.toolCalls.length === 0 || toolsDisabled)
      return { ok: true, reply: step.content ?? '', messageId: step.messageId, toolCalls };
    for (const call of step.toolCalls) {
      toolCalls++;
      await runToolCall({ threadId: input.threadId, agentId: input.agentId, tenant: input.tenant, turnId, call });
    }
  }
  throw ApplicationFailure.nonRetryable('unreachable: the last round always answers');
}

/** The classified model failure an activity attached (never the provider's raw text). */
function llmFailureOf(err: unknown): LlmFailureView | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type === 'LlmError')
    return cause.details?.[0] as LlmFailureView | undefined;
  return undefined;
}
