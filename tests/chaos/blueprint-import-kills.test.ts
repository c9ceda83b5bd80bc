/**
 * Chaos for blueprint imports (issue 33, item 2): a managed source with scan type `blueprints` gets a
 * new blueprint directory per round, `CHAOS_KILLS` rounds (1 in `npm test`, more in `npm run chaos`).
 * In each, the sync's import of the new blueprint is held at the blueprint's lock (the test holds the
 * same advisory lock, and sees the import waiting for it in `pg_locks`: the activity is in flight,
 * inside its transaction), the worker process is SIGKILLed there, the lock released and a new worker
 * started. The sync must end once, successfully, with the blueprint imported once and whole (one row,
 * its working copy with every file, at the synced commit); the earlier ones untouched.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitRepo } from '../helpers/git-server.js';
import { http } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import { waitFor } from '../helpers/worker-env.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { managedSources, startGitStack, tokenCredentials, type GitStack } from '../managed-sources/support.js';

const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
const AUTH = { username: 'bot', password: 'bp-token' };

let env: GitStack;
let repo: GitRepo;
let src: string;
const workers: WorkerProcess[] = [];

const workerProcess = () => spawnStackWorker(env.stack, workers, { PLATFORM_DATA_DIR: env.dataDir });
const sources = () =>
  managedSources(() => env, {
    name: 'Blueprint library',
    scan_types_enabled: ['blueprints'],
    credentials: tokenCredentials(AUTH),
  });
const nameOf = (k: number) => `chaos-bp-${k}`;
const manifest = (name: string) =>
  `schema_version: 1\nname: ${name}\nblueprint:\n  short_description: Imported under chaos\nphases:\n  - id: gather\n    name: Gather\n    goal: Collect\n    prompts:\n      - file: prompts/gather.md\n`;
const waitingLocks = async () =>
  (
    await query<{ n: number }>(
      env.stack.db.url,
      `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`,
    )
  )[0]!.n;

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'chaos-bp-data-', gitAuth: AUTH, worker: false });
  repo = env.gitServer.repo('bp-owner/library');
  repo.write({ 'README.md': '# Library\n' });
  src = await sources().create(repo);
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await env?.close();
});

describe('blueprint imports whose worker is SIGKILLed mid-import', () => {
  it(
    'each sync ends once with the new blueprint imported once and whole',
    { timeout: 60_000 + KILLS * 120_000 },
    async () => {
      let worker = workerProcess();
      await worker.ready;
      const outcomes: string[] = [];
      for (let k = 0; k < KILLS; k++) {
        const name = nameOf(k);
        repo.write({
          [`blueprints/${name}/blueprint_manifest.yaml`]: manifest(name),
          [`blueprints/${name}/prompts/gather.md`]: `Gather for ${name}.\n`,
        });
        const commit = repo.head();
        // The import's transaction takes this lock first: holding it keeps the import in flight.
        const db = new pg.Client({ connectionString: env.stack.db.url });
        await db.connect();
        let res;
        try {
          await db.query('begin');
          await db.query('select pg_advisory_xact_lock(hashtextextended($1, 14))', [`default:${name}`]);
          const sync = sources().sync(src);
          await waitFor(`the import of ${name} to wait for its lock`, async () =>
            (await waitingLocks()) > 0 ? true : undefined,
          );
          expect((await worker.kill()).signal).toBe('SIGKILL');
          await db.query('commit');
          worker = workerProcess();
          await worker.ready;
          res = await sync;
        } finally {
          await db.end();
        }
        const data =
          res.status === 202 ? await sources().waitJob(src, res.body.data.job_id as string) : (res.body.data as any);
        expect([200, 202], res.text).toContain(res.status);
        const result = data.result ?? data;
        expect(result.hydrate.blueprints, JSON.stringify(data)).toMatchObject({ found: k + 1, applied: 1 });
        outcomes.push(result.outcome as string);

        // Imported once and whole: one row, every file in the working copy, at the synced commit.
        const rows = await query(env.stack.db.url, 'select source_commit from blueprints where name = $1', [name]);
        expect(rows).toEqual([{ source_commit: commit }]);
        const detail = await http(env.stack.url, 'GET', `/api/blueprints/${name}`, { token: env.admin });
        expect(detail.status, detail.text).toBe(200);
        expect(detail.body.data.files).toEqual(['blueprint_manifest.yaml', 'prompts/gather.md']);
        expect(detail.body.data.missing_files).toEqual([]);
        const file = await http(env.stack.url, 'GET', `/api/blueprints/${name}/files/prompts%2Fgather.md`, {
          token: env.admin,
        });
        expect(file.text).toBe(`Gather for ${name}.\n`);
      }
      const all = await query<{ name: string; n: number }>(
        env.stack.db.url,
        'select name, count(*)::int as n from blueprints where source_id = $1 group by name order by name',
        [src],
      );
      expect(all).toEqual(Array.from({ length: KILLS }, (_, k) => ({ name: nameOf(k), n: 1 })));
      // Each sync job ran once: one job per round, each ended.
      const jobs = await query<{ status: string }>(
        env.stack.db.url,
        'select status from managed_source_sync_jobs where source_id = $1',
        [src],
      );
      expect(jobs).toEqual(Array(KILLS).fill({ status: 'complete' }));
      process.stderr.write(`[chaos] blueprint import: ${KILLS} kill(s) mid-import: ${JSON.stringify(outcomes)}\n`);
    },
  );
});
