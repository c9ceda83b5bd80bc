import { StringDecoder } from 'node:string_decoder';
import {
  chatResultOf,
  contentRefused,
  llmFailure,
  type ChatResult,
  type ProviderAnswer,
  type ToolCall,
} from './client.js';

/**
 * A streamed OpenAI chat completion (`stream: true`): Server-Sent Events whose `data:` lines are
 * `chat.completion.chunk` objects, ended by `data: [DONE]`. `push` takes the body as it arrives and hands
 * each piece of answer text to `onDelta` at once; `result` assembles the whole answer (text, tool calls
 * put together by index, usage) once the body is read. A provider that ignored `stream` and answered one
 * JSON completion is read as such (its text reaches `onDelta` in one piece).
 */
export class ChatStreamReader {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private content = '';
  private sawContent = false;
  private model: string | undefined;
  private finishReason: string | undefined;
  private usage = { promptTokens: 0, completionTokens: 0 };
  private readonly calls = new Map<number, ToolCall>();
  private chunks = 0;

  constructor(private readonly onDelta: (text: string) => void) {}

  /** One piece of the body; never throws (a broken line is judged by `result`). */
  push(chunk: Buffer): void {
    this.pending += this.decoder.write(chunk);
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl).replace(/\r$/, '');
      this.pending = this.pending.slice(nl + 1);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (!line.startsWith('data:')) return;
    const data = line.slice(5).trim();
    if (!data || data === '[DONE]') return;
    let chunk: StreamChunk;
    try {
      chunk = JSON.parse(data) as StreamChunk;
    } catch {
      return;
    }
    this.chunks++;
    this.model ??= chunk.model;
    if (chunk.usage)
      this.usage = {
        promptTokens: chunk.usage.prompt_tokens ?? 0,
        completionTokens: chunk.usage.completion_tokens ?? 0,
      };
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const text = choice.delta?.content;
    if (typeof text === 'string' && text) {
      this.sawContent = true;
      this.content += text;
      this.onDelta(text);
    }
    for (const part of choice.delta?.tool_calls ?? []) this.toolCallPart(part);
  }

  private toolCallPart(part: ToolCallPart): void {
    const index = part.index ?? 0;
    let call = this.calls.get(index);
    if (!call) {
      call = { id: part.id ?? `call_${index}`, type: 'function', function: { name: '', arguments: '' } };
      this.calls.set(index, call);
    }
    if (part.id) call.id = part.id;
    if (part.function?.name) call.function.name += part.function.name;
    if (part.function?.arguments) call.function.arguments += part.function.arguments;
  }

  /** The whole answer; a non-streamed JSON answer is read as one completion. */
  result(answer: ProviderAnswer, model: string): ChatResult {
    if (this.chunks === 0) {
      const whole = chatResultOf(answer, model);
      if (whole.content) this.onDelta(whole.content);
      return whole;
    }
    if (this.finishReason === 'content_filter' && !this.sawContent) throw contentRefused(answer.text.slice(0, 500));
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => c)
      .filter((c) => c.function.name);
    if (!this.sawContent && !toolCalls.length && this.finishReason === undefined)
      throw llmFailure(
        'bad_response',
        'The language-model provider ended its streamed answer without a message.',
        'Check that the provider is OpenAI-compatible.',
        false,
        answer.text.slice(0, 500),
      );
    return { content: this.sawContent ? this.content : null, toolCalls, usage: this.usage, model: this.model ?? model };
  }
}

interface ToolCallPart {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface StreamChunk {
  model?: string;
  choices?: Array<{ delta?: { content?: string | null; tool_calls?: ToolCallPart[] }; finish_reason?: string | null }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}
