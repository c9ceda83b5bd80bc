/**
 * The startup embedding smoke test: an API started with a saved proxy-routed provider answers at once
 * while the smoke test is pending against a hanging fake, which later reads as failed (5-second bound);
 * against a healthy fake it reads ok.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApi, type RunningApi } from '../../api/server.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let llm: FakeLlm;
let stack: Stack;
let tenant: string;
const apis: RunningApi[] = [];

beforeAll(async () => {
  llm = await startFakeLlm();
  stack = await startStack({ worker: false });
  tenant = stack.config.auth.deploymentTenant;
  const saved = await http(stack.url, 'POST', '/api/config/llm-providers/proxy', {
    body: { base_url: llm.baseUrl, api_key: 'k1', embedding_model_name: 'fake-embed' },
  });
  expect(saved.body.success).toBe(true);
}, 120_000);
afterAll(async () => {
  llm.embeddingsHang = false;
  for (const a of apis) await a.close();
  await stack?.close();
  await llm?.close();
});

async function boot(): Promise<RunningApi> {
  const api = await startApi(stack.config, stack.log);
  apis.push(api);
  return api;
}

describe('startup embedding smoke test', () => {
  it('never delays boot; a hanging proxy provider reads as failed', async () => {
    llm.embeddingsHang = true;
    const api = await boot();
    // Boot is over and the smoke test is still waiting for the hanging provider (it registers its
    // pending reading after a few reads of its own, hence the wait); the API answers meanwhile.
    await vi.waitFor(() =>
      expect(api.deps.embeddingSmoke!.forTenant(tenant)).toMatchObject([
        { provider: 'proxy', model: 'fake-embed', status: 'pending', finished_at: null },
      ]),
    );
    const info = await http(api.url, 'GET', '/api/config/llm-providers/info');
    expect(info.status).toBe(200);
    await api.deps.embeddingSmoke!.finished;
    const health = await http(api.url, 'GET', '/api/config/ai-providers/embedding-health');
    expect(health.status).toBe(200);
    expect(health.body.data.status).toBe('unavailable');
    expect(health.body.data.startup_smoke_tests).toMatchObject([
      { provider: 'proxy', model: 'fake-embed', status: 'failed', message: expect.stringMatching(/within 5 seconds/) },
    ]);
    expect(health.body.data.startup_smoke_tests[0].finished_at).not.toBeNull();
  }, 60_000);

  it('reads ok against a healthy proxy provider', async () => {
    llm.embeddingsHang = false;
    const api = await boot();
    await api.deps.embeddingSmoke!.finished;
    const health = await http(api.url, 'GET', '/api/config/ai-providers/embedding-health');
    expect(health.body.data).toMatchObject({
      status: 'ok',
      startup_smoke_tests: [{ provider: 'proxy', model: 'fake-embed', status: 'ok' }],
    });
  }, 60_000);
});
