import { randomUUID } from 'node:crypto';
import { EgressError, egressFetch, type EgressPolicy } from '../http/egress.js';

/** A chat message in the OpenAI-compatible wire format. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatResult {
  content: string | null;
  toolCalls: ToolCall[];
  usage: { promptTokens: number; completionTokens: number };
  model: string;
}

/** What a caller may be told about a failed model call: classified, never the provider's raw text. */
export interface LlmFailure {
  kind:
    | 'not_configured'
    | 'egress_refused'
    | 'budget_exhausted'
    | 'authentication'
    | 'rate_limited'
    | 'timeout'
    | 'unavailable'
    | 'bad_request'
    | 'bad_response';
  message: string;
  action: string;
  error_id: string;
}

/** Thrown when the model call failed; carries the classified failure (the raw cause stays in logs). */
export class LlmError extends Error {
  override name = 'LlmError';
  constructor(
    readonly failure: LlmFailure,
    readonly retryable: boolean,
    readonly detailForLogs?: string,
  ) {
    super(failure.message);
  }
}

export interface LlmSettings {
  baseUrl: string | undefined;
  apiKey: string | undefined;
  model: string | undefined;
  timeoutSeconds: number;
  /** The deployment's egress policy (`config.egress`): the provider's address must pass it. */
  egress: EgressPolicy;
}

export const llmFailure = (
  kind: LlmFailure['kind'],
  message: string,
  action: string,
  retryable: boolean,
  detail?: string,
) =>
  new LlmError(
    { kind, message, action, error_id: `llm_${randomUUID().replace(/-/g, '').slice(0, 16)}` },
    retryable,
    detail,
  );

/** One chat-completions call to the active OpenAI-compatible provider, with tool calling. */
export async function chatCompletion(
  settings: LlmSettings,
  messages: ChatMessage[],
  tools: ToolSpec[],
): Promise<ChatResult> {
  if (!settings.baseUrl || !settings.model) {
    throw llmFailure(
      'not_configured',
      'No language-model provider is configured for this deployment.',
      'Ask an administrator to configure the active provider (PLATFORM_LLM_BASE_URL and PLATFORM_LLM_MODEL).',
      false,
    );
  }
  let res: Response;
  let text: string;
  try {
    res = await egressFetch(`${settings.baseUrl}/chat/completions`, {
      policy: settings.egress,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
      },
      body: JSON.stringify({
        model: settings.model,
        messages,
        ...(tools.length ? { tools, tool_choice: 'auto' } : {}),
      }),
      timeoutMs: settings.timeoutSeconds * 1000,
    });
    // The body is read inside the client, under its deadline and size cap.
    text = await res.text();
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    if (err.code === 'egress_refused') {
      throw llmFailure(
        'egress_refused',
        `The language-model provider's address is not allowed for outbound requests: ${err.message}.`,
        'Ask an administrator to point PLATFORM_LLM_BASE_URL at an allowed address (a provider on the private network needs PLATFORM_EGRESS_ALLOW_PRIVATE).',
        false,
        err.message,
      );
    }
    if (err.code === 'egress_too_large') {
      throw llmFailure(
        'bad_response',
        'The language-model provider answered more than the platform accepts.',
        'Check that the provider is OpenAI-compatible.',
        false,
        err.message,
      );
    }
    const timedOut = err.code === 'egress_timeout';
    throw llmFailure(
      timedOut ? 'timeout' : 'unavailable',
      timedOut ? 'The language model did not answer in time.' : 'The language-model provider cannot be reached.',
      'Try again in a moment; if it persists, check the provider configuration.',
      true,
      err.detailForLogs ?? err.message,
    );
  }
  if (res.status === 401 || res.status === 403)
    throw llmFailure(
      'authentication',
      "The language-model provider refused the platform's credentials.",
      'Ask an administrator to check the provider API key.',
      false,
      text,
    );
  if (res.status === 429)
    throw llmFailure(
      'rate_limited',
      'The language-model provider is rate limiting requests.',
      'Wait a little and try again.',
      true,
      text,
    );
  if (res.status >= 500)
    throw llmFailure(
      'unavailable',
      'The language-model provider had an internal error.',
      'Try again in a moment.',
      true,
      text,
    );
  if (res.status >= 400)
    throw llmFailure(
      'bad_request',
      'The language-model provider rejected the request.',
      'Ask an administrator to check the model name and provider settings.',
      false,
      text,
    );
  let body: {
    model?: string;
    choices?: Array<{ message?: { content?: string | null; tool_calls?: ToolCall[] } }>;
    usage?: { prompt_tokens?: number; completion_tokens?: number };
  };
  try {
    body = JSON.parse(text);
  } catch {
    throw llmFailure(
      'bad_response',
      'The language-model provider answered something that is not a chat completion.',
      'Check that the provider is OpenAI-compatible.',
      false,
      text.slice(0, 500),
    );
  }
  const message = body.choices?.[0]?.message;
  if (!message)
    throw llmFailure(
      'bad_response',
      'The language-model provider answered without a message.',
      'Check that the provider is OpenAI-compatible.',
      false,
      text.slice(0, 500),
    );
  return {
    content: message.content ?? null,
    toolCalls: (message.tool_calls ?? []).filter((c) => c?.type === 'function' && typeof c.function?.name === 'string'),
    usage: { promptTokens: body.usage?.prompt_tokens ?? 0, completionTokens: body.usage?.completion_tokens ?? 0 },
    model: body.model ?? settings.model,
  };
}
