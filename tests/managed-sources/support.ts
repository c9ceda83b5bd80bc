import path from 'node:path';
import { expect, inject } from 'vitest';
import { startGitServer, type GitRepo, type GitServer } from '../helpers/git-server.js';
import { beside, startOidcStack, type OidcStack } from '../helpers/oidc-stack.js';
import { http, type StackOptions } from '../helpers/stack.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

/** Credentials the test Git server accepts, as a token connection and as basic auth. */
export const GIT_AUTH = { username: 'bot', password: 's3cret-token' };
export const tokenCredentials = (auth = GIT_AUTH) => ({ kind: 'token', token: auth.password, username: auth.username });
export const basicCredentials = (auth = GIT_AUTH) => ({ kind: 'basic', ...auth });

/** An OIDC stack beside a real Git smart-HTTP server on loopback, with an admin token. */
export interface GitStack extends OidcStack {
  gitServer: GitServer;
  admin: string;
}

export async function startGitStack(
  options: StackOptions & { dataDirPrefix: string; gitAuth?: { username: string; password: string } },
): Promise<GitStack> {
  const gitServer = await startGitServer(options.gitAuth ?? GIT_AUTH);
  const oidc = await beside(gitServer, () => startOidcStack(options));
  return { ...oidc, gitServer, admin: await oidc.idp.sign({ sub: 'root', roles: ['admin'] }) };
}

/** The managed-source routes as a test calls them (as the admin unless a token is given). */
export function managedSources(ctx: () => GitStack, defaults: Record<string, unknown>) {
  const url = () => ctx().stack.url;
  return {
    /** Creates a source from `repo` (the defaults, then `extra`); expects 201 and answers its id. */
    async create(repo: GitRepo, extra: Record<string, unknown> = {}): Promise<string> {
      const res = await http(url(), 'POST', '/api/managed-sources', {
        token: ctx().admin,
        body: { repo_url: repo.url, ...defaults, ...extra },
      });
      expect(res.status).toBe(201);
      return res.body.source.source_id as string;
    },
    sync: (id: string, body: Record<string, unknown> = {}, token = ctx().admin) =>
      http(url(), 'POST', `/api/managed-sources/${id}/sync`, { token, body }),
    patch: (id: string, body: Record<string, unknown>) =>
      http(url(), 'PATCH', `/api/managed-sources/${id}`, { token: ctx().admin, body }),
    get: (id: string) => http(url(), 'GET', `/api/managed-sources/${id}`, { token: ctx().admin }),
    /** The source's view (`data` of GET). */
    source: async (id: string) =>
      (await http(url(), 'GET', `/api/managed-sources/${id}`, { token: ctx().admin })).body.data,
    /** Waits for a background sync job to leave `running`; answers its status view. */
    async waitJob(id: string, jobId: string) {
      const read = () => http(url(), 'GET', `/api/managed-sources/${id}/sync-status/${jobId}`, { token: ctx().admin });
      let job = await read();
      while (job.body.data.status === 'running') {
        await new Promise((r) => setTimeout(r, 100));
        job = await read();
      }
      return job.body.data;
    },
    /** The source's checked-out working tree. */
    checkout: (id: string) => path.join(ctx().dataDir, 'managed-sources', id, 'checkout'),
  };
}

/** A worker in a process of its own (to kill for real) on the stack's database, task queue and data folder. */
export function spawnStackWorker(env: GitStack): WorkerProcess {
  return spawnWorkerProcess({
    DATABASE_URL: env.stack.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: env.stack.config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: env.stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    PLATFORM_DATA_DIR: env.dataDir,
  });
}

/** Probes until it answers something other than undefined (every `everyMs`), failing after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 120_000, everyMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
