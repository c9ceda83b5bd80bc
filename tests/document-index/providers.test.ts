/**
 * Document indexes with providers: ASK answered by a fake OpenAI-compatible chat server (loopback) with
 * numbered footnotes; an embedding identity change strands the indexes (`needs_reindex` true, null
 * `chunk_config`) until the re-embedding workflow has embedded every chunk into the new collection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let llm: FakeLlm;
let stack: Stack;

const call = (method: string, path: string, body?: unknown) =>
  http(stack.url, method, path, body === undefined ? {} : { body });
const ok = async (args: Record<string, unknown>) => {
  const r = await call('POST', '/api/tool_call', { tool: '_document_index', arguments: args });
  expect(r.status, r.text).toBe(200);
  return r.body.data.result;
};

/** Polls until `check` holds (no timing assertion: the deadline only bounds a broken run). */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  llm = await startFakeLlm(() => ({ content: 'Backups are kept for thirty days [1].' }));
  // A hung embedding call times out after 2 s and its batch is retried.
  stack = await startStack({ env: { PLATFORM_LLM_TIMEOUT_SECONDS: '2' } });
  await ok({ action: 'CREATE_INDEX', index_name: 'kb', chunk_size: 64, chunk_overlap: 8 });
  await ok({
    action: 'ADD_TEXT',
    index_name: 'kb',
    text: 'Nightly backups run at two. Backups are kept for thirty days.',
    metadata: { filepath: 'ops/backups.md' },
  });
  await ok({
    action: 'ADD_TEXT',
    index_name: 'kb',
    text: 'Rotate keys every quarter.',
    metadata: { filepath: 'ops/keys.md' },
  });
  const saved = await call('POST', '/api/config/llm-providers/other', {
    sub_provider: 'acme',
    base_url: llm.baseUrl,
    api_key: 'k1',
    model_name: 'fake-model',
  });
  expect(saved.body.success, saved.text).toBe(true);
  const active = await call('POST', '/api/config/llm-providers/other/activate', { sub_provider: 'acme' });
  expect(active.status, active.text).toBe(200);
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await llm?.close();
});

describe('document indexes with providers', () => {
  it('ASK answers through the chat provider with the numbered sources in the prompt and footnotes in the result', async () => {
    const r = await ok({ action: 'ASK', query: 'how long are backups kept' });
    expect(r).toMatchObject({
      Success: true,
      answer: 'Backups are kept for thirty days [1].',
      answer_type: 'generated',
    });
    expect(r.footnotes[0]).toBe('[1] kb: ops/backups.md (chunk 0)');
    const prompt = llm.requests
      .at(-1)!
      .messages.map((m) => m.content)
      .join('\n');
    expect(prompt).toContain('[1] (kb: ops/backups.md)');
    expect(prompt).toContain('Question: how long are backups kept');
  });

  it('an embedding identity change strands the index until re-embedding fills the new collection', async () => {
    const before = (await ok({ action: 'GET_INDICES_STATS' })).Indices[0];
    expect(before).toMatchObject({ needs_reindex: false, collections: ['local_hashing_384_v1_index'] });
    // Re-embedding cannot start while the fake's embeddings hang: the stranded state is observable.
    llm.embeddingsHang = true;
    const set = await call('PUT', '/api/config/models/embeddings/config', {
      provider_kind: 'other',
      sub_provider: 'acme',
      model_name: 'embed-a',
    });
    expect(set.body.success, set.text).toBe(true);
    const stranded = (await ok({ action: 'LIST_INDICES' })).IndexDetails[0];
    expect(stranded).toMatchObject({
      name: 'kb',
      needs_reindex: true,
      chunk_config: null,
      embedding_collection: 'other_acme_embed_a_index',
    });
    llm.embeddingsHang = false;
    const status = await until(
      're-embedding completed',
      async () => (await call('GET', '/api/config/models/embeddings/reindexing-status')).body.data,
      (s) => s.status === 'completed',
    );
    expect(status).toMatchObject({ total: 2, done: 2, failed: 0, indexes: ['document_indexes'] });
    const after = (await http(stack.url, 'GET', '/api/indexes')).body.data.indexes[0];
    expect(after).toMatchObject({
      needs_reindex: false,
      chunk_config: { chunk_size: 64, chunk_overlap: 8, chunk_strategy: 'sentence' },
      collections: ['local_hashing_384_v1_index', 'other_acme_embed_a_index'],
    });
    // Search now embeds the query through the provider and still ranks lexically.
    const hits = (await ok({ action: 'SEARCH', query: 'rotate keys' })).results;
    expect(hits[0].filepath).toBe('ops/keys.md');
    expect(llm.embeddingInputs.at(-1)).toEqual(['rotate keys']);
  }, 120_000);
});
