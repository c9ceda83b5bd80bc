/**
 * Issue 31 item 8, over real HTTP: `DELETE /api/config/llm-providers/{kind}` (a vendor of `other` by
 * `sub_provider`, the "no configuration" 404, the active provider cleared), the optional
 * `LlmOperationResponse` fields `embedding_adoption` and `warning_message`, and
 * `secret-fields/{field_path}/set-value` for secret settings beside provider credentials.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { startLlmConfigStack, type LlmConfigStack } from './support.js';

let s: LlmConfigStack;
beforeAll(async () => {
  s = await startLlmConfigStack();
});
afterAll(() => s?.close());

const call = (method: string, path: string, body?: unknown, token = s.tokens.admin) =>
  http(s.stack.url, method, path, { token, ...(body === undefined ? {} : { body }) });
const P = '/api/config/llm-providers';
const providerRows = async () =>
  (
    await query<{ provider_kind: string; sub_provider: string }>(
      s.stack.db.url,
      'select provider_kind, sub_provider from llm_providers order by provider_kind, sub_provider',
    )
  ).map((r) => `${r.provider_kind}:${r.sub_provider}`);
const savedSetting = async (path: string) =>
  (
    await query<{ value: unknown; sealed: string | null }>(
      s.stack.db.url,
      'select value, sealed from platform_settings where path = $1',
      [path],
    )
  )[0];

describe('LlmOperationResponse: embedding_adoption and warning_message', () => {
  it('adopts the first provider naming an embedding model as the embedding identity, and says so once', async () => {
    const first = await call('POST', `${P}/other`, {
      sub_provider: 'acme',
      base_url: s.llm.baseUrl,
      api_key: 'k1',
      model_name: 'fake-model',
      embedding_model_name: 'fake-embed',
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      success: true,
      message: expect.stringContaining('Saved the'),
      embedding_adoption: { adopted: true, provider_kind: 'other', sub_provider: 'acme', model_name: 'fake-embed' },
    });
    expect((await call('GET', '/api/config/models/embeddings/config')).body.data).toEqual({
      source: 'saved',
      provider_kind: 'other',
      sub_provider: 'acme',
      model_name: 'fake-embed',
    });
    // An embedding identity is saved now: a second provider naming one is not adopted.
    const second = await call('POST', `${P}/other`, {
      sub_provider: 'zeta',
      base_url: s.llm.baseUrl,
      api_key: 'k2',
      model_name: 'fake-model',
      embedding_model_name: 'other-embed',
    });
    expect(second.status).toBe(200);
    expect(second.body.success).toBe(true);
    expect(second.body).not.toHaveProperty('embedding_adoption');
    expect(second.body).not.toHaveProperty('warning_message');
    expect((await call('GET', '/api/config/models/embeddings/config')).body.data.model_name).toBe('fake-embed');
  });

  it('warns when a saved provider names no chat model (saved all the same)', async () => {
    const res = await call('POST', `${P}/openai`, { api_key: 'sk-test' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      message: expect.stringContaining('Saved the'),
      warning_message: 'No chat model is named (model_name); calls through this provider need one.',
    });
    expect(await providerRows()).toContain('openai:');
  });
});

describe('DELETE /api/config/llm-providers/{kind}', () => {
  it('deletes one vendor of `other` by sub_provider, leaving the others; the active provider is cleared', async () => {
    expect((await call('POST', `${P}/other/activate`, { sub_provider: 'zeta' })).body.success).toBe(true);
    expect((await call('GET', `${P}/info`)).body.data.summary.active).toMatchObject({
      source: 'saved',
      provider_kind: 'other',
      sub_provider: 'zeta',
    });
    const before = await providerRows();
    const noSub = await call('DELETE', `${P}/other`, {});
    expect(noSub.status).toBe(400);
    expect(noSub.body.error_type).toBe('bad_request');
    expect(await providerRows()).toEqual(before);

    const gone = await call('DELETE', `${P}/other`, { sub_provider: 'zeta' });
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ success: true, message: expect.stringContaining('Deleted the') });
    expect(await providerRows()).toEqual(before.filter((r) => r !== 'other:zeta'));
    expect((await call('GET', `${P}/info`)).body.data.summary.active.sub_provider).not.toBe('zeta');
  });

  it('answers 404 when no configuration exists, and refuses undeclared fields (422) and members (403)', async () => {
    const before = await providerRows();
    const again = await call('DELETE', `${P}/other`, { sub_provider: 'zeta' });
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ error_type: 'not_found', payload: { reason: 'provider_not_saved' } });
    expect(again.body.request_id).toEqual(expect.any(String));
    expect((await call('DELETE', `${P}/anthropic`, {})).status).toBe(404);
    const undeclared = await call('DELETE', `${P}/openai`, { nonsense: 1 });
    expect(undeclared.status).toBe(422);
    expect((await call('DELETE', `${P}/openai`, {}, s.tokens.member)).status).toBe(403);
    expect(await providerRows()).toEqual(before);
  });

  it('deletes a single-vendor kind with its base fields in the body', async () => {
    const res = await call('DELETE', `${P}/openai`, { api_key: '********' });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(await providerRows()).not.toContain('openai:');
    expect(await providerRows()).toContain('other:acme');
  });
});

describe('secret-fields set-value for secret settings', () => {
  const setValue = (path: string, value: string, token = s.tokens.admin) =>
    call('POST', `/api/config/secret-fields/${path}/set-value`, { value }, token);

  it('sets a secret setting sealed at rest and masked on read', async () => {
    const res = await setValue('etl.runner_token', 'runner-tok-123');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: expect.any(String), field_path: 'etl.runner_token' });
    expect(res.text).not.toContain('runner-tok-123');
    const row = await savedSetting('etl.runner_token');
    expect(row!.value).toBeNull();
    expect(String(row!.sealed)).toMatch(/^v1\./);
    expect(String(row!.sealed)).not.toContain('runner-tok-123');
    const read = await call('GET', '/api/config/setup/sources?path=etl.runner_token');
    expect(read.body.data).toMatchObject({ effective_value: '********', source: 'saved' });
    expect(await s.stack.api.deps.settings.get('etl.runner_token')).toBe('runner-tok-123');
  });

  it('the service-desk webhook secret set here is the one the webhook checks', async () => {
    const raw = JSON.stringify({
      webhookEvent: 'jira:issue_updated',
      issue: { key: 'SD-31', fields: { summary: 'Set through set-value', status: { name: 'Open' } } },
    });
    const sign = (secret: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
    const send = (signature: string) =>
      http(s.stack.url, 'POST', '/api/config/tracker-automation/service-desk/webhook', {
        raw,
        headers: { 'content-type': 'application/json', 'x-webhook-signature': signature },
      });
    const before = await send(sign('hook-secret-31'));
    expect(before.status).toBe(401);
    expect(before.body.payload.reason).toBe('webhook_secret_not_configured');
    const set = await setValue('enhancements.tracker_automation.service_desk_webhook_secret', 'hook-secret-31');
    expect(set.body.success).toBe(true);
    const wrong = await send(sign('another-secret'));
    expect(wrong.status).toBe(401);
    expect(wrong.body.payload.reason).toBe('bad_signature');
    const ok = await send(sign('hook-secret-31'));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.issue_key).toBe('SD-31');
  });

  it('refuses a process-level secret, a setting that is no secret, and a member, saving nothing', async () => {
    const processLevel = await setValue('auth.client_secret', 'nope');
    expect(processLevel.status).toBe(400);
    expect(processLevel.body.payload.refused).toEqual([
      expect.objectContaining({ path: 'auth.client_secret', reason: 'process_level' }),
    ]);
    expect(await savedSetting('auth.client_secret')).toBeUndefined();
    const notSecret = await setValue('etl.runner_url', 'https://runner.example.test');
    expect(notSecret.status).toBe(400);
    expect(await savedSetting('etl.runner_url')).toBeUndefined();
    const byMember = await setValue('etl.cloud_token', 'member-tok', s.tokens.member);
    expect(byMember.status).toBe(403);
    expect(await savedSetting('etl.cloud_token')).toBeUndefined();
  });
});
