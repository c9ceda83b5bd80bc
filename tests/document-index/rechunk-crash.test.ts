/**
 * RECHUNK survives a worker SIGKILLed midway: the copy into the temporary index hangs on an embedding
 * call, the worker process is killed, searches keep being served by the original index, a new worker
 * finishes the rechunk, and the swapped index holds every document once.
 *
 * `CHAOS_KILLS` workers are killed in turn (1 here in `npm test`; `npm run chaos` runs this file with
 * more through tests/chaos/rechunk-kills.test.ts): each new worker's attempt at the copy batch hangs
 * on the marked document again until the last kill.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';
import { useFakeEmbeddings } from './support.js';

let llm: FakeLlm;
let stack: Stack;
const workers: WorkerProcess[] = [];
const MARKER = 'zebracrossing';
const DOCS = 6;
const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
const TIMEOUT_MS = 120_000 + KILLS * 60_000;

const tool = (args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { body: { tool: '_document_index', arguments: args } });
const ok = async (args: Record<string, unknown>) => {
  const r = await tool(args);
  expect(r.status, r.text).toBe(200);
  return r.body.data.result;
};
function worker(): WorkerProcess {
  const w = spawnWorkerProcess({
    DATABASE_URL: stack.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  workers.push(w);
  return w;
}
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
  llm = await startFakeLlm();
  stack = await startStack({ worker: false });
  await useFakeEmbeddings(stack.url, llm);
  await ok({ action: 'CREATE_INDEX', index_name: 'kb-crash' });
  for (let i = 0; i < DOCS; i++)
    await ok({
      action: 'ADD_TEXT',
      index_name: 'kb-crash',
      text: `Document number ${i} talks about topic${i}. ${i === 3 ? MARKER : 'Nothing else.'}`,
      metadata: { filepath: `doc${i}.md` },
    });
}, 120_000);
afterAll(async () => {
  if (llm) llm.embeddingsHangOn = undefined;
  for (const w of workers) await w.stop();
  await stack?.close();
  await llm?.close();
});

describe('RECHUNK and a worker crash', () => {
  it(
    'keeps the original index serving while the worker is killed midway, then completes once',
    { timeout: TIMEOUT_MS },
    async () => {
      llm.embeddingsHangOn = (texts) => texts.some((t) => t.includes(MARKER));
      let w = worker();
      await w.ready;
      const rechunk = tool({ action: 'RECHUNK', index_name: 'kb-crash', chunk_size: 4, chunk_overlap: 0 });
      // The temporary index exists; the copy hangs on the marked document.
      await until(
        'copy reached the marked document',
        () => query<{ n: string }>(stack.db.url, `select count(*) as n from doc_indexes where state = 'building'`),
        (r) => Number(r[0]!.n) === 1,
      );
      const held = async () => llm.calls.filter((c) => c.path === '/v1/embeddings').length - llm.embeddingInputs.length;
      // A dead worker's call stays held at the fake: count those held since the last kill.
      let heldByDead = 0;
      for (let k = 0; k < KILLS; k++) {
        // An embedding call is held (sent, never answered): the worker is inside the copy.
        await until('embedding of the marked document sent', held, (n) => n === heldByDead + 1);
        expect((await w.kill()).signal).toBe('SIGKILL');
        heldByDead = await held();
        // Searches are served by the original index throughout.
        const during = (await ok({ action: 'SEARCH', index_name: 'kb-crash', query: 'topic3' })).results;
        expect(during[0]).toMatchObject({ filepath: 'doc3.md', chunk_index: 0 });
        expect((await ok({ action: 'GET_INDICES_STATS' })).Indices.map((s: { name: string }) => s.name)).toEqual([
          'kb-crash',
        ]);
        if (k === KILLS - 1) llm.embeddingsHangOn = undefined;
        w = worker();
        await w.ready;
      }
      const r = await rechunk;
      expect(r.status, r.text).toBe(200);
      const result = r.body.data.result;
      expect(result).toMatchObject({ Success: true, docs_rechunked: DOCS, chunks_before: DOCS });
      const rows = await query<{ d: string; c: string }>(
        stack.db.url,
        `select (select count(*) from doc_documents d join doc_indexes i on i.id = d.index_id where i.name = 'kb-crash') as d,
              (select count(*) from doc_chunks c join doc_indexes i on i.id = c.index_id where i.name = 'kb-crash') as c`,
      );
      expect(Number(rows[0]!.d)).toBe(DOCS);
      expect(Number(rows[0]!.c)).toBe(result.chunks_after);
      expect(await query(stack.db.url, `select 1 from doc_indexes where state = 'building'`)).toEqual([]);
      expect(await query(stack.db.url, 'select count(*)::int as n from doc_indexes')).toEqual([{ n: 1 }]);
      process.stderr.write(
        `[chaos] rechunk: ${DOCS} documents, ${KILLS} kill(s) mid-copy, ${result.chunks_after} chunks after\n`,
      );
    },
  );
});
