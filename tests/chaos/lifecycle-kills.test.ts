/**
 * Chaos beyond Action Review (issue 33, item 2): a lifecycle whose worker process is SIGKILLed while
 * an activity is in flight, `CHAOS_KILLS` times (1 in `npm test`, more in `npm run chaos`), a new
 * worker started after each kill as the supervisor does.
 *
 * Ingest (ADD_DOCUMENTS of a directory): each kill lands while a document batch waits for its
 * embedding call (the fake model holds the call naming that kill's marker document), so the batch's
 * heartbeat stops and Temporal runs it again on the next worker. The run must end successfully; every
 * file is accounted for (added, or found unchanged because the dead attempt had stored it before the
 * kill); no document or chunk is stored twice (`one_chunk_per_doc`: chunks = documents = files).
 *
 * The API runs in this process without a worker; workers are processes of their own. Waits are on
 * state (the fake's held calls, the database), bounded.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../action-review/support.js';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { useFakeEmbeddings } from '../document-index/support.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
const FILES = 12;
/** The documents whose embedding call is held, one per kill, spread over the directory. */
const markerOf = (k: number) => `chaosmarker${k}`;
const markedFile = (k: number) => Math.floor(((k + 1) * FILES) / (KILLS + 1));

let llm: FakeLlm;
let stack: Stack;
let root: string;
const workers: WorkerProcess[] = [];

const workerProcess = () => spawnStackWorker(stack, workers, { PLATFORM_DOCUMENT_INDEX_ROOTS: root });

const tool = (args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { body: { tool: '_document_index', arguments: args } });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'chaos-ingest-'));
  mkdirSync(join(root, 'docs'));
  const marked = new Map(Array.from({ length: KILLS }, (_, k) => [markedFile(k), markerOf(k)]));
  for (let i = 0; i < FILES; i++)
    writeFileSync(
      join(root, 'docs', `doc${String(i).padStart(2, '0')}.md`),
      `Document ${i} about topic${i}. ${marked.get(i) ?? 'Nothing else.'}`,
    );
  llm = await startFakeLlm();
  stack = await startStack({ worker: false, env: { PLATFORM_DOCUMENT_INDEX_ROOTS: root } });
  await useFakeEmbeddings(stack.url, llm);
  const created = await tool({ action: 'CREATE_INDEX', index_name: 'chaos', chunk_strategy: 'one_chunk_per_doc' });
  expect(created.status, created.text).toBe(200);
}, 120_000);

afterAll(async () => {
  if (llm) llm.embeddingsHangOn = undefined;
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  await llm?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Embedding calls sent but not answered (held by the fake). */
const held = () => llm.calls.filter((c) => c.path === '/v1/embeddings').length - llm.embeddingInputs.length;

describe('ingest while the worker is SIGKILLed mid-batch', () => {
  it(
    'ends successfully with every file stored once and accounted for',
    { timeout: 60_000 + KILLS * 60_000 },
    async () => {
      let worker = workerProcess();
      await worker.ready;
      llm.embeddingsHangOn = (texts) => texts.some((t) => t.includes(markerOf(0)));
      const ingest = tool({ action: 'ADD_DOCUMENTS', index_name: 'chaos', filepath: join(root, 'docs') });
      const signals: Array<NodeJS.Signals | null> = [];
      // A dead worker's held call stays held at the fake: count only the calls held since the last kill.
      let heldByDead = 0;
      for (let k = 0; k < KILLS; k++) {
        // The batch holding marker k waits for its embedding: the worker is inside the activity.
        await waitFor(async () => held() > heldByDead, `the embedding call of ${markerOf(k)} to be held`, 90_000);
        signals.push((await worker.kill()).signal);
        heldByDead = held();
        // The next kill's marker holds the next batch; the last kill's release lets the run finish.
        llm.embeddingsHangOn = k + 1 < KILLS ? (texts) => texts.some((t) => t.includes(markerOf(k + 1))) : undefined;
        worker = workerProcess();
        await worker.ready;
      }
      const r = await ingest;
      expect(r.status, r.text).toBe(200);
      const result = r.body.data.result;
      expect(result.Success, r.text).toBe(true);
      expect(signals).toEqual(Array(KILLS).fill('SIGKILL'));

      // Receipts: every file is in the result, added or unchanged (stored by an attempt that died after).
      const added = result.added.map((a: { filepath: string }) => a.filepath);
      const unchanged = result.skipped
        .filter((s: { reason: string }) => s.reason.startsWith('unchanged'))
        .map((s: { filepath: string }) => s.filepath);
      expect([...added, ...unchanged].sort()).toEqual(
        Array.from({ length: FILES }, (_, i) => `docs/doc${String(i).padStart(2, '0')}.md`),
      );
      // No doubled effect: one document row and one chunk per file.
      const [counts] = await query<{ d: number; c: number; paths: number }>(
        stack.db.url,
        `select (select count(*)::int from doc_documents d join doc_indexes i on i.id = d.index_id where i.name = 'chaos') as d,
                (select count(*)::int from doc_chunks c join doc_indexes i on i.id = c.index_id where i.name = 'chaos') as c,
                (select count(distinct d.path)::int from doc_documents d join doc_indexes i on i.id = d.index_id where i.name = 'chaos') as paths`,
      );
      expect(counts).toEqual({ d: FILES, c: FILES, paths: FILES });
      process.stderr.write(
        `[chaos] ingest: ${FILES} files, ${KILLS} kill(s) mid-batch: ${added.length} added, ${unchanged.length} found unchanged after a kill\n`,
      );
    },
  );
});
