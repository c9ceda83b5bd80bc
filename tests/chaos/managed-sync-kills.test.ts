/**
 * Managed-source sync of a large repository (issue 33, item 2) while the worker process is SIGKILLed
 * mid-fetch, `CHAOS_KILLS` times (1 in `npm test`, more in `npm run chaos`), a new worker started
 * after each kill as the supervisor does.
 *
 * The Git server holds the fetch's pack request (`git-upload-pack`), so each kill lands while the
 * fetch activity waits on the remote; its heartbeats (every 2 s, a 10 s timeout) stop and Temporal
 * runs the attempt again on the next worker. A heartbeat timeout counts as an attempt (the Git
 * profile allows 5), so the kills are spread over several syncs, at most two per sync: the first
 * sync fetches the whole repository, each later one a commit that adds a file. Every sync must end
 * `complete` with the remote's commit recorded (job, source); one job per sync; the working tree
 * holds each file once.
 *
 * The test drives the public API (create, sync-async, sync-status) on a stack without a worker;
 * workers are processes of their own. Waits are on state (held requests, the job), bounded.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitRepo } from '../helpers/git-server.js';
import { http } from '../helpers/stack.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import {
  managedSources,
  spawnStackWorker,
  startGitStack,
  tokenCredentials,
  until,
  type GitStack,
} from '../managed-sources/support.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
/** Files in the repository (`CHAOS_SYNC_FILES`): 2,000 in the one-kill pass, 10,000 under `npm run chaos`. */
const FILES = Number(process.env.CHAOS_SYNC_FILES ?? (KILLS > 1 ? 10_000 : 2_000));
const KILLS_PER_SYNC = 2;
const SYNCS = Math.ceil(KILLS / KILLS_PER_SYNC);

let env: GitStack;
let repo: GitRepo;
let sourceId: string;
const workers: WorkerProcess[] = [];
const api = managedSources(() => env, {
  name: 'big repo',
  scan_types_enabled: ['agents'],
  credentials: tokenCredentials(),
});
/** Pack requests the Git server received (each held until released): one per fetch attempt. */
let packRequests = 0;

const workerProcess = () => {
  const w = spawnStackWorker(env);
  workers.push(w);
  return w;
};

/** Commits `count` files spread over 50 folders, 1,000 a commit (as a history grows). */
function commitTree(count: number): void {
  for (let from = 0; from < count; from += 1_000)
    repo.write(
      Object.fromEntries(
        Array.from({ length: Math.min(1_000, count - from) }, (_, j) => {
          const i = from + j;
          return [`src/mod${i % 50}/f${i}.txt`, `file ${i}\n${'lorem ipsum '.repeat(8)}\n`];
        }),
      ),
    );
}

function filesUnder(dir: string): number {
  let n = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === '.git') continue;
    n += entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : 1;
  }
  return n;
}

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'chaos-sync-', worker: false });
  repo = env.gitServer.repo('big');
  commitTree(FILES);
  sourceId = await api.create(repo, { release_ref: 'main' });
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await env?.close();
});

describe('managed-source sync while the worker is SIGKILLed mid-fetch', () => {
  it('ends every sync complete with its commit recorded, once', { timeout: 120_000 + KILLS * 60_000 }, async () => {
    let worker = workerProcess();
    await worker.ready;
    const signals: Array<NodeJS.Signals | null> = [];
    const started = Date.now();
    for (let s = 0; s < SYNCS; s++) {
      if (s > 0) repo.write({ [`added/sync${s}.txt`]: `added before sync ${s}\n` });
      const head = repo.head();
      const release = env.gitServer.hold((req) => req.method === 'POST' && ++packRequests > 0);
      const kills = Math.min(KILLS_PER_SYNC, KILLS - s * KILLS_PER_SYNC);
      const res = await http(env.stack.url, 'POST', `/api/managed-sources/${sourceId}/sync-async`, {
        token: env.admin,
      });
      expect(res.status, res.text).toBe(202);
      const jobId = res.body.data.job_id as string;
      // The dead worker's pack request stays held: count only those sent since the last kill.
      let heldByDead = packRequests;
      for (let k = 0; k < kills; k++) {
        await until('a pack request held (the fetch in flight)', () => (packRequests > heldByDead ? true : undefined));
        const job = (
          await http(env.stack.url, 'GET', `/api/managed-sources/${sourceId}/sync-status/${jobId}`, {
            token: env.admin,
          })
        ).body.data;
        expect([job.status, job.phase]).toEqual(['running', 'fetching']);
        signals.push((await worker.kill()).signal);
        heldByDead = packRequests;
        if (k === kills - 1) release();
        worker = workerProcess();
        await worker.ready;
      }
      const job = await api.waitJob(sourceId, jobId);
      expect(job.status, JSON.stringify(job)).toBe('complete');
      // Receipts: the job's result and the source carry the remote's commit.
      expect(job.result).toMatchObject({
        outcome: 'updated',
        commit_sha: head,
        files_scanned: FILES + s,
        error_code: null,
      });
      expect((await api.source(sourceId)).synced_commit_sha).toBe(head);
    }
    expect(signals).toEqual(Array(KILLS).fill('SIGKILL'));
    // No doubled effect: one job per sync, each complete; each file checked out once.
    const jobs = await query<{ status: string; n: number }>(
      env.stack.db.url,
      'select status, count(*)::int as n from managed_source_sync_jobs where source_id = $1 group by status',
      [sourceId],
    );
    expect(jobs).toEqual([{ status: 'complete', n: SYNCS }]);
    expect(filesUnder(api.checkout(sourceId))).toBe(FILES + SYNCS - 1);
    // Each killed attempt was held at its pack request; the attempts after a release went through.
    expect(packRequests).toBe(KILLS);
    process.stderr.write(
      `[chaos] managed-source sync: ${FILES} files, ${KILLS} kill(s) mid-fetch over ${SYNCS} sync(s), ${packRequests} pack requests, ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
  });
});
