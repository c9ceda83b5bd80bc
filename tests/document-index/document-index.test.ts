/**
 * The `_document_index` tool over `POST /api/tool_call` and `GET /api/indexes`: every action and its
 * refusals, rankings on a fixed corpus, ingestion of a directory with its exclusions, the managed-repo
 * guard, RECHUNK as a workflow (and a second one refused), ASK without a provider (extractive).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacyRechunkWorkflowId, rechunkWorkflowId } from '../../workflows/rechunk-definitions.js';
import { recordHistory } from '../helpers/histories.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let root: string;

const tool = (args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { body: { tool: '_document_index', arguments: args } });
const ok = async (args: Record<string, unknown>) => {
  const r = await tool(args);
  expect(r.status, r.text).toBe(200);
  return r.body.data.result;
};
const count = async (table: string) =>
  Number((await query<{ n: string }>(stack.db.url, `select count(*) as n from ${table}`))[0]!.n);

const CORPUS: Array<[string, string]> = [
  [
    'ops/backups.md',
    'Nightly backups run at two in the morning. Restore a backup with the restore command. Backups are kept for thirty days.',
  ],
  ['ops/rotation.md', 'Rotate the encryption keys every quarter. Key rotation re-seals every stored secret.'],
  [
    'sales/pricing.md',
    'Pricing has three tiers. The enterprise tier includes premium support and a dedicated manager.',
  ],
  ['hr/holidays.md', 'Employees get twenty-five holidays per year. Unused holidays expire in March.'],
];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'docidx-'));
  stack = await startStack({
    env: {
      PLATFORM_DOCUMENT_INDEX_ROOTS: root,
      PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_INTERVAL: '2',
      PLATFORM_DOCUMENT_INDEX_COMPACTION_CHECKPOINT_SLEEP_S: '0',
    },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('indexes', () => {
  it('creates, refuses a duplicate and bad chunk parameters (writing nothing), lists, renames and deletes', async () => {
    expect(await ok({ action: 'CREATE_INDEX', index_name: 'plain' })).toEqual({ Success: true, index_name: 'plain' });
    expect(await ok({ action: 'CREATE_INDEX', index_name: 'tuned', chunk_size: 300, chunk_overlap: 50 })).toEqual({
      Success: true,
      index_name: 'tuned',
      chunk_config: { chunk_size: 300, chunk_overlap: 50, chunk_strategy: 'sentence' },
    });
    const dup = await tool({ action: 'CREATE_INDEX', index_name: 'plain' });
    expect(dup.status).toBe(409);
    expect(dup.body.error_type).toBe('conflict');
    const before = await count('doc_indexes');
    const bad = await tool({ action: 'CREATE_INDEX', index_name: 'bad', chunk_size: 100, chunk_overlap: 100 });
    expect(bad.status).toBe(400);
    expect(bad.body.payload.reason).toBe('invalid_chunk_parameters');
    expect(bad.body.error).toBe('chunk_overlap (100) must be less than chunk_size (100).');
    const negative = await tool({ action: 'CREATE_INDEX', index_name: 'bad', chunk_overlap: -1 });
    expect(negative.status).toBe(400);
    expect(await count('doc_indexes')).toBe(before);

    const listed = await ok({ action: 'LIST_INDICES' });
    expect(listed.Indices).toEqual(['plain', 'tuned']);
    expect(listed.IndexDetails[1]).toMatchObject({
      name: 'tuned',
      file_count: 0,
      needs_reindex: false,
      chunk_config: { chunk_size: 300, chunk_overlap: 50, chunk_strategy: 'sentence' },
    });
    expect(listed.IndexDetails[0].chunk_config).toEqual({
      chunk_size: null,
      chunk_overlap: null,
      chunk_strategy: null,
    });

    const clash = await tool({ action: 'RENAME_INDEX', index_name: 'plain', new_index_name: 'tuned' });
    expect(clash.status).toBe(409);
    expect(await ok({ action: 'RENAME_INDEX', index_name: 'plain', new_index_name: 'plain2' })).toMatchObject({
      Success: true,
    });
    const missing = await tool({ action: 'RENAME_INDEX', index_name: 'plain', new_index_name: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.body.error_type).toBe('not_found');

    await ok({ action: 'ADD_TEXT', index_name: 'plain2', text: 'Some words to delete.' });
    expect(await ok({ action: 'DELETE_INDEX', index_name: 'plain2' })).toEqual({
      Success: true,
      Message: 'Index deleted successfully',
    });
    expect((await tool({ action: 'DELETE_INDEX', index_name: 'plain2' })).status).toBe(404);
    expect(
      await query(
        stack.db.url,
        `select 1 from doc_chunks c join doc_indexes i on i.id = c.index_id where i.name = 'plain2'`,
      ),
    ).toEqual([]);
    expect(await ok({ action: 'DELETE_INDEX', index_name: 'tuned' })).toMatchObject({ Success: true });
  });
});

describe('a fixed corpus', () => {
  beforeAll(async () => {
    await ok({ action: 'CREATE_INDEX', index_name: 'kb' });
    await ok({ action: 'CREATE_INDEX', index_name: 'other' });
    for (const [path, text] of CORPUS)
      await ok({ action: 'ADD_TEXT', index_name: 'kb', text, metadata: { filepath: path, team: path.split('/')[0] } });
    await ok({
      action: 'ADD_TEXT',
      index_name: 'other',
      text: 'The cafeteria menu changes weekly; soup on Fridays.',
      metadata: { filepath: 'menu.md' },
    });
  });

  it('SEARCH ranks the relevant document first (one index and all indexes)', async () => {
    const top = async (q: string, index?: string) =>
      (await ok({ action: 'SEARCH', query: q, ...(index ? { index_name: index } : {}) })).results;
    expect((await top('how do I restore a backup', 'kb'))[0].filepath).toBe('ops/backups.md');
    expect((await top('key rotation schedule', 'kb'))[0].filepath).toBe('ops/rotation.md');
    expect((await top('enterprise support tier', 'kb'))[0].filepath).toBe('sales/pricing.md');
    expect((await top('how many holidays do employees get', 'kb'))[0].filepath).toBe('hr/holidays.md');
    const all = await top('soup on Fridays');
    expect(all[0]).toMatchObject({ index_name: 'other', filepath: 'menu.md' });
    expect(all[0].score).toBeGreaterThan(0);
    expect(all[0].snippet).toContain('Fridays');
    const results = await top('backups', 'kb');
    expect(results[0]).toMatchObject({ filepath: 'ops/backups.md', lexical_rank: 1, vector_rank: 1 });
    expect((await tool({ action: 'SEARCH', query: 'x', index_name: 'nope' })).status).toBe(404);
    expect((await ok({ action: 'SEARCH', query: 'x', top_n: 2 })).results.length).toBeLessThanOrEqual(2);
  });

  it('LIST_DOCUMENTS pages, filters by path and query, and lists chunks when show_files_only is false', async () => {
    const all = await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb' });
    expect(all).toMatchObject({
      TotalCount: 4,
      start: 0,
      count: 50,
      actual_count: 4,
      has_more: false,
      next_start: null,
    });
    expect(all.Documents.map((d: { filepath: string }) => d.filepath)).toEqual(CORPUS.map(([p]) => p).sort());
    const page = await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb', start: 1, count: 2 });
    expect(page).toMatchObject({ TotalCount: 4, start: 1, count: 2, actual_count: 2, has_more: true, next_start: 3 });
    expect((await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb', path_filter: 'ops/' })).TotalCount).toBe(2);
    expect((await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb', path_filter: '*.md' })).TotalCount).toBe(4);
    expect((await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb', query: 'encryption' })).Documents[0].filepath).toBe(
      'ops/rotation.md',
    );
    const none = await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb', query: 'zebra' });
    expect(none).toMatchObject({ TotalCount: 0, Message: 'No documents match.', Documents: [] });
    const chunks = await ok({ action: 'LIST_DOCUMENTS', index_name: 'kb', show_files_only: false });
    expect(chunks.Documents[0]).toHaveProperty('chunk_index', 0);
    const over = await tool({ action: 'LIST_DOCUMENTS', index_name: 'kb', count: 51 });
    expect(over.status).toBe(400);
    expect(over.body.payload.fields[0].field).toBe('body.arguments.count');
  });

  it('GET_DOCUMENT by id or path in lines, chars and chunks; DELETE and RENAME_DOCUMENT with slashes tolerated', async () => {
    const byLines = await ok({
      action: 'GET_DOCUMENT',
      index_name: 'kb',
      filepath: '/ops/backups.md/',
      pagination_mode: 'lines',
    });
    expect(byLines).toMatchObject({ start: 0, count: 100, actual_count: 1, has_more: false, content: CORPUS[0]![1] });
    const byChars = await ok({
      action: 'GET_DOCUMENT',
      index_name: 'kb',
      file_id: byLines.file_id,
      pagination_mode: 'chars',
      start: 8,
      count: 7,
    });
    expect(byChars).toMatchObject({ count: 7, actual_count: 7, has_more: true, content: 'backups' });
    const byChunks = await ok({ action: 'GET_DOCUMENT', index_name: 'kb', filepath: 'ops/backups.md' });
    expect(byChunks).toMatchObject({ pagination_mode: null, count: 20, actual_count: 1, has_more: false });
    expect(byChunks.chunks[0].text).toBe(CORPUS[0]![1]);
    const noRef = await tool({ action: 'GET_DOCUMENT', index_name: 'kb' });
    expect(noRef.status).toBe(400);
    expect((await tool({ action: 'GET_DOCUMENT', index_name: 'kb', file_id: 'not-an-id' })).status).toBe(404);

    const renamed = await ok({
      action: 'RENAME_DOCUMENT',
      index_name: 'kb',
      filepath: 'hr/holidays.md',
      new_filename: 'leave.md',
    });
    expect(renamed).toMatchObject({ Success: true, filepath: 'hr/leave.md', previous_filepath: 'hr/holidays.md' });
    expect(
      (await tool({ action: 'RENAME_DOCUMENT', index_name: 'kb', filepath: 'hr/leave.md', new_filename: 'a/b' }))
        .status,
    ).toBe(400);
    const chunksBefore = await count('doc_chunks');
    const deleted = await ok({ action: 'DELETE_DOCUMENT', index_name: 'kb', filepath: '/hr/leave.md' });
    expect(deleted).toMatchObject({ Success: true, filepath: 'hr/leave.md' });
    expect(await count('doc_chunks')).toBe(chunksBefore - 1);
    expect((await tool({ action: 'DELETE_DOCUMENT', index_name: 'kb', file_id: deleted.file_id })).status).toBe(404);
    // Put it back for the tests below.
    await ok({ action: 'ADD_TEXT', index_name: 'kb', text: CORPUS[3]![1], metadata: { filepath: CORPUS[3]![0] } });
  });

  it('ASK without a provider answers extractively, labelled as such, with sources and footnotes', async () => {
    const r = await ok({ action: 'ASK', query: 'how long are backups kept', index_name: 'kb' });
    expect(r.answer_type).toBe('extractive');
    expect(r.answer).toMatch(/^Extractive answer \(no language-model provider is configured/);
    expect(r.answer).toContain('thirty days. [1]');
    expect(r.sources[0]).toMatchObject({ n: 1, index_name: 'kb', filepath: 'ops/backups.md' });
    expect(r.footnotes[0]).toBe('[1] kb: ops/backups.md (chunk 0)');
    // No provider, no model call: nothing is counted.
    expect(await count('llm_usage')).toBe(0);
  });

  it('ASK answers from the named index only, and refuses an unknown one with 404 (no provider configured)', async () => {
    await ok({ action: 'CREATE_INDEX', index_name: 'vault' });
    await ok({
      action: 'ADD_TEXT',
      index_name: 'vault',
      text: 'Vault backups are kept for seven years.',
      metadata: { filepath: 'legal/vault.md' },
    });
    try {
      const everywhere = await ok({ action: 'ASK', query: 'how long are backups kept' });
      expect(everywhere.sources.map((s: { index_name: string }) => s.index_name)).toContain('vault');
      for (const name of ['kb', 'vault']) {
        const r = await ok({ action: 'ASK', query: 'how long are backups kept', index_name: name });
        expect(r.sources.length).toBeGreaterThan(0);
        expect(r.sources.every((s: { index_name: string }) => s.index_name === name)).toBe(true);
        expect(r.footnotes.every((f: string) => f.startsWith(`[`) && f.includes(`] ${name}: `))).toBe(true);
      }
      const unknown = await tool({ action: 'ASK', query: 'how long are backups kept', index_name: 'ignored' });
      expect(unknown.status, unknown.text).toBe(404);
      expect(unknown.body).toMatchObject({ error_type: 'not_found', payload: { index_name: 'ignored' } });
      expect(unknown.body.error).toContain('No document index named "ignored"');
    } finally {
      await ok({ action: 'DELETE_INDEX', index_name: 'vault' });
    }
  });

  it('GET_INDICES_STATS and GET /api/indexes report the same statistics; system indexes are excluded', async () => {
    await ok({ action: 'CREATE_INDEX', index_name: 'twin' });
    const stats = (await ok({ action: 'GET_INDICES_STATS' })).Indices;
    const route = await http(stack.url, 'GET', '/api/indexes');
    expect(route.status).toBe(200);
    expect(route.body.data.indexes).toEqual(stats);
    expect(stats.map((s: { name: string }) => s.name)).toEqual(['kb', 'other']);
    expect(stats[0]).toMatchObject({
      file_count: 4,
      chunk_count: 4,
      needs_reindex: false,
      embedding_collection: 'local_hashing_1536_v1_index',
      collections: ['local_hashing_1536_v1_index'],
    });
  });

  it('RECHUNK rebuilds through the workflow and swaps; the index keeps its name and searches still rank', async () => {
    const r = await ok({ action: 'RECHUNK', index_name: 'kb', chunk_size: 8, chunk_overlap: 2 });
    expect(r).toMatchObject({
      Success: true,
      docs_rechunked: 4,
      chunks_before: 4,
      chunk_config: { chunk_size: 8, chunk_overlap: 2, chunk_strategy: 'sentence' },
      approximate_reassembly_notes: [],
    });
    expect(r.chunks_after).toBeGreaterThan(4);
    await recordHistory(
      'rechunk-completed',
      stack.api.deps.temporal.workflow.getHandle(rechunkWorkflowId('default', 'kb')),
    );
    const stats = (await ok({ action: 'GET_INDICES_STATS' })).Indices;
    expect(stats[0]).toMatchObject({ name: 'kb', chunk_count: r.chunks_after, chunk_config: r.chunk_config });
    expect(await query(stack.db.url, `select name from doc_indexes where state = 'building'`)).toEqual([]);
    const top = (await ok({ action: 'SEARCH', query: 'restore a backup', index_name: 'kb' })).results;
    expect(top[0].filepath).toBe('ops/backups.md');
    const bad = await tool({ action: 'RECHUNK', index_name: 'kb', chunk_size: 8, chunk_overlap: 8 });
    expect(bad.status).toBe(400);
    expect((await tool({ action: 'RECHUNK', index_name: 'nope' })).status).toBe(404);
  });

  // A rechunk that no worker picks up (another task queue) stands for one in progress.
  const standIn = (workflowId: string, tenant: string) =>
    stack.api.deps.temporal.workflow.start('rechunkWorkflow', {
      workflowId,
      taskQueue: `${stack.config.temporal.taskQueue}-idle`,
      args: [
        {
          tenant,
          indexName: 'other',
          runId: 'r',
          config: { chunk_size: 8, chunk_overlap: 0, chunk_strategy: 'sentence' },
          batchSize: 5,
        },
      ],
    });

  it('a second RECHUNK of one index while one runs is refused 409 (the id carries the tenant)', async () => {
    expect(rechunkWorkflowId('default', 'other')).toBe('rechunk/default/other');
    const handle = await standIn(rechunkWorkflowId('default', 'other'), 'default');
    try {
      const r = await tool({ action: 'RECHUNK', index_name: 'other' });
      expect(r.status).toBe(409);
      expect(r.body.payload).toMatchObject({ code: 'rechunk_in_progress', workflow_id: 'rechunk/default/other' });
    } finally {
      await handle.terminate('test over');
    }
  });

  it('a rechunk still running under the old id (rechunk/<index>) also holds the index: 409 naming that id', async () => {
    const handle = await standIn(legacyRechunkWorkflowId('other'), 'default');
    try {
      const r = await tool({ action: 'RECHUNK', index_name: 'other' });
      expect(r.status).toBe(409);
      expect(r.body.payload).toMatchObject({ code: 'rechunk_in_progress', workflow_id: 'rechunk/other' });
    } finally {
      await handle.terminate('test over');
    }
  });

  it("another tenant's running rechunk of a same-named index does not hold this tenant's index", async () => {
    const theirs = rechunkWorkflowId('globex', 'other');
    expect(theirs).toBe('rechunk/globex/other');
    const handle = await standIn(theirs, 'globex');
    try {
      const r = await tool({ action: 'RECHUNK', index_name: 'other' });
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.result.Success).toBe(true);
      const mine = await stack.api.deps.temporal.workflow.getHandle(rechunkWorkflowId('default', 'other')).describe();
      expect(mine.status.name).toBe('COMPLETED');
      expect((await handle.describe()).status.name).toBe('RUNNING');
    } finally {
      await handle.terminate('test over');
    }
  });
});

describe('ADD_DOCUMENTS', () => {
  beforeAll(async () => {
    const d = join(root, 'docs');
    mkdirSync(join(d, 'sub'), { recursive: true });
    mkdirSync(join(d, 'node_modules'), { recursive: true });
    mkdirSync(join(d, 'build'), { recursive: true });
    writeFileSync(join(d, 'a.md'), 'Alpha document about invoices. Invoices are due in thirty days.');
    writeFileSync(join(d, 'sub', 'b.txt'), 'Bravo notes on shipping.');
    writeFileSync(join(d, 'node_modules', 'x.md'), 'vendored');
    writeFileSync(join(d, 'build', 'y.md'), 'built');
    writeFileSync(join(d, 'c.o'), 'object');
    writeFileSync(join(d, 'empty.txt'), '');
    writeFileSync(join(d, 'bin.dat'), Buffer.from([1, 0, 2]));
    await ok({ action: 'CREATE_INDEX', index_name: 'files', chunk_strategy: 'one_chunk_per_doc' });
  });

  it('ingests a directory recursively with a per-file report, exclusions skipped; a second run is idempotent', async () => {
    const r = await ok({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: join(root, 'docs') });
    expect(r.Success).toBe(true);
    expect(r.workflow_id).toMatch(/^ingest\/files\/[0-9a-f-]{36}$/);
    await recordHistory('ingest-directory', stack.api.deps.temporal.workflow.getHandle(r.workflow_id));
    expect(r.added.map((a: { filepath: string; chunks: number }) => [a.filepath, a.chunks])).toEqual([
      ['docs/a.md', 1],
      ['docs/sub/b.txt', 1],
    ]);
    expect(
      Object.fromEntries(r.skipped.map((s: { filepath: string; reason: string }) => [s.filepath, s.reason])),
    ).toEqual({
      'docs/bin.dat': 'binary file',
      'docs/build/': 'excluded (build)',
      'docs/c.o': 'excluded (*.o)',
      'docs/empty.txt': 'empty file',
      'docs/node_modules/': 'excluded (node_modules)',
    });
    const chunks = await count('doc_chunks');
    const again = await ok({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: 'docs' });
    expect(again.added).toEqual([]);
    expect(again.skipped.filter((s: { reason: string }) => s.reason.startsWith('unchanged')).length).toBe(2);
    expect(await count('doc_chunks')).toBe(chunks);
    const one = await ok({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: 'BOT_GIT:docs/a.md' });
    expect(one.skipped).toEqual([{ filepath: 'docs/a.md', reason: 'unchanged (same content hash)' }]);
  });

  it('refuses an excluded file named explicitly, a path outside the roots, and a missing path', async () => {
    const excluded = await tool({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: join(root, 'docs', 'c.o') });
    expect(excluded.status).toBe(400);
    expect(excluded.body.payload).toMatchObject({ reason: 'excluded_path', rule: '*.o' });
    const inModules = await tool({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: 'docs/node_modules/x.md' });
    expect(inModules.status).toBe(400);
    const outside = await tool({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: '/etc/hostname' });
    expect(outside.status).toBe(400);
    expect(outside.body.payload.reason).toBe('outside_document_roots');
    expect((await tool({ action: 'ADD_DOCUMENTS', index_name: 'files', filepath: 'docs/none.md' })).status).toBe(404);
    expect((await tool({ action: 'ADD_DOCUMENTS', index_name: 'nope', filepath: 'docs' })).status).toBe(404);
  });
});

describe('managed knowledge-base documents', () => {
  it('refuse ADD_DOCUMENTS, ADD_TEXT and DELETE_DOCUMENT with managed_repo_guard; propose_kb_edit refuses an index no managed source feeds', async () => {
    await ok({ action: 'CREATE_INDEX', index_name: 'repo-kb' });
    await ok({
      action: 'ADD_TEXT',
      index_name: 'kb',
      text: 'Managed runbook text.',
      metadata: { filepath: 'runbooks/managed.md' },
    });
    await query(
      stack.db.url,
      `update doc_documents set managed_source_id = 'src_1' where path = 'runbooks/managed.md'`,
    );
    await query(stack.db.url, `update doc_indexes set managed_source_id = 'src_1' where name = 'repo-kb'`);
    const guard = (r: { status: number; body: Record<string, any> }) => {
      expect(r.status).toBe(409);
      expect(r.body.payload).toMatchObject({ code: 'managed_repo_guard', managed_document_repo: true });
      expect(r.body.payload.next_steps[0]).toContain('propose_kb_edit');
    };
    guard(await tool({ action: 'DELETE_DOCUMENT', index_name: 'kb', filepath: 'runbooks/managed.md' }));
    guard(await tool({ action: 'ADD_TEXT', index_name: 'repo-kb', text: 'x' }));
    guard(await tool({ action: 'ADD_DOCUMENTS', index_name: 'repo-kb', filepath: 'docs' }));
    expect(await query(stack.db.url, `select 1 from doc_documents where path = 'runbooks/managed.md'`)).toHaveLength(1);
    const stats = (await ok({ action: 'GET_INDICES_STATS' })).Indices;
    expect(stats.find((s: { name: string }) => s.name === 'kb')).toMatchObject({ file_count: 4, document_count: 5 });
    const propose = await tool({
      action: 'propose_kb_edit',
      source_id_or_index: 'kb',
      relative_path: 'docs/a.md',
      content: 'x',
    });
    expect(propose.status).toBe(409);
    expect(propose.body.payload.reason).toBe('not_a_managed_index');
  });
});
