/**
 * Missions waiting for people (issue 15): the cost of open missions while they wait. Starts missions of
 * a one-phase blueprint whose phase asks a question, waits until every one of them is
 * `IN_PROGRESS_NEEDING_INPUT`, then measures the process's memory (API and worker share it here) and
 * `GET /api/projects/awaiting-input` latency — first with `BENCH_MISSIONS_SMALL` (10) open missions,
 * then with `BENCH_MISSIONS_LARGE` (1,000) — and prints the large figures as ratios of the small ones.
 * The baseline latency is a bare PostgreSQL read of the same waiting rows, so the route's own overhead shows.
 */
import { measure, type Measurement } from './lib/measure.js';
import type { BenchStack } from './lib/stack.js';

const BLUEPRINT = 'bench-waiting';

async function call(url: string, method: string, p: string, body?: unknown) {
  const res = await fetch(url + p, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function waitingCount(stack: BenchStack): Promise<number> {
  const [row] = await stack.api.deps.orm.em
    .getConnection()
    .execute<{ n: string }[]>(
      `select count(*) as n from projects where blueprint_name = ? and waiting_state = 'IN_PROGRESS_NEEDING_INPUT'`,
      [BLUEPRINT],
    );
  return Number(row?.n ?? 0);
}

/** 503 answers (retried as the envelope asks: the database pool was busy) while opening missions. */
let retried503 = 0;

/** Starts missions until `total` are open, then waits until all of them wait for input. */
async function openMissions(stack: BenchStack, total: number, concurrency: number): Promise<number> {
  const started = await waitingCount(stack);
  const t0 = performance.now();
  await measure('start', total - started, concurrency, async (i) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await call(stack.api.url, 'POST', '/api/projects', {
          blueprint_name: BLUEPRINT,
          name: `waiting ${started + i}`,
        });
        return;
      } catch (err) {
        if (!String(err).includes(': 503 ') || attempt >= 20) throw err;
        retried503++;
        await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
      }
    }
  });
  while ((await waitingCount(stack)) < total) await new Promise((r) => setTimeout(r, 250));
  return (performance.now() - t0) / 1000;
}

/** Resident memory after a full collection when `--expose-gc` is on (else as it stands), in MiB. */
function rssMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss / 1024 / 1024;
}

async function latencies(stack: BenchStack, count: number): Promise<[Measurement, Measurement]> {
  const conn = stack.api.deps.orm.em.getConnection();
  const route = await measure('GET /api/projects/awaiting-input', count, 4, async () => {
    const body = await call(stack.api.url, 'GET', '/api/projects/awaiting-input');
    if (!Array.isArray(body.items)) throw new Error('awaiting-input answered no items');
  });
  const bare = await measure('plain PostgreSQL read (50 missions, their open questions)', count, 4, async () => {
    await conn.execute(
      `select p.id, q.* from (select id from projects where waiting_state = 'IN_PROGRESS_NEEDING_INPUT'
         order by updated_at desc limit 50) p join project_questions q on q.project_id = p.id and q.status = 'open'`,
    );
  });
  return [route, bare];
}

export async function benchMissions(stack: BenchStack, small: number, large: number): Promise<string> {
  await call(stack.api.url, 'POST', '/api/blueprints/', {
    blueprint_name: BLUEPRINT,
    short_description: 'One phase that waits for a person',
    phases: [
      {
        id: 'ask',
        name: 'Ask',
        goal: 'Wait for an answer',
        questions: [{ id: 'q1', content: 'Which region?', priority: 'high', expected_response_type: 'text' }],
      },
    ],
  });
  const baseMiB = rssMiB();
  const openSmall = await openMissions(stack, small, 4);
  const smallMiB = rssMiB();
  const [smallRoute, smallBare] = await latencies(stack, 200);
  const openLarge = await openMissions(stack, large, 4);
  // Let the worker settle (sticky cache, activity slots) before reading memory again.
  await new Promise((r) => setTimeout(r, 5000));
  const largeMiB = rssMiB();
  const [largeRoute, largeBare] = await latencies(stack, 200);
  const f = (n: number) => n.toFixed(1);
  const perMission = (largeMiB - smallMiB) / (large - small);
  return [
    `## Missions waiting for input: ${small} vs ${large} open missions (API and worker in one process)`,
    '',
    '| | open missions | process RSS | awaiting-input p50 / p95 | plain PostgreSQL read p50 / p95 |',
    '|-|-|-|-|-|',
    `| small | ${small} | ${f(smallMiB)} MiB (start ${f(baseMiB)}) | ${f(smallRoute.p50)} / ${f(smallRoute.p95)} ms | ${f(smallBare.p50)} / ${f(smallBare.p95)} ms |`,
    `| large | ${large} | ${f(largeMiB)} MiB | ${f(largeRoute.p50)} / ${f(largeRoute.p95)} ms | ${f(largeBare.p50)} / ${f(largeBare.p95)} ms |`,
    `| ratio large/small | ${(large / small).toFixed(0)}x | ${(largeMiB / smallMiB).toFixed(2)}x (${f(perMission * 1024)} KiB a mission) | ${(largeRoute.p50 / smallRoute.p50).toFixed(2)}x p50 | ${(largeBare.p50 / smallBare.p50).toFixed(2)}x p50 |`,
    '',
    `Opening them (start + first workflow task + question set): ${f(openSmall)} s for ${small}, ${f(openLarge)} s for ${large - small} more.`,
    `Starts answered 503 (database pool busy; API and worker share one pool here) and were retried: ${retried503}.`,
    `Route over plain read, p50: ${(smallRoute.p50 / smallBare.p50).toFixed(1)}x at ${small}, ${(largeRoute.p50 / largeBare.p50).toFixed(1)}x at ${large}.`,
  ].join('\n');
}
