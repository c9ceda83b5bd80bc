import { randomUUID } from 'node:crypto';
import { EgressError, egressFetch, type EgressPolicy } from '../http/egress.js';
import { EgressCodes } from '../http/egress-policy.js';

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

/** How a caller follows one chat call: `onDelta` sees the answer's text as the provider streams it. */
export interface ChatOptions {
  onDelta?: (text: string) => void;
}

/** One chat call (a connection test pings the configured model through the metered one). */
export type ChatFn = (messages: ChatMessage[], tools: ToolSpec[], model?: string) => Promise<ChatResult>;

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
    | 'bad_response'
    | 'quota_exceeded'
    | 'model_not_found'
    | 'context_too_long'
    | 'content_refused'
    | 'unsupported';
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

/** The provider refused under its content policy (any wire format); `detail` (raw provider text) goes to logs only. */
export const contentRefused = (detail: string) =>
  llmFailure(
    'content_refused',
    'The language-model provider refused the request under its content policy.',
    'Rephrase the request.',
    false,
    detail,
  );

/** What one provider exchange answered: status, raw text (logs only) and headers. */
export interface ProviderAnswer {
  status: number;
  text: string;
  headers: Headers;
}

export interface ProviderRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  egress: EgressPolicy;
  timeoutMs: number;
  /** `manual` answers a 3xx to the caller (proxy `/models` discovery checks each hop itself). */
  redirect?: 'follow' | 'manual';
  /** Names the setting to fix when the address is refused. */
  addressSetting?: string;
  /** Sees a 2xx answer's body as it arrives (a streamed chat completion); the body is still answered whole. */
  onChunk?: (chunk: Buffer) => void;
  /** Signs the exact request about to be sent (AWS SigV4): answers the headers to send instead. */
  sign?: (request: {
    method: string;
    url: URL;
    headers: Record<string, string>;
    body: string;
  }) => Record<string, string>;
}

/** One exchange with a provider through the egress client; transport failures become classified `LlmError`s. */
export async function providerCall(url: string, req: ProviderRequest): Promise<ProviderAnswer> {
  const method = req.method ?? (req.body === undefined ? 'GET' : 'POST');
  let headers: Record<string, string> = {
    ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...req.headers,
  };
  const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
  if (req.sign) headers = req.sign({ method, url: new URL(url), headers, body: body ?? '' });
  try {
    const res = await egressFetch(url, {
      policy: req.egress,
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      timeoutMs: req.timeoutMs,
      redirect: req.redirect ?? 'follow',
      ...(req.onChunk ? { onChunk: req.onChunk } : {}),
    });
    // The body is read inside the client, under its deadline and size cap.
    return { status: res.status, text: await res.text(), headers: res.headers };
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    if (err.code === EgressCodes.egress_refused) {
      throw llmFailure(
        'egress_refused',
        `The language-model provider's address is not allowed for outbound requests: ${err.message}.`,
        `Ask an administrator to point ${req.addressSetting ?? "the provider's base URL"} at an allowed address (a provider on the private network needs PLATFORM_EGRESS_ALLOW_PRIVATE).`,
        false,
        err.message,
      );
    }
    if (err.code === EgressCodes.egress_too_large) {
      throw llmFailure(
        'bad_response',
        'The language-model provider answered more than the platform accepts.',
        'Check that the provider speaks the configured wire format.',
        false,
        err.message,
      );
    }
    const timedOut = err.code === EgressCodes.egress_timeout;
    throw llmFailure(
      timedOut ? 'timeout' : 'unavailable',
      timedOut ? 'The language model did not answer in time.' : 'The language-model provider cannot be reached.',
      'Try again in a moment; if it persists, check the provider configuration.',
      true,
      err.detailForLogs ?? err.message,
    );
  }
}

const CONTEXT_TOO_LONG =
  /context_length_exceeded|maximum context length|prompt is too long|too many tokens|input is too long|context window/i;
const CONTENT_REFUSED = /content_filter|content_policy|content management policy|responsible ?ai|guardrail|safety/i;
const MODEL_NOT_FOUND = /model_not_found|deploymentnotfound|does not exist|unknown model|model.{0,40}not found/i;
const QUOTA = /insufficient_quota|quota|billing|credit balance/i;

/** Throws the classified failure for an HTTP error answer (any wire format); the raw text stays in `detailForLogs`. */
export function failOnStatus(answer: ProviderAnswer): void {
  const { status, text } = answer;
  if (status < 400) return;
  if (status === 401 || status === 403)
    throw llmFailure(
      'authentication',
      "The language-model provider refused the platform's credentials.",
      'Ask an administrator to check the provider API key.',
      false,
      text,
    );
  if (status === 429 || status === 402) {
    if (status === 402 || QUOTA.test(text))
      throw llmFailure(
        'quota_exceeded',
        "The language-model provider says the account's quota is used up.",
        "Ask an administrator to check the provider account's quota or billing.",
        false,
        text,
      );
    throw llmFailure(
      'rate_limited',
      'The language-model provider is rate limiting requests.',
      'Wait a little and try again.',
      true,
      text,
    );
  }
  if (status >= 500)
    throw llmFailure(
      'unavailable',
      'The language-model provider had an internal error.',
      'Try again in a moment.',
      true,
      text,
    );
  if (CONTEXT_TOO_LONG.test(text) || status === 413)
    throw llmFailure(
      'context_too_long',
      'The conversation is longer than the model accepts.',
      'Start a new thread, or ask an administrator to assign a model with a larger context window.',
      false,
      text,
    );
  if (CONTENT_REFUSED.test(text)) throw contentRefused(text);
  if (status === 404 || MODEL_NOT_FOUND.test(text))
    throw llmFailure(
      'model_not_found',
      'The language-model provider does not know the configured model.',
      'Ask an administrator to check the model (or deployment) name of the active provider.',
      false,
      text,
    );
  throw llmFailure(
    'bad_request',
    'The language-model provider rejected the request.',
    'Ask an administrator to check the model name and provider settings.',
    false,
    text,
  );
}

/** The JSON of a successful answer, or a classified `bad_response`. */
export function answerJson<T>(answer: ProviderAnswer, what: string): T {
  failOnStatus(answer);
  try {
    return JSON.parse(answer.text) as T;
  } catch {
    throw llmFailure(
      'bad_response',
      `The language-model provider answered something that is not ${what}.`,
      'Check that the provider speaks the configured wire format.',
      false,
      answer.text.slice(0, 500),
    );
  }
}

export const notConfigured = (message = 'No language-model provider is configured for this deployment.') =>
  llmFailure(
    'not_configured',
    message,
    'Ask an administrator to save and activate a provider (/api/config/llm-providers), or set PLATFORM_LLM_BASE_URL and PLATFORM_LLM_MODEL.',
    false,
  );

/** Reads an OpenAI chat-completions answer (also what Azure-type deployments answer). */
export function chatResultOf(answer: ProviderAnswer, model: string): ChatResult {
  const body = answerJson<{
    model?: string;
    choices?: Array<{ message?: { content?: string | null; tool_calls?: ToolCall[] }; finish_reason?: string }>;
    usage?: { prompt_tokens?: number; completion_tokens?: number };
  }>(answer, 'a chat completion');
  const choice = body.choices?.[0];
  const message = choice?.message;
  if (!message) {
    if (choice?.finish_reason === 'content_filter') throw contentRefused(answer.text.slice(0, 500));
    throw llmFailure(
      'bad_response',
      'The language-model provider answered without a message.',
      'Check that the provider is OpenAI-compatible.',
      false,
      answer.text.slice(0, 500),
    );
  }
  return {
    content: message.content ?? null,
    toolCalls: (message.tool_calls ?? []).filter((c) => c?.type === 'function' && typeof c.function?.name === 'string'),
    usage: { promptTokens: body.usage?.prompt_tokens ?? 0, completionTokens: body.usage?.completion_tokens ?? 0 },
    model: body.model ?? model,
  };
}
