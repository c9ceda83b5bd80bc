/**
 * The proxy kind's `transport: 'responses'`: chat goes to `POST /responses` in the Responses format
 * (instructions, input items, flat function tools) and its output items come back as the platform's
 * messages, tool calls included; an agent thread runs on it after it is saved and activated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startThread } from '../../shared/threads/service.js';
import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { LlmError, type ChatMessage, type ToolSpec } from '../../shared/llm/client.js';
import { providerClient } from '../../shared/llm/providers.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let model: FakeLlm;
let stack: Stack;

const owner: Principal = {
  kind: 'person',
  id: 'local-admin',
  tenant: 'default',
  displayName: 'local-admin',
  roles: ['admin'],
  permissions: permissionsFor(['admin']),
  credential: 'idp_jwt',
};

const lookup: ToolSpec = {
  type: 'function',
  function: {
    name: 'lookup',
    description: 'Looks a record up',
    parameters: { type: 'object', properties: { id: { type: 'string' } } },
  },
};

beforeAll(async () => {
  model = await startFakeLlm((req) =>
    req.messages.some((m) => m.role === 'tool')
      ? { content: `found ${req.messages.find((m) => m.role === 'tool')!.content}` }
      : req.tools?.length
        ? { toolCalls: [{ name: 'lookup', arguments: { id: 'r-1' } }] }
        : { content: 'over responses' },
  );
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
  await model?.close();
});

const proxy = () =>
  providerClient({
    kind: 'proxy',
    fields: { base_url: model.baseUrl, api_key: 'pk', model_name: 'resp-model', transport: 'responses' },
    egress: stack.config.egress,
    timeoutMs: 10_000,
  });

describe('the Responses transport of the proxy kind', () => {
  it('round-trips a function call: tools go out flat, the call comes back, its output goes back as an input item', async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'find r-1' },
    ];
    const first = await proxy().chat(messages, [lookup]);
    expect(model.calls.at(-1)).toMatchObject({ method: 'POST', path: '/v1/responses', credential: 'pk' });
    expect(first.content).toBeNull();
    expect(first.toolCalls).toEqual([
      { id: expect.any(String), type: 'function', function: { name: 'lookup', arguments: '{"id":"r-1"}' } },
    ]);
    expect(first.usage).toEqual({ promptTokens: 11, completionTokens: 7 });
    const sent = model.requests.at(-1)!;
    expect(sent.model).toBe('resp-model');
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'be brief' });
    expect(sent.tools).toEqual([
      { type: 'function', function: { name: 'lookup', parameters: lookup.function.parameters } },
    ]);

    const callId = first.toolCalls[0]!.id;
    const second = await proxy().chat(
      [
        ...messages,
        { role: 'assistant', content: null, tool_calls: first.toolCalls },
        { role: 'tool', tool_call_id: callId, content: 'record r-1' },
      ],
      [lookup],
    );
    expect(second).toMatchObject({ content: 'found record r-1', toolCalls: [] });
    const back = model.requests.at(-1)!.messages;
    expect(back.find((m) => m.role === 'tool')).toEqual({ role: 'tool', content: 'record r-1', tool_call_id: callId });
    expect(back.find((m) => m.tool_calls)?.tool_calls).toEqual([
      { id: callId, type: 'function', function: { name: 'lookup', arguments: '{"id":"r-1"}' } },
    ]);
  });

  it('classifies an answer without output as a bad response, without the provider text', async () => {
    const saved = model.respond;
    model.respond = () => ({
      status: 200,
      body: '{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}',
    });
    try {
      const err = await proxy()
        .chat([{ role: 'user', content: 'x' }], [])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LlmError);
      expect((err as LlmError).failure).toMatchObject({ kind: 'bad_response' });
      expect((err as LlmError).failure.message).toContain('max_output_tokens');
      expect(JSON.stringify((err as LlmError).failure)).not.toContain('"output"');
    } finally {
      model.respond = saved;
    }
  });

  it('runs an agent thread once the proxy is saved with transport responses and activated', async () => {
    const save = await http(stack.url, 'POST', '/api/config/llm-providers/proxy', {
      body: { base_url: model.baseUrl, api_key: 'pk', model_name: 'resp-model', transport: 'responses' },
    });
    expect(save.body.success, save.text).toBe(true);
    const activate = await http(stack.url, 'POST', '/api/config/llm-providers/proxy/activate', { body: {} });
    expect(activate.body.success, activate.text).toBe(true);
    const before = model.calls.length;
    const { turn } = await startThread(stack.api.deps, stack.api.deps.orm.em.fork(), owner, {
      initialPrompt: 'hello',
      origin: 'mcp_origin',
    });
    expect(turn).toMatchObject({ ok: true, reply: expect.any(String) });
    expect(model.calls.slice(before).every((c) => c.path === '/v1/responses')).toBe(true);
    expect(model.calls.length).toBeGreaterThan(before);
  });
});
