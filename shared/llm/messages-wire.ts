import {
  answerJson,
  contentRefused,
  llmFailure,
  type ChatMessage,
  type ChatResult,
  type ProviderAnswer,
  type ToolCall,
  type ToolSpec,
} from './client.js';

/**
 * The Anthropic messages format (also what Bedrock-type `invoke` takes for those models) and the
 * Bedrock-type `converse` format, converted from and to the platform's OpenAI-shaped messages.
 */

type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string };

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

const parseArgs = (raw: string): unknown => {
  try {
    return JSON.parse(raw || '{}');
  } catch {
    return {};
  }
};

/** System text and alternating user/assistant messages (consecutive same-role messages merged). */
export function toAnthropicMessages(messages: ChatMessage[]): { system: string; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (!blocks.length) return;
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system') system.push(m.content);
    else if (m.role === 'user') push('user', [{ type: 'text', text: m.content }]);
    else if (m.role === 'tool')
      push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content }]);
    else if (m.role === 'assistant') {
      const blocks: Block[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const c of m.tool_calls ?? [])
        blocks.push({ type: 'tool_use', id: c.id, name: c.function.name, input: parseArgs(c.function.arguments) });
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: '' }]);
    }
  }
  return { system: system.join('\n\n'), messages: out };
}

export const toAnthropicTools = (tools: ToolSpec[]) =>
  tools.map((t) => ({
    name: t.function.name,
    description: t.function.description,
    input_schema: t.function.parameters,
  }));

const refused = (answer: ProviderAnswer) => contentRefused(answer.text.slice(0, 500));

/** Reads an Anthropic messages answer. */
export function anthropicResultOf(answer: ProviderAnswer, model: string): ChatResult {
  const body = answerJson<{
    model?: string;
    content?: Array<{ type?: string; text?: string; id?: string; name?: string; input?: unknown }>;
    stop_reason?: string;
    usage?: { input_tokens?: number; output_tokens?: number };
  }>(answer, 'a messages answer');
  if (!Array.isArray(body.content)) {
    if (body.stop_reason === 'refusal') throw refused(answer);
    throw llmFailure(
      'bad_response',
      'The language-model provider answered without content.',
      'Check that the provider speaks the Anthropic messages format.',
      false,
      answer.text.slice(0, 500),
    );
  }
  if (body.stop_reason === 'refusal' && !body.content.length) throw refused(answer);
  const text = body.content.filter((b) => b.type === 'text').map((b) => b.text ?? '');
  const toolCalls: ToolCall[] = body.content
    .filter((b) => b.type === 'tool_use' && typeof b.name === 'string')
    .map((b) => ({
      id: b.id ?? `toolu_${b.name}`,
      type: 'function',
      function: { name: b.name!, arguments: JSON.stringify(b.input ?? {}) },
    }));
  return {
    content: text.length ? text.join('') : null,
    toolCalls,
    usage: { promptTokens: body.usage?.input_tokens ?? 0, completionTokens: body.usage?.output_tokens ?? 0 },
    model: body.model ?? model,
  };
}

type ConverseBlock =
  | { text: string }
  | { toolUse: { toolUseId: string; name: string; input: unknown } }
  | { toolResult: { toolUseId: string; content: Array<{ text: string }> } };

/** The Bedrock-type `converse` request body. */
export function toConverseBody(messages: ChatMessage[], tools: ToolSpec[], maxTokens: number) {
  const { system, messages: turns } = toAnthropicMessages(messages);
  const convert = (b: Block): ConverseBlock =>
    b.type === 'text'
      ? { text: b.text }
      : b.type === 'tool_use'
        ? { toolUse: { toolUseId: b.id, name: b.name, input: b.input } }
        : { toolResult: { toolUseId: b.tool_use_id, content: [{ text: b.content }] } };
  return {
    messages: turns.map((m) => ({ role: m.role, content: m.content.map(convert) })),
    ...(system ? { system: [{ text: system }] } : {}),
    inferenceConfig: { maxTokens },
    ...(tools.length
      ? {
          toolConfig: {
            tools: tools.map((t) => ({
              toolSpec: {
                name: t.function.name,
                description: t.function.description,
                inputSchema: { json: t.function.parameters },
              },
            })),
          },
        }
      : {}),
  };
}

/** Reads a Bedrock-type `converse` answer. */
export function converseResultOf(answer: ProviderAnswer, model: string): ChatResult {
  const body = answerJson<{
    output?: {
      message?: {
        content?: Array<{ text?: string; toolUse?: { toolUseId?: string; name?: string; input?: unknown } }>;
      };
    };
    stopReason?: string;
    usage?: { inputTokens?: number; outputTokens?: number };
  }>(answer, 'a converse answer');
  if (body.stopReason === 'guardrail_intervened' || body.stopReason === 'content_filtered') throw refused(answer);
  const content = body.output?.message?.content;
  if (!Array.isArray(content))
    throw llmFailure(
      'bad_response',
      'The language-model provider answered without a message.',
      'Check that the provider speaks the converse format.',
      false,
      answer.text.slice(0, 500),
    );
  const text = content.filter((b) => typeof b.text === 'string').map((b) => b.text!);
  return {
    content: text.length ? text.join('') : null,
    toolCalls: content
      .filter((b) => typeof b.toolUse?.name === 'string')
      .map((b) => ({
        id: b.toolUse!.toolUseId ?? `tooluse_${b.toolUse!.name}`,
        type: 'function' as const,
        function: { name: b.toolUse!.name!, arguments: JSON.stringify(b.toolUse!.input ?? {}) },
      })),
    usage: { promptTokens: body.usage?.inputTokens ?? 0, completionTokens: body.usage?.outputTokens ?? 0 },
    model,
  };
}
