import { expect } from 'vitest';
import type { FakeLlm } from '../helpers/fake-llm.js';
import { http } from '../helpers/stack.js';

/** Saves the fake model as provider `other:acme` and makes its `embed-a` the embedding model (as the local admin). */
export async function useFakeEmbeddings(baseUrl: string, llm: FakeLlm): Promise<void> {
  const saved = await http(baseUrl, 'POST', '/api/config/llm-providers/other', {
    body: { sub_provider: 'acme', base_url: llm.baseUrl, api_key: 'k1', model_name: 'fake-model' },
  });
  expect(saved.body.success, saved.text).toBe(true);
  const set = await http(baseUrl, 'PUT', '/api/config/models/embeddings/config', {
    body: { provider_kind: 'other', sub_provider: 'acme', model_name: 'embed-a' },
  });
  expect(set.body.success, set.text).toBe(true);
}
