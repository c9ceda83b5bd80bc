import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmError, type ChatMessage, type ToolSpec } from '../../shared/llm/client.js';
import type { EgressPolicy } from '../../shared/http/egress.js';
import { providerClient } from '../../shared/llm/providers.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';

let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(async () => {
  await llm?.close();
});

// The fake provider is on loopback: the deployment allowance for it is set (CRM_ALLOW_INSECURE_LOOPBACK).
const settings = () => ({
  baseUrl: llm.baseUrl as string | undefined,
  apiKey: 'sk-secret',
  model: 'm1' as string | undefined,
  timeoutSeconds: 5,
  egress: { allowPrivate: false, allowLoopback: true } as EgressPolicy,
});
/** One chat call through the OpenAI-compatible client (the `other` kind), as the metered client makes it. */
const chatCompletion = (s: ReturnType<typeof settings>, messages: ChatMessage[], tools: ToolSpec[]) =>
  providerClient({
    kind: 'other',
    fields: { base_url: s.baseUrl, api_key: s.apiKey, model_name: s.model },
    egress: s.egress,
    timeoutMs: s.timeoutSeconds * 1000,
  }).chat(messages, tools);
const failureOf = async (p: Promise<unknown>) => {
  const err = await p.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(LlmError);
  return err as LlmError;
};

describe('OpenAI-compatible chat call', () => {
  it('sends the OpenAI chat format with tools and reads content, tool calls and usage', async () => {
    llm.respond = () => ({
      toolCalls: [{ name: 'action_review', arguments: { action: 'GET_REQUEST_STATUS', proposal_id: 'p1' } }],
    });
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'action_review', description: 'x', parameters: { type: 'object' } },
      },
    ];
    const res = await chatCompletion(settings(), [{ role: 'user', content: 'hi' }], tools);
    expect(res.toolCalls).toHaveLength(1);
    expect(JSON.parse(res.toolCalls[0]!.function.arguments)).toEqual({
      action: 'GET_REQUEST_STATUS',
      proposal_id: 'p1',
    });
    expect(res.usage).toEqual({ promptTokens: 11, completionTokens: 7 });
    const sent = llm.requests.at(-1)!;
    expect(sent).toMatchObject({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
    expect(sent.tools).toEqual(tools);
  });

  it.each([
    [401, 'authentication', false],
    [429, 'rate_limited', true],
    [503, 'unavailable', true],
    [400, 'bad_request', false],
  ])('classifies HTTP %i as %s (retryable %s) without provider text', async (status, kind, retryable) => {
    llm.respond = () => ({ status, body: '{"error":"provider secret detail sk-secret"}' });
    const err = await failureOf(chatCompletion(settings(), [{ role: 'user', content: 'x' }], []));
    expect(err.failure.kind).toBe(kind);
    expect(err.retryable).toBe(retryable);
    expect(JSON.stringify(err.failure)).not.toContain('provider secret');
    expect(err.detailForLogs).toContain('provider secret');
  });

  it('says when no model is configured, and when the answer is not a chat completion', async () => {
    expect((await failureOf(chatCompletion({ ...settings(), model: undefined }, [], []))).failure.kind).toBe(
      'not_configured',
    );
    llm.respond = () => ({ status: 200, body: '<html>proxy login</html>' });
    expect((await failureOf(chatCompletion(settings(), [], []))).failure.kind).toBe('bad_response');
  });

  it('times out a hanging provider as a retryable timeout', async () => {
    llm.respond = () => ({ hang: true });
    const err = await failureOf(chatCompletion({ ...settings(), timeoutSeconds: 1 }, [], []));
    expect(err.failure.kind).toBe('timeout');
    expect(err.retryable).toBe(true);
    llm.release({ content: 'late' });
  });

  it('refuses a metadata, a private or (without the allowance) a loopback provider address as a non-retryable egress_refused', async () => {
    const before = llm.requests.length;
    for (const [baseUrl, policy, says] of [
      [
        'http://169.254.169.254/v1',
        settings().egress,
        /169\.254\.169\.254 is link-local \(cloud metadata\); outbound requests to it are never allowed/,
      ],
      [
        'http://10.0.0.7:8080/v1',
        settings().egress,
        /10\.0\.0\.7 is private; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set/,
      ],
      [llm.baseUrl, { allowPrivate: false, allowLoopback: false }, /is loopback; allowed only when/],
    ] as const) {
      const err = await failureOf(
        chatCompletion({ ...settings(), baseUrl, egress: policy }, [{ role: 'user', content: 'x' }], []),
      );
      expect(err.failure.kind).toBe('egress_refused');
      expect(err.failure.message).toMatch(says);
      expect(err.retryable).toBe(false);
    }
    expect(llm.requests.length).toBe(before);
  });
});
