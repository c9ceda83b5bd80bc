/**
 * `npm run soak` (issue 33, item 4): bounded growth under a steady mixed load. Opt-in, not in `npm test`.
 *
 * Stack: as the benchmarks start it (bench/lib/stack.ts: embedded PostgreSQL, a Temporal dev server,
 * migrations), plus the API and the worker each in a process of its own (tests/helpers/api-process.ts,
 * tests/helpers/worker-process.ts with the worker's Schedules), so their memory is measured apart from
 * this driver; the stack's in-process API stays idle. The fake model (tests/helpers/fake-llm.ts) answers
 * the turns and the embeddings; the tests' `git http-backend` serves the managed source.
 *
 * Load, steady for `SOAK_MINUTES` (default 20): `SOAK_CONCURRENCY` lanes (default 2), each looping
 * over an Action Review proposal (create, approve, execute), a document SEARCH (`_document_index`
 * through `/api/tool_call`, an index with embeddings) and a thread turn over MCP (`thread_continue`;
 * a new thread every `SOAK_TURNS_PER_THREAD` turns, default 20); beside them, every `SOAK_SYNC_SECONDS`
 * (default 30) one commit to the repository and a sync of the managed source.
 *
 * Samples, every `SOAK_SAMPLE_SECONDS` (default 60): the API's and the worker's RSS (/proc), the
 * client connections of PostgreSQL (pg_stat_activity) and `pg_total_relation_size` of every table
 * of the schema (the table of samples shows the ones that changed).
 *
 * Verdict, over the samples from the end of the warm-up (`SOAK_WARMUP_MINUTES`, default 3) on: the mean
 * of the last third against the mean of the middle third. A series fails when it grew by more than
 * 10 % and by more than its noise floor (RSS 8 MiB; 4 connections, which the pools open and close
 * with the moment's concurrency; 512 kB of a table: page and allocator steps; for a per-operation
 * table, 512 kB more than its middle third's bytes per operation predict for all the operations). How each series is judged:
 * - memory, connections and every table not named below: absolutely (it must level off).
 * - tables that grow with the work done (PER_OP below: proposals and their events, thread messages and
 *   events, model-call usage rows, sync jobs): per operation, the bytes added since the warm-up divided by the operations of their
 *   kind since then; a table whose cost per operation grows (an index degrading, a row per operation
 *   that keeps growing) fails, one growing in proportion to the load passes.
 * The spec states no retention period for any table, so no table is held to one here. Any series
 * failing: exit 1, naming it. Any kind of operation that never succeeded: exit 1.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { sql } from '../shared/db/sql.js';
import { spawnApiProcess, type ApiProcess } from '../tests/helpers/api-process.js';
import { startFakeLlm } from '../tests/helpers/fake-llm.js';
import { startGitServer } from '../tests/helpers/git-server.js';
import { spawnWorkerProcess, type WorkerProcess } from '../tests/helpers/worker-process.js';
import { syncSource } from './lib/managed-source.js';
import { post, send } from './lib/post.js';
import { writeWorkflowBundle } from './lib/bundle.js';
import { startBenchStack, type BenchStack } from './lib/stack.js';
import { call, mcpClient } from './threads.js';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 20);
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 60);
const WARMUP_MINUTES = Number(process.env.SOAK_WARMUP_MINUTES ?? 3);
const LANES = Number(process.env.SOAK_CONCURRENCY ?? 2);
const SYNC_SECONDS = Number(process.env.SOAK_SYNC_SECONDS ?? 30);
const TURNS_PER_THREAD = Number(process.env.SOAK_TURNS_PER_THREAD ?? 20);
const GROWTH_LIMIT = 0.1;

type Op = 'proposal' | 'search' | 'turn' | 'sync';
const OPS: Op[] = ['proposal', 'search', 'turn', 'sync'];

/** Tables that grow with the work done, and the operation each is judged per. */
const PER_OP: Record<string, Op> = {
  action_review_proposals: 'proposal',
  action_review_events: 'proposal',
  action_review_handbacks: 'proposal',
  prover_decisions: 'proposal',
  conversation_messages: 'turn',
  prover_subjects: 'proposal',
  conversation_threads: 'turn',
  thread_events: 'turn',
  thread_event_counters: 'turn',
  // One row per model call: the turn's, and the query embedding of the SEARCH each lane runs beside it.
  llm_usage: 'turn',
  managed_source_sync_jobs: 'sync',
};

interface Sample {
  /** Seconds since the load started. */
  at: number;
  ops: Record<Op, number>;
  /** Series name → value (MiB, connections, bytes). */
  values: Map<string, number>;
}

interface Series {
  name: string;
  unit: 'MiB' | 'n' | 'kB';
  floor: number;
  perOp?: Op;
}

const rssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? NaN) / 1024;
};

async function sample(
  stack: BenchStack,
  api: ApiProcess,
  worker: WorkerProcess,
  started: number,
  ops: Record<Op, number>,
) {
  const em = stack.api.deps.orm.em.fork();
  const [conns] = await sql<{ n: number }>(
    em,
    `select count(*)::int as n from pg_stat_activity where backend_type = 'client backend'`,
  );
  const tables = await sql<{ name: string; bytes: string }>(
    em,
    `select c.relname as name, pg_total_relation_size(c.oid) as bytes from pg_class c
       join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind in ('r', 'p')`,
  );
  const values = new Map<string, number>([
    ['api rss', rssMiB(api.child.pid!)],
    ['worker rss', rssMiB(worker.child.pid!)],
    ['pg connections', conns!.n],
  ]);
  for (const t of tables) values.set(`table ${t.name}`, Number(t.bytes));
  return { at: Math.round((performance.now() - started) / 1000), ops: { ...ops }, values } satisfies Sample;
}

function seriesOf(name: string): Series {
  if (name.endsWith(' rss')) return { name, unit: 'MiB', floor: 8 };
  // The pools open and close idle connections with the moment's concurrency: a few come and go.
  if (name === 'pg connections') return { name, unit: 'n', floor: 4 };
  const table = name.slice('table '.length);
  return { name, unit: 'kB', floor: 512 * 1024, perOp: PER_OP[table] };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Middle third and last third of `xs` (at least one value each when xs has two or more). */
function thirds(xs: number[]): [number[], number[]] {
  const n = xs.length;
  return [xs.slice(Math.floor(n / 3), Math.floor((2 * n) / 3)), xs.slice(Math.floor((2 * n) / 3))];
}

interface Verdict {
  series: Series;
  middle: number;
  last: number;
  growth: number;
  failed: boolean;
}

/** The verdict on one series over the samples after the warm-up (the first of them is the base of per-op series). */
function judge(series: Series, after: Sample[]): Verdict {
  const raw = after.map((s) => s.values.get(series.name) ?? 0);
  const op = series.perOp;
  // Per operation: the bytes added since the warm-up over the operations of the table's kind since then.
  const xs = op
    ? after.slice(1).map((s, i) => (raw[i + 1]! - raw[0]!) / Math.max(1, s.ops[op] - after[0]!.ops[op]))
    : raw;
  const [mid, last] = thirds(xs);
  const middle = mean(mid);
  const lastMean = mean(last);
  const growth = middle > 0 ? lastMean / middle - 1 : lastMean > 0 ? Infinity : 0;
  // Held against the floor: for a per-op table, the bytes it holds at the end beyond what the middle
  // third's rate per operation predicts (a table grows in page and extension steps, so its rate per
  // operation moves by a few percent between thirds); any other series' rise.
  const opsSince = op ? after[after.length - 1]!.ops[op] - after[0]!.ops[op] : 0;
  const absolute = op ? (lastMean - middle) * opsSince : lastMean - middle;
  return { series, middle, last: lastMean, growth, failed: growth > GROWTH_LIMIT && absolute > series.floor };
}

const show = (series: Series, v: number) =>
  series.unit === 'MiB' ? v.toFixed(1) : series.unit === 'kB' ? (v / 1024).toFixed(0) : v.toFixed(0);

function report(samples: Sample[], verdicts: Verdict[], errors: Record<Op, number>, lines: string[]): void {
  lines.push('', '| series | ' + samples.map((s) => `${(s.at / 60).toFixed(1)} min`).join(' | ') + ' |');
  lines.push('|-|' + samples.map(() => '-').join('|') + '|');
  for (const op of OPS) lines.push(`| ops ${op} | ${samples.map((s) => s.ops[op]).join(' | ')} |`);
  for (const v of verdicts)
    lines.push(
      `| ${v.series.name} (${v.series.unit}) | ${samples.map((s) => show(v.series, s.values.get(v.series.name) ?? 0)).join(' | ')} |`,
    );
  lines.push('', '| series | judged | middle third | last third | growth | verdict |', '|-|-|-|-|-|-|');
  for (const v of verdicts) {
    const judged = v.series.perOp ? `bytes per ${v.series.perOp}` : 'absolute';
    const fmt = (x: number) => (v.series.perOp ? x.toFixed(0) : show(v.series, x));
    lines.push(
      `| ${v.series.name} | ${judged} | ${fmt(v.middle)} | ${fmt(v.last)} | ${Number.isFinite(v.growth) ? `${(v.growth * 100).toFixed(1)} %` : 'from 0'} | ${v.failed ? '**grows**' : 'ok'} |`,
    );
  }
  lines.push('', `failed operations: ${OPS.map((op) => `${op} ${errors[op]}`).join(', ')}`);
}

interface Load {
  ops: Record<Op, number>;
  errors: Record<Op, number>;
  lastError: Partial<Record<Op, string>>;
  stop(): Promise<void>;
}

/** The indexes, the provider with embeddings, the managed source; answers the steady load, running. */
async function startLoad(apiUrl: string, sourceId: string, commit: (n: number) => void): Promise<Load> {
  const ops = { proposal: 0, search: 0, turn: 0, sync: 0 };
  const errors = { proposal: 0, search: 0, turn: 0, sync: 0 };
  const lastError: Partial<Record<Op, string>> = {};
  let running = true;
  const counted = async (op: Op, fn: () => Promise<unknown>) => {
    try {
      await fn();
      ops[op]++;
    } catch (err) {
      errors[op]++;
      lastError[op] = String(err).slice(0, 300);
    }
  };
  const proposals = `${apiUrl}/api/action-review/proposals`;
  const proposal = async () => {
    const created = await post(proposals, {
      action_type: 'prover.request_finding_evidence.v1',
      payload: { finding_id: `soak-${randomUUID()}`, evidence_request: 'Attach the query output.' },
      expected_effect: 'The finding gets an evidence request.',
    });
    const id = created.data.proposal_id as string;
    await post(`${proposals}/${id}/approve`, {});
    const executed = await post(`${proposals}/${id}/execute`);
    if (executed.final_status !== 'executed') throw new Error(`proposal ended ${String(executed.final_status)}`);
  };
  const search = (i: number) =>
    post(`${apiUrl}/api/tool_call`, {
      tool: '_document_index',
      arguments: { action: 'SEARCH', index_name: 'soak', query: WORDS[i % WORDS.length] },
    });
  const lane = async (k: number) => {
    const client: McpClient = await mcpClient(apiUrl);
    let thread = '';
    try {
      for (let i = 0; running; i++) {
        await counted('proposal', proposal);
        await counted('search', () => search(i + k));
        await counted('turn', async () => {
          if (i % TURNS_PER_THREAD === 0)
            thread = (await call(client, { action: 'thread_create', initial_prompt: `soak ${k} ${i}` }))
              .platform_thread_id as string;
          else await call(client, { action: 'thread_continue', platform_thread_id: thread, message: `turn ${i}` });
        });
      }
    } finally {
      await client.close();
    }
  };
  const syncs = async () => {
    for (let n = 1; running; n++) {
      const t0 = performance.now();
      await counted('sync', async () => {
        commit(n);
        const result = await syncSource(apiUrl, sourceId);
        if (result.outcome !== 'updated') throw new Error(`sync ended ${result.outcome}: ${JSON.stringify(result)}`);
      });
      const wait = SYNC_SECONDS * 1000 - (performance.now() - t0);
      for (let left = wait; running && left > 0; left -= 500)
        await new Promise((r) => setTimeout(r, Math.min(500, left)));
    }
  };
  const all = Promise.all([...Array.from({ length: LANES }, (_, k) => lane(k)), syncs()]);
  return {
    ops,
    errors,
    lastError,
    async stop() {
      running = false;
      await all;
    },
  };
}

const WORDS = [
  'restore a backup',
  'rotate the encryption keys',
  'enterprise pricing tier',
  'holidays per year',
  'incident escalation',
  'deploy a release',
];

/** The provider (the fake model, with its embedding model), the index `soak` and its documents. */
async function prepare(apiUrl: string, llmUrl: string): Promise<void> {
  await send('POST', `${apiUrl}/api/config/llm-providers/other`, {
    sub_provider: 'acme',
    base_url: llmUrl,
    api_key: 'k1',
    model_name: 'fake-model',
  });
  await send('PUT', `${apiUrl}/api/config/models/embeddings/config`, {
    provider_kind: 'other',
    sub_provider: 'acme',
    model_name: 'embed-a',
  });
  const tool = (args: Record<string, unknown>) =>
    post(`${apiUrl}/api/tool_call`, { tool: '_document_index', arguments: args });
  await tool({ action: 'CREATE_INDEX', index_name: 'soak' });
  for (let i = 0; i < 40; i++)
    await tool({
      action: 'ADD_TEXT',
      index_name: 'soak',
      text: `Runbook ${i}: how to ${WORDS[i % WORDS.length]}. Step ${i} says to check the dashboard first, then the logs.`,
      metadata: { filepath: `runbooks/${i}.md` },
    });
}

async function main(): Promise<number> {
  const llm = await startFakeLlm((req) => ({ content: `ok ${req.messages.length}` }));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'soak-'));
  const git = await startGitServer({ username: 'soak', password: 'soak-token' });
  const stack = await startBenchStack({ PLATFORM_DATA_DIR: dir }, { worker: false });
  let api: ApiProcess | undefined;
  let worker: WorkerProcess | undefined;
  try {
    const bundlePath = await writeWorkflowBundle(dir);
    const env = {
      DATABASE_URL: stack.config.databaseUrl!,
      TEMPORAL_ADDRESS: stack.config.temporal.address,
      TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
      AUTH_PROVIDER: 'none',
      PLATFORM_DATA_DIR: dir,
      PLATFORM_BLUEPRINTS_DIR: path.join(dir, 'blueprints'),
      PLATFORM_LLM_BASE_URL: llm.baseUrl,
      PLATFORM_LLM_MODEL: 'soak-model',
    };
    api = await spawnApiProcess(env, 180_000);
    worker = spawnWorkerProcess({ ...env, WORKFLOW_BUNDLE_PATH: bundlePath, WORKER_SCHEDULES: '1' }, 180_000);
    await Promise.all([api.ready, worker.ready]);
    await prepare(api.url, llm.baseUrl);
    const repo = git.repo('soak');
    const page = (n: number, revision: number) =>
      `# Page ${n}\n\nRevision ${revision}: ${WORDS[revision % WORDS.length]}.\n`;
    repo.write(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`docs/p${i}.md`, page(i, 0)])));
    const created = await post(`${api.url}/api/managed-sources`, {
      name: 'soak',
      repo_url: repo.url,
      release_ref: 'main',
      scan_types_enabled: ['document_indexes'],
      credentials: { kind: 'basic', username: 'soak', password: 'soak-token' },
    });
    const sourceId = created.source.source_id as string;
    // Each sync brings one commit that rewrites one of the ten pages: the checkout stays ten files.
    const load = await startLoad(api.url, sourceId, (n) => repo.write({ [`docs/p${n % 10}.md`]: page(n % 10, n) }));
    const started = performance.now();
    const samples: Sample[] = [await sample(stack, api, worker, started, load.ops)];
    const end = started + MINUTES * 60_000;
    while (performance.now() < end) {
      await new Promise((r) => setTimeout(r, Math.min(SAMPLE_SECONDS * 1000, end - performance.now())));
      const s = await sample(stack, api, worker, started, load.ops);
      samples.push(s);
      process.stderr.write(
        `[soak] ${(s.at / 60).toFixed(1)} min: api ${s.values.get('api rss')!.toFixed(0)} MiB, worker ${s.values.get('worker rss')!.toFixed(0)} MiB, ` +
          `${s.values.get('pg connections')} connections, ops ${JSON.stringify(s.ops)}, errors ${JSON.stringify(load.errors)}\n`,
      );
    }
    await load.stop();
    const after = samples.filter((s) => s.at >= WARMUP_MINUTES * 60);
    if (after.length < 3)
      throw new Error(`only ${after.length} samples after the warm-up: run longer than ${WARMUP_MINUTES} min`);
    const names = [...samples[0]!.values.keys()].filter(
      (n) => samples.some((s) => s.values.get(n) !== samples[0]!.values.get(n)) || !n.startsWith('table '),
    );
    const verdicts = names.map((n) => judge(seriesOf(n), after));
    const lines = [
      `## Soak: ${MINUTES} min, ${LANES} lanes, a sample every ${SAMPLE_SECONDS} s, warm-up ${WARMUP_MINUTES} min ` +
        `(${new Date().toISOString()}, ${os.cpus().length} cores, load average ${os
          .loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')})`,
      '',
      `Tables not shown did not change size (${samples[0]!.values.size - names.length} of them).`,
    ];
    report(samples, verdicts, load.errors, lines);
    for (const op of OPS) if (load.lastError[op]) lines.push(`last ${op} failure: ${load.lastError[op]}`);
    const grown = verdicts.filter((v) => v.failed).map((v) => v.series.name);
    const idle = OPS.filter((op) => load.ops[op] === 0);
    lines.push(
      '',
      grown.length ? `FAIL: grows after the warm-up: ${grown.join(', ')}` : 'every series bounded after the warm-up',
    );
    if (idle.length) lines.push(`FAIL: no operation succeeded: ${idle.join(', ')}`);
    process.stdout.write(lines.join('\n') + '\n');
    return grown.length || idle.length ? 1 : 0;
  } finally {
    await Promise.all([api?.stop(10_000), worker?.stop(10_000)]);
    await stack.close();
    await git.close();
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
