/** The wire shape of a thread's turn events (`GET /api/threads/{thread_id}/events`, Server-Sent Events). */
import { z } from 'zod';

const LlmFailureView = z
  .object({
    kind: z.string(),
    message: z.string(),
    action: z.string(),
    error_id: z.string(),
  })
  .describe('The classified model failure (never the provider’s raw text), as in an `llm_error` refusal');

/** The JSON of one event's `data` line; the SSE `event` field repeats `kind` and `id` is the event id. */
export const ThreadEventView = z
  .object({
    id: z.number().int().describe('The event id: grows within the thread; send it back as Last-Event-ID'),
    turn_id: z.string().describe('The turn (its user message id) the event belongs to'),
    kind: z.enum([
      'user_message',
      'delta',
      'round_restarted',
      'assistant_message',
      'tool_result',
      'turn_completed',
      'llm_failure',
    ]),
    created_at: z.string(),
    content: z.string().optional().describe('user_message: the message; assistant_message: the model’s text'),
    text: z.string().optional().describe('delta: the next piece of model output, as the provider sent it'),
    round: z
      .number()
      .int()
      .optional()
      .describe('delta, round_restarted, assistant_message: the model call of the turn'),
    attempt: z
      .number()
      .int()
      .optional()
      .describe('delta, round_restarted: the attempt of that model call; a restart drops the earlier attempt’s deltas'),
    message_id: z.string().optional(),
    tool_calls: z.array(z.object({ id: z.string(), name: z.string() })).optional(),
    tool_call_id: z.string().optional(),
    tool: z.string().optional(),
    ok: z.boolean().optional(),
    reply: z.string().optional().describe('turn_completed: the agent’s answer'),
    llm_failure: LlmFailureView.optional().describe('llm_failure: why the turn ended without an answer'),
  })
  .meta({ id: 'ThreadEvent' });
