/**
 * Chaos for blueprint imports and renames (issue 33, item 2): a managed source with scan type `blueprints` gets a
 * new blueprint directory per round, `CHAOS_KILLS` rounds (1 in `npm test`, more in `npm run chaos`).
 * In each, the sync's import of the new blueprint is held at the blueprint's lock (the test holds the
 * same advisory lock, and sees the import waiting for it in `pg_locks`: the activity is in flight,
 * inside its transaction), the worker process is SIGKILLed there, the lock released and a new worker
 * started. The sync must end once, successfully, with the blueprint imported once and whole (one row,
 * its working copy with every file, at the synced commit); the earlier ones untouched.
 *
 * Then each imported blueprint is renamed (a pull request on the fake Git host, merged on the server,
 * then a sync): the `blueprint-rename/<blueprint_id>` workflow's apply is held inside its transaction
 * (the test holds an exclusive lock on `projects`, which the rename reads for in-flight missions), the
 * worker SIGKILLed there, the lock released, a new worker started. The rename must be applied once:
 * the workflow answers `applied`, one row under the new name, one rename commit in its repository.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blueprintRenameWorkflowId } from '../../workflows/blueprint-rename-definitions.js';
import { startFakeForge, type FakeForge } from '../code-agent/fake-forge.js';
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
let forge: FakeForge;
let worker: WorkerProcess;
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
/** Locks requested and not granted: advisory ones, or on table `relation`. */
const waitingLocks = async (relation?: string) =>
  (
    await query<{ n: number }>(
      env.stack.db.url,
      `select count(*)::int as n from pg_locks l left join pg_class c on c.oid = l.relation
        where not l.granted and (case when $1::text is null then l.locktype = 'advisory' else c.relname = $1 end)`,
      [relation ?? null],
    )
  )[0]!.n;

/**
 * Runs `inFlight` (which starts the work) while this test holds a lock (`lockSql` in a transaction);
 * once the work waits for it (`waiting`), SIGKILLs the worker, releases the lock and starts the next one.
 */
async function killWhileHeld<T>(
  lockSql: string,
  params: unknown[],
  relation: string | undefined,
  inFlight: () => Promise<T>,
) {
  const db = new pg.Client({ connectionString: env.stack.db.url });
  await db.connect();
  try {
    await db.query('begin');
    await db.query(lockSql, params);
    const work = inFlight();
    await waitFor('the work to wait for the held lock', async () =>
      (await waitingLocks(relation)) > 0 ? true : undefined,
    );
    expect((await worker.kill()).signal).toBe('SIGKILL');
    await db.query('commit');
    worker = workerProcess();
    await worker.ready;
    return await work;
  } finally {
    await db.end();
  }
}

beforeAll(async () => {
  forge = await startFakeForge();
  env = await startGitStack({ dataDirPrefix: 'chaos-bp-data-', gitAuth: AUTH, worker: false });
  // The rounds of `npm run chaos` outlast a token's default 5 minutes.
  env.admin = await env.idp.sign({ sub: 'root', roles: ['admin'] }, { expiresIn: '1h' });
  const applied = await http(env.stack.url, 'POST', '/api/config/setup/apply-partial', {
    token: env.admin,
    body: { content: `enhancements:\n  knowledge_base:\n    forge_api_url: ${forge.apiUrl}\n` },
  });
  expect(applied.status, applied.text).toBe(200);
  repo = env.gitServer.repo('bp-owner/library');
  repo.write({ 'README.md': '# Library\n' });
  src = await sources().create(repo);
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await env?.close();
  await forge?.close();
});

describe('blueprint imports whose worker is SIGKILLed mid-import', () => {
  it(
    'each sync ends once with the new blueprint imported once and whole',
    { timeout: 60_000 + KILLS * 120_000 },
    async () => {
      worker = workerProcess();
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
        const res = await killWhileHeld(
          'select pg_advisory_xact_lock(hashtextextended($1, 14))',
          [`default:${name}`],
          undefined,
          () => sources().sync(src),
        );
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

describe('blueprint renames whose worker is SIGKILLed while the rename applies', () => {
  const bare = () => path.join(env.gitServer.root, 'bp-owner/library.git');

  it(
    'each rename is applied once: one row under the new name, one rename commit',
    { timeout: 60_000 + KILLS * 120_000 },
    async () => {
      for (let k = 0; k < KILLS; k++) {
        const [name, newName] = [nameOf(k), `${nameOf(k)}-renamed`];
        const renamed = await http(env.stack.url, 'POST', `/api/blueprints/${name}/rename`, {
          token: env.admin,
          body: { new_name: newName },
        });
        expect(renamed.status, renamed.text).toBe(202);
        const id = renamed.body.data.blueprint_id as string;
        const branch = renamed.body.data.pull_request.branch as string;
        expect(forge.pulls.filter((p) => p.head.ref === branch)).toHaveLength(1);
        // Merged on the server: main fast-forwards to the rename branch.
        execFileSync('git', ['--git-dir', bare(), 'update-ref', 'refs/heads/main', `refs/heads/${branch}`]);
        // The sync sees the renamed directory and wakes the rename workflow, whose apply waits on `projects`.
        const synced = await killWhileHeld('lock table projects in access exclusive mode', [], 'projects', async () => {
          const res = await sources().sync(src);
          expect(res.status, res.text).toBe(200);
          return res;
        });
        expect(synced.body.data.outcome).toBe('updated');
        const handle = env.stack.api.deps.temporal.workflow.getHandle(blueprintRenameWorkflowId(id));
        expect(await handle.result()).toEqual({ status: 'applied', blueprint_name: newName });

        const rows = await query(
          env.stack.db.url,
          'select name, pending_rename from blueprints where blueprint_id = $1',
          [id],
        );
        expect(rows).toEqual([{ name: newName, pending_rename: null }]);
        expect((await http(env.stack.url, 'GET', `/api/blueprints/${name}`, { token: env.admin })).status).toBe(404);
        const detail = await http(env.stack.url, 'GET', `/api/blueprints/${newName}`, { token: env.admin });
        expect(detail.body.data).toMatchObject({ blueprint_id: id, manifest: { name: newName }, pending_rename: null });
        const log = execFileSync('git', [
          '-C',
          path.join(env.stack.config.blueprints.dir, 'default', id),
          'log',
          '--format=%s',
        ])
          .toString()
          .split('\n');
        expect(log.filter((subject) => subject.startsWith('Rename blueprint'))).toEqual([
          `Rename blueprint ${name} to ${newName}`,
        ]);
      }
      process.stderr.write(`[chaos] blueprint rename: ${KILLS} kill(s) while the rename applied, each applied once\n`);
    },
  );
});
