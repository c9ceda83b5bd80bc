import { defineQuery, defineUpdate } from '@temporalio/workflow';

/** Identifies the thread a `thread/<thread_id>` workflow drives. */
export interface ThreadWorkflowInput {
  threadId: string;
  tenant: string;
  agentId: string;
}

export interface PostMessageInput {
  /** Client-chosen id: retrying a message with the same id never adds it twice. */
  messageId: string;
  content: string;
  authorKind: string;
  authorId: string;
}

export interface LlmFailureView {
  kind: string;
  message: string;
  action: string;
  error_id: string;
}

export type TurnResult =
  { ok: true; reply: string; messageId: string; toolCalls: number } | { ok: false; llmFailure: LlmFailureView };

export const threadWorkflowId = (threadId: string) => `thread/${threadId}`;

/** One user message → the agent's reply; turns of a thread run one at a time. */
export const postMessageUpdate = defineUpdate<TurnResult, [PostMessageInput]>('postMessage');
export const turnsQuery = defineQuery<{ turns: number; busy: boolean }>('turns');
