import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postMessage, startThread } from '../../shared/threads/service.js';
import type { Principal } from '../../shared/auth/principal.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let envModel: FakeLlm;
let saved: FakeLlm;
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

beforeAll(async () => {
  envModel = await startFakeLlm(() => ({ content: 'from env' }));
  saved = await startFakeLlm(() => ({ content: 'from saved anthropic' }));
  stack = await startStack({
    env: { PLATFORM_LLM_BASE_URL: envModel.baseUrl, PLATFORM_LLM_MODEL: 'env-model', PLATFORM_LLM_API_KEY: 'sk-env' },
  });
});
afterAll(async () => {
  await stack?.close();
  await envModel?.close();
  await saved?.close();
});

describe('the active provider is resolved per model call', () => {
  it('switches an agent thread to another provider between two turns, without a restart', async () => {
    const em = () => stack.api.deps.orm.em.fork();
    const overview = await http(stack.url, 'GET', '/api/config/ai-providers/overview');
    expect(overview.body.data.active).toMatchObject({ source: 'env', model: 'env-model' });

    const { thread, turn } = await startThread(stack.api.deps, em(), owner, {
      initialPrompt: 'first',
      origin: 'mcp_origin',
    });
    expect(turn).toMatchObject({ ok: true, reply: 'from env' });
    expect(envModel.requests).toHaveLength(1);

    const save = await http(stack.url, 'POST', '/api/config/llm-providers/anthropic', {
      body: {
        base_url: saved.origin,
        api_key: 'ant-key',
        model_name: 'claude-fake',
        input_usd_per_mtok: 3,
        output_usd_per_mtok: 15,
      },
    });
    expect(save.body.success).toBe(true);
    expect(
      (await http(stack.url, 'POST', '/api/config/llm-providers/anthropic/activate', { body: {} })).body.success,
    ).toBe(true);

    const second = await postMessage(stack.api.deps, owner, thread, 'second');
    expect(second).toMatchObject({ ok: true, reply: 'from saved anthropic' });
    expect(envModel.requests).toHaveLength(1);
    expect(saved.calls.at(-1)).toMatchObject({ method: 'POST', path: '/v1/messages', credential: 'ant-key' });
    // The conversation so far reached the new provider in its own wire format.
    expect(
      saved.requests
        .at(-1)!
        .messages.filter((m) => m.role !== 'system')
        .map((m) => m.content),
    ).toEqual(['first', 'from env', 'second']);
    const usage = await query<{ provider: string; model: string; cost_usd: string }>(
      stack.db.url,
      'select provider, model, cost_usd from llm_usage where thread_id = $1 order by id',
      [thread.id],
    );
    expect(usage.map((u) => [u.provider, u.model])).toEqual([
      [new URL(envModel.baseUrl).host, 'env-model'],
      ['anthropic', 'claude-fake'],
    ]);
    // 11 prompt and 7 completion tokens at 3 and 15 USD per million.
    expect(Number(usage[1]!.cost_usd)).toBeCloseTo((11 * 3 + 7 * 15) / 1e6, 9);

    // Denying the active provider takes effect on the next turn too: a classified llm_error, no call.
    await http(stack.url, 'PUT', '/api/config/llm-providers/anthropic/admission', { body: { admission: 'deny' } });
    const calls = saved.calls.length;
    const third = await postMessage(stack.api.deps, owner, thread, 'third').catch((e: unknown) => e);
    expect((third as { errorType?: string }).errorType).toBe('llm_error');
    expect((third as { payload?: { llm_failure?: { kind: string } } }).payload?.llm_failure?.kind).toBe(
      'not_configured',
    );
    expect(saved.calls.length).toBe(calls);
  });
});
