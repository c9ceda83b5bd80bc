// The provider interface and its target, apart from providers.ts so that a wire format in its own
// module (warehouse-ai.ts) implements it without importing the module that lists it.
import type { AwsSettings } from '../aws/credentials.js';
import type { EgressPolicy } from '../http/egress.js';
import type { ChatFn, ChatMessage, ChatOptions, ChatResult, ToolSpec } from './client.js';
import type { ProviderFields, ProviderKind } from './provider-kinds.js';

/** Which provider to talk to: its kind and flat configuration (secrets opened), and the call's limits. */
export interface ProviderTarget {
  kind: ProviderKind;
  fields: ProviderFields;
  egress: EgressPolicy;
  timeoutMs: number;
  /** The deployment's AWS credentials and endpoint overrides (`config.aws`): Bedrock-type `iam_role`. */
  aws?: AwsSettings;
}

export interface EmbeddingResult {
  vectors: number[][];
  promptTokens: number;
  model: string;
}

/** One interface over every wire format: chat with tool calls, embeddings, model listing, the connection test. */
export interface LlmProvider {
  /** `options.onDelta` follows the answer's text as it arrives (streamed where the wire format allows it). */
  chat(messages: ChatMessage[], tools: ToolSpec[], model?: string, options?: ChatOptions): Promise<ChatResult>;
  embed(texts: string[], model?: string): Promise<EmbeddingResult>;
  listModels(): Promise<string[]>;
  /**
   * The save-time test: answers a sentence on success, throws a classified `LlmError` otherwise. A test
   * that pings the model does it through `chat`, the metered call (`metered.ts`), never its own.
   */
  test(chat: ChatFn): Promise<string>;
}
