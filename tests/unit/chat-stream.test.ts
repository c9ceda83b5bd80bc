import { describe, expect, it } from 'vitest';
import { ChatStreamReader } from '../../shared/llm/chat-stream.js';
import { LlmError } from '../../shared/llm/client.js';

const answer = (text: string) => ({ status: 200, text, headers: new Headers() });
const sse = (...chunks: object[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';

describe('a streamed chat completion', () => {
  it('hands each text piece on as it arrives, across split lines and multi-byte characters', () => {
    const seen: string[] = [];
    const reader = new ChatStreamReader((t) => seen.push(t));
    const body = Buffer.from(
      sse(
        { model: 'm1', choices: [{ delta: { role: 'assistant' } }] },
        { choices: [{ delta: { content: 'Grüß' } }] },
        { choices: [{ delta: { content: ' dich' }, finish_reason: 'stop' }] },
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } },
      ),
    );
    // Byte by byte: a line, and the two bytes of "ü", arrive in pieces.
    for (let i = 0; i < body.length; i++) reader.push(body.subarray(i, i + 1));
    expect(seen).toEqual(['Grüß', ' dich']);
    expect(reader.result(answer(body.toString()), 'fallback')).toEqual({
      content: 'Grüß dich',
      toolCalls: [],
      usage: { promptTokens: 5, completionTokens: 2 },
      model: 'm1',
    });
  });

  it('puts tool calls together by index from their pieces', () => {
    const reader = new ChatStreamReader(() => undefined);
    const text = sse(
      { choices: [{ delta: { tool_calls: [{ index: 1, id: 'b', function: { name: 'two', arguments: '{}' } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, id: 'a', function: { name: 'one', arguments: '{"x"' } }] } }] },
      {
        choices: [
          { delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, finish_reason: 'tool_calls' },
        ],
      },
    );
    reader.push(Buffer.from(text));
    const result = reader.result(answer(text), 'm');
    expect(result.content).toBeNull();
    expect(result.toolCalls).toEqual([
      { id: 'a', type: 'function', function: { name: 'one', arguments: '{"x":1}' } },
      { id: 'b', type: 'function', function: { name: 'two', arguments: '{}' } },
    ]);
  });

  it('reads a provider that ignored stream as one completion, and classifies a content-filtered stream', () => {
    const seen: string[] = [];
    const whole = new ChatStreamReader((t) => seen.push(t)).result(
      answer(JSON.stringify({ model: 'm', choices: [{ message: { content: 'all at once' } }] })),
      'm',
    );
    expect(whole.content).toBe('all at once');
    expect(seen).toEqual(['all at once']);
    const filtered = new ChatStreamReader(() => undefined);
    const text = sse({ choices: [{ delta: {}, finish_reason: 'content_filter' }] });
    filtered.push(Buffer.from(text));
    let failure: unknown;
    try {
      filtered.result(answer(text), 'm');
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(LlmError);
    expect((failure as LlmError).failure.kind).toBe('content_refused');
  });
});
