/**
 * Key-based warehouse-AI provider (Snowflake Cortex-style REST): `POST /api/v2/cortex/inference:complete`
 * (messages, `tools` as `tool_spec`, tool calls as `content_list` `tool_use`, results as `tool_results`)
 * and `POST /api/v2/cortex/inference:embed`, authenticated by `warehouse-auth.ts`.
 */
import { answerJson, llmFailure, notConfigured, providerCall, type ChatMessage, type ChatResult } from './client.js';
import { chatModelOf, configuredModels, embeddingModelOf, pingChatModel } from './provider-kinds.js';
import type { LlmProvider, ProviderTarget } from './provider-types.js';
import { warehouseAuthHeaders } from './warehouse-auth.js';

const MAX_TOKENS = 4096;

type ContentItem =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; tool_use: { tool_use_id: string; name: string; input: unknown } }
  | {
      type: 'tool_results';
      tool_results: { tool_use_id: string; name: string; content: Array<{ type: 'text'; text: string }> };
    };

interface CortexMessage {
  role: 'system' | 'user' | 'assistant';
  content?: string;
  content_list?: ContentItem[];
}

/** The OpenAI-shaped conversation as Cortex messages (tool results name their tool, as Cortex wants). */
export function toCortexMessages(messages: ChatMessage[]): CortexMessage[] {
  const toolNames = new Map<string, string>();
  return messages.map((m): CortexMessage => {
    if (m.role === 'tool')
      return {
        role: 'user',
        content_list: [
          {
            type: 'tool_results',
            tool_results: {
              tool_use_id: m.tool_call_id,
              name: toolNames.get(m.tool_call_id) ?? '',
              content: [{ type: 'text', text: m.content }],
            },
          },
        ],
      };
    if (m.role === 'assistant' && m.tool_calls?.length) {
      const uses: ContentItem[] = m.tool_calls.map((c) => {
        toolNames.set(c.id, c.function.name);
        let input: unknown;
        try {
          input = JSON.parse(c.function.arguments || '{}');
        } catch {
          input = {};
        }
        return { type: 'tool_use', tool_use: { tool_use_id: c.id, name: c.function.name, input } };
      });
      return { role: 'assistant', content: m.content ?? '', content_list: [...uses] };
    }
    return { role: m.role, content: m.content ?? '' };
  });
}

interface CortexAnswer {
  model?: string;
  choices?: Array<{
    message?: { content?: string; content_list?: ContentItem[] };
    delta?: { type?: string; content?: string; text?: string; tool_use_id?: string; name?: string; input?: string };
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/** Reads a completion: one JSON answer, or the server-sent events a streaming answer consists of. */
function cortexResultOf(answer: Parameters<typeof answerJson>[0], model: string): ChatResult {
  const streamed = (answer.headers.get('content-type') ?? '').includes('text/event-stream');
  const events: CortexAnswer[] = streamed
    ? answer.text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .filter((d) => d && d !== '[DONE]')
        .map((d) => JSON.parse(d) as CortexAnswer)
    : [answerJson<CortexAnswer>(answer, 'a completion')];
  if (streamed && answer.status >= 400) answerJson(answer, 'a completion');
  let text = '';
  const toolCalls: ChatResult['toolCalls'] = [];
  let usage = { promptTokens: 0, completionTokens: 0 };
  for (const e of events) {
    const choice = e.choices?.[0];
    const message = choice?.message;
    if (message) {
      const list = message.content_list ?? [];
      const texts = list.filter((c): c is Extract<ContentItem, { type: 'text' }> => c.type === 'text');
      text += texts.length ? texts.map((c) => c.text).join('') : (message.content ?? '');
      for (const c of list)
        if (c.type === 'tool_use')
          toolCalls.push({
            id: c.tool_use.tool_use_id,
            type: 'function',
            function: { name: c.tool_use.name, arguments: JSON.stringify(c.tool_use.input ?? {}) },
          });
    } else if (choice?.delta) {
      const d = choice.delta;
      if (d.type === 'tool_use' && d.tool_use_id && d.name)
        toolCalls.push({ id: d.tool_use_id, type: 'function', function: { name: d.name, arguments: d.input ?? '' } });
      else if (d.type === 'tool_use' && toolCalls.length) toolCalls.at(-1)!.function.arguments += d.input ?? '';
      else text += d.content ?? d.text ?? '';
    }
    if (e.usage) usage = { promptTokens: e.usage.prompt_tokens ?? 0, completionTokens: e.usage.completion_tokens ?? 0 };
  }
  if (!events.length || (!text && !toolCalls.length && !events.some((e) => e.choices?.length)))
    throw llmFailure(
      'bad_response',
      'The warehouse-AI provider answered without a completion.',
      'Check the model name and the account URL.',
      false,
      answer.text.slice(0, 500),
    );
  return { content: toolCalls.length && !text ? null : text, toolCalls, usage, model: events[0]?.model ?? model };
}

export function warehouseAi(t: ProviderTarget): LlmProvider {
  const f = t.fields;
  const base = (typeof f.base_url === 'string' ? f.base_url : '').replace(/\/+$/, '');
  const call = (path: string, body: unknown) =>
    providerCall(`${base}${path}`, {
      egress: t.egress,
      headers: { ...warehouseAuthHeaders(f), accept: 'application/json, text/event-stream' },
      body,
      timeoutMs: t.timeoutMs,
      addressSetting: "the warehouse-AI provider's base_url",
    });
  const provider: LlmProvider = {
    async chat(messages, tools, model) {
      const m = model ?? chatModelOf(t.kind, f);
      if (!m) throw notConfigured('The active language-model provider names no chat model.');
      const answer = await call('/api/v2/cortex/inference:complete', {
        model: m,
        messages: toCortexMessages(messages),
        max_tokens: MAX_TOKENS,
        stream: false,
        ...(tools.length
          ? {
              tools: tools.map((tool) => ({
                tool_spec: {
                  type: 'generic',
                  name: tool.function.name,
                  description: tool.function.description,
                  input_schema: tool.function.parameters,
                },
              })),
              tool_choice: { type: 'auto' },
            }
          : {}),
      });
      return cortexResultOf(answer, m);
    },
    async embed(texts, model) {
      const m = model ?? embeddingModelOf(t.kind, f);
      if (!m) throw notConfigured('The warehouse-AI provider names no embedding model.');
      const body = answerJson<{
        data?: Array<{ index?: number; embedding?: number[] | number[][] }>;
        usage?: { total_tokens?: number };
      }>(await call('/api/v2/cortex/inference:embed', { model: m, text: texts }), 'embeddings');
      const data = [...(body.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      const vectors = data.map((d) => (Array.isArray(d.embedding?.[0]) ? (d.embedding[0] as number[]) : d.embedding));
      if (vectors.length !== texts.length || vectors.some((v) => !Array.isArray(v)))
        throw llmFailure(
          'bad_response',
          'The warehouse-AI provider answered without vectors.',
          'Check the embedding model.',
          false,
        );
      return { vectors: vectors as number[][], promptTokens: body.usage?.total_tokens ?? 0, model: m };
    },
    // The configured models are what this provider offers (the service lists no more than the account allows).
    listModels: () => configuredModels(t.kind, f),
    async test(chat) {
      await pingChatModel(chat, t.kind, f, 'warehouse-AI');
      return `Connection test passed (${f.auth_method === 'keypair' ? 'key-pair JWT' : 'access token'} accepted).`;
    },
  };
  return provider;
}
