/**
 * Document indexes with providers: ASK answered by a fake OpenAI-compatible chat server (loopback) with
 * numbered footnotes, from the named index only; its model call counted (`platform_llm_calls_total`),
 * its spend recorded and refused at the demo budget cap like a thread turn; an embedding identity
 * change strands the indexes (`needs_reindex` true, null `chunk_config`) until the re-embedding
 * workflow has embedded every chunk into the new collection (those embedding calls metered too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIndex } from '../../shared/document-index/store.js';
import { query } from '../helpers/db.js';
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

const INTERNAL = { 'x-platform-internal-token': 'internal-secret' };
const metrics = async () => {
  const r = await http(stack.url, 'GET', '/metrics', { headers: INTERNAL });
  expect(r.status).toBe(200);
  return r.text;
};
/** One sample's value (`name{labels} value`), 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const m = /^([^{\s]+)\{(.*)\}\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return 0;
}

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
  stack = await startStack({ env: { PLATFORM_LLM_TIMEOUT_SECONDS: '2', PLATFORM_INTERNAL_TOKEN: 'internal-secret' } });
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
    input_usd_per_mtok: 3,
    output_usd_per_mtok: 15,
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
    const r = await ok({ action: 'ASK', query: 'how long are backups kept', index_name: 'kb' });
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

  it('ASK retrieves from the named index only: its sources, footnotes and prompt never cite another', async () => {
    // A second index whose content also answers the question: ASK on one must never cite the other.
    await ok({ action: 'CREATE_INDEX', index_name: 'archive' });
    try {
      await ok({
        action: 'ADD_TEXT',
        index_name: 'archive',
        text: 'Archived backups are kept for seven years on tape.',
        metadata: { filepath: 'legal/retention.md' },
      });
      // Without index_name both indexes answer (the spec's default: every index).
      const all = await ok({ action: 'ASK', query: 'how long are backups kept' });
      expect(new Set(all.sources.map((s: { index_name: string }) => s.index_name))).toEqual(new Set(['kb', 'archive']));
      for (const [name, other] of [
        ['kb', 'archive'],
        ['archive', 'kb'],
      ] as const) {
        const r = await ok({ action: 'ASK', query: 'how long are backups kept', index_name: name });
        expect(r.sources.length).toBeGreaterThan(0);
        expect(r.sources.every((s: { index_name: string }) => s.index_name === name)).toBe(true);
        expect(r.footnotes.every((f: string) => f.includes(`] ${name}: `))).toBe(true);
        const prompt = llm.requests.at(-1)!.messages.at(-1)!.content!;
        expect(prompt).toContain(`(${name}: `);
        expect(prompt).not.toContain(`(${other}: `);
      }
    } finally {
      await ok({ action: 'DELETE_INDEX', index_name: 'archive' });
    }
  });

  it('ASK on an unknown index, or one of another tenant, answers 404 without calling the model', async () => {
    await createIndex(stack.api.deps.orm.em.fork(), 'elsewhere', 'foreign', {
      chunk_size: null,
      chunk_overlap: null,
      chunk_strategy: null,
    });
    const before = llm.requests.length;
    for (const name of ['no-such-index', 'foreign']) {
      const r = await call('POST', '/api/tool_call', {
        tool: '_document_index',
        arguments: { action: 'ASK', query: 'how long are backups kept', index_name: name },
      });
      expect(r.status, r.text).toBe(404);
      expect(r.body).toMatchObject({ error_type: 'not_found', payload: { index_name: name } });
    }
    expect(llm.requests.length).toBe(before);
  });

  it("ASK's model call is counted in platform_llm_calls_total and its spend recorded, as a thread turn's is", async () => {
    const before = await metrics();
    const rows = async () =>
      query(
        stack.db.url,
        `select provider, model, prompt_tokens, completion_tokens, cost_usd, thread_id
         from llm_usage where purpose = 'ask' order by id`,
      );
    const recorded = (await rows()).length;
    await ok({ action: 'ASK', query: 'how long are backups kept', index_name: 'kb' });
    const after = await metrics();
    const labels = { scope: 'other', purpose: 'ask' };
    expect(sample(after, 'platform_llm_calls_total', labels)).toBe(
      sample(before, 'platform_llm_calls_total', labels) + 1,
    );
    // 11 prompt tokens at $3/M + 7 completion tokens at $15/M (the fake's usage, the saved provider's prices).
    expect(sample(after, 'platform_llm_spend_usd_total', labels)).toBeCloseTo(
      sample(before, 'platform_llm_spend_usd_total', labels) + 0.000138,
      9,
    );
    const mine = (await rows()).slice(recorded);
    expect(mine).toEqual([
      {
        provider: 'other:acme',
        model: 'fake-model',
        prompt_tokens: 11,
        completion_tokens: 7,
        cost_usd: '0.000138',
        thread_id: null,
      },
    ]);
  });

  it('ASK is refused at the demo budget cap with the llm_error budget_exhausted a thread turn gets, calling no model', async () => {
    const set = await http(stack.url, 'PUT', '/api/internal/demo-budget/cap', {
      headers: INTERNAL,
      body: { cap_usd: 0.0001 },
    });
    expect(set.status, set.text).toBe(200);
    const before = llm.requests.length;
    const spend = await query(stack.db.url, 'select count(*)::int as n from llm_usage');
    try {
      const r = await call('POST', '/api/tool_call', {
        tool: '_document_index',
        arguments: { action: 'ASK', query: 'how long are backups kept', index_name: 'kb' },
      });
      expect(r.status, r.text).toBe(502);
      expect(r.body).toMatchObject({
        error_type: 'llm_error',
        error: 'This deployment has used its language-model budget.',
        payload: { llm_failure: { kind: 'budget_exhausted', action: 'Ask the deployment owner to raise the cap.' } },
      });
      expect(llm.requests.length).toBe(before);
      expect(await query(stack.db.url, 'select count(*)::int as n from llm_usage')).toEqual(spend);
    } finally {
      await query(stack.db.url, `delete from deployment_settings where key = 'demo_budget.cap_usd'`);
    }
    // Below the cap again, ASK answers.
    expect((await ok({ action: 'ASK', query: 'how long are backups kept', index_name: 'kb' })).answer_type).toBe(
      'generated',
    );
  });

  it('an embedding identity change strands the index until re-embedding fills the new collection', async () => {
    const before = (await ok({ action: 'GET_INDICES_STATS' })).Indices[0];
    expect(before).toMatchObject({ needs_reindex: false, collections: ['local_hashing_1536_v1_index'] });
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
      collections: ['local_hashing_1536_v1_index', 'other_acme_embed_a_index'],
    });
    // Search now embeds the query through the provider and still ranks lexically.
    const hits = (await ok({ action: 'SEARCH', query: 'rotate keys' })).results;
    expect(hits[0].filepath).toBe('ops/keys.md');
    expect(llm.embeddingInputs.at(-1)).toEqual(['rotate keys']);
    // Each embedding call was metered: recorded against the embedding provider, counted under purpose embedding.
    const embedded = await query<{ n: number }>(
      stack.db.url,
      `select count(*)::int as n from llm_usage where purpose = 'embedding' and provider = 'other:acme' and model = 'embed-a'`,
    );
    expect(embedded[0]!.n).toBe(llm.embeddingInputs.length);
    expect(sample(await metrics(), 'platform_llm_calls_total', { scope: 'other', purpose: 'embedding' })).toBe(
      llm.embeddingInputs.length,
    );
  }, 120_000);
});
