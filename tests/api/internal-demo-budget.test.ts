import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initOrm } from '../../shared/db/orm.js';
import { recordLlmUsage } from '../../shared/deployment/demo-budget.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
const internal = { 'x-platform-internal-token': 'internal-secret' };

beforeAll(async () => {
  stack = await startStack({ worker: false, env: { PLATFORM_INTERNAL_TOKEN: 'internal-secret' } });
});
afterAll(async () => {
  await stack?.close();
});

describe('internal demo-budget routes', () => {
  it('aggregates nothing on a fresh deployment', async () => {
    const res = await http(stack.url, 'GET', '/api/internal/demo-budget/aggregate', { headers: internal });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        spend_usd: 0,
        cap_usd: null,
        remaining_usd: null,
        exhausted: false,
        llm_call_count: 0,
        latest_llm_call_at: null,
        latest_sign_in_at: null,
      },
    });
  });

  it('sums recorded language-model spend against the cap, with the latest call and sign-in times', async () => {
    const orm = await initOrm({ clientUrl: stack.db.url, poolMax: 1 });
    try {
      const em = orm.em.fork();
      await recordLlmUsage(em, {
        tenant: 'default',
        provider: 'openai',
        model: 'm',
        purpose: 'skill',
        promptTokens: 10,
        completionTokens: 5,
        costUsd: 1.25,
        occurredAt: new Date('2026-11-01T10:00:00Z'),
      });
      await recordLlmUsage(em, {
        tenant: 'default',
        provider: 'openai',
        model: 'm',
        purpose: 'skill',
        promptTokens: 10,
        completionTokens: 5,
        costUsd: 2.5,
        occurredAt: new Date('2026-11-02T10:00:00Z'),
      });
    } finally {
      await orm.close();
    }
    // Any authenticated request records the (local admin) sign-in.
    await http(stack.url, 'GET', '/api/auth/me');

    const cap = await http(stack.url, 'PUT', '/api/internal/demo-budget/cap', {
      headers: internal,
      body: { cap_usd: 3 },
    });
    expect(cap.status).toBe(200);
    expect(cap.body).toMatchObject({ success: true, data: { cap_usd: 3 } });

    const res = await http(stack.url, 'GET', '/api/internal/demo-budget/aggregate', { headers: internal });
    expect(res.body.data).toMatchObject({
      spend_usd: 3.75,
      cap_usd: 3,
      remaining_usd: 0,
      exhausted: true,
      llm_call_count: 2,
      latest_llm_call_at: '2026-11-02T10:00:00.000Z',
    });
    expect(Date.parse(res.body.data.latest_sign_in_at)).toBeGreaterThan(Date.now() - 60_000);

    const raised = await http(stack.url, 'PUT', '/api/internal/demo-budget/cap', {
      headers: internal,
      body: { cap_usd: 10 },
    });
    expect(raised.body.data.cap_usd).toBe(10);
    const after = await http(stack.url, 'GET', '/api/internal/demo-budget/aggregate', { headers: internal });
    expect(after.body.data).toMatchObject({ cap_usd: 10, remaining_usd: 6.25, exhausted: false });
  });

  it('refuses a negative cap and writes nothing', async () => {
    const before = await query(stack.db.url, 'select value from deployment_settings');
    const res = await http(stack.url, 'PUT', '/api/internal/demo-budget/cap', {
      headers: internal,
      body: { cap_usd: -1 },
    });
    expect(res.status).toBe(400);
    expect(res.body.payload.fields[0].field).toBe('body.cap_usd');
    expect(await query(stack.db.url, 'select value from deployment_settings')).toEqual(before);
  });

  it('refuses the cap without the internal token and writes nothing', async () => {
    const before = await query(stack.db.url, 'select value from deployment_settings');
    const res = await http(stack.url, 'PUT', '/api/internal/demo-budget/cap', { body: { cap_usd: 99 } });
    expect(res.status).toBe(401);
    expect(res.body.payload.reason).toBe('internal_token_absent');
    expect(await query(stack.db.url, 'select value from deployment_settings')).toEqual(before);
  });
});
