import { answerJson, contentRefused, llmFailure } from './client.js';
import type { ChatMessage, ChatResult, ProviderAnswer, ToolSpec } from './client.js';

/**
 * The OpenAI Responses format (`POST /responses`), which the proxy kind speaks with
 * `transport: 'responses'`: the platform's chat messages become input items, function tools are flat
 * (`name`, `parameters` at the top), and the answer's output items carry text and function calls.
 */

type InputItem =
  | { role: 'system' | 'user' | 'assistant'; content: string }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string };

/** The request body: `instructions` from system messages, the rest as input items in order. */
export function toResponsesBody(messages: ChatMessage[], tools: ToolSpec[], model: string): Record<string, unknown> {
  const instructions: string[] = [];
  const input: InputItem[] = [];
  for (const m of messages) {
    if (m.role === 'system') instructions.push(m.content);
    else if (m.role === 'user') input.push({ role: 'user', content: m.content });
    else if (m.role === 'tool')
      input.push({ type: 'function_call_output', call_id: m.tool_call_id, output: m.content });
    else if (m.role === 'assistant') {
      if (m.content) input.push({ role: 'assistant', content: m.content });
      for (const c of m.tool_calls ?? [])
        input.push({ type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
    }
  }
  return {
    model,
    input,
    ...(instructions.length ? { instructions: instructions.join('\n\n') } : {}),
    ...(tools.length
      ? {
          tools: tools.map((t) => ({
            type: 'function',
            name: t.function.name,
            description: t.function.description,
            parameters: t.function.parameters,
          })),
          tool_choice: 'auto',
        }
      : {}),
    // The platform keeps the conversation itself; the provider need not.
    store: false,
  };
}

interface OutputItem {
  type?: string;
  content?: Array<{ type?: string; text?: string; refusal?: string }>;
  call_id?: string;
  name?: string;
  arguments?: string;
}

/** Reads a Responses answer: output text and function calls; a refusal or an incomplete answer is classified. */
export function responsesResultOf(answer: ProviderAnswer, model: string): ChatResult {
  const body = answerJson<{
    model?: string;
    status?: string;
    incomplete_details?: { reason?: string } | null;
    output?: OutputItem[];
    usage?: { input_tokens?: number; output_tokens?: number };
  }>(answer, 'a responses answer');
  const texts: string[] = [];
  let refusal = false;
  const toolCalls: ChatResult['toolCalls'] = [];
  for (const item of body.output ?? []) {
    if (item.type === 'message')
      for (const part of item.content ?? []) {
        if (part.type === 'output_text' && typeof part.text === 'string') texts.push(part.text);
        if (part.type === 'refusal') refusal = true;
      }
    if (item.type === 'function_call' && typeof item.name === 'string' && typeof item.call_id === 'string')
      toolCalls.push({
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments ?? '{}' },
      });
  }
  const reason = body.incomplete_details?.reason;
  if ((refusal || reason === 'content_filter') && !texts.length && !toolCalls.length)
    throw contentRefused(answer.text.slice(0, 500));
  if (!texts.length && !toolCalls.length)
    throw llmFailure(
      'bad_response',
      body.status === 'incomplete'
        ? `The language-model provider stopped before answering (${reason ?? 'incomplete'}).`
        : 'The language-model provider answered without a message.',
      reason === 'max_output_tokens' ? 'Raise the output token limit or shorten the request.' : 'Try again.',
      false,
      answer.text.slice(0, 500),
    );
  return {
    content: texts.length ? texts.join('') : null,
    toolCalls,
    usage: { promptTokens: body.usage?.input_tokens ?? 0, completionTokens: body.usage?.output_tokens ?? 0 },
    model: body.model ?? model,
  };
}
