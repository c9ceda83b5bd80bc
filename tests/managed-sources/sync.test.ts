import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitRepo, GitServer } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { recordHistory } from '../helpers/histories.js';
import { managedSyncPrepare, managedSyncQuick } from '../../activities/managed-sources/sync.js';
import { waitFor } from '../helpers/worker-env.js';
import type { SourceSyncInput } from '../../workflows/source-sync-definitions.js';
import { GIT_AUTH as AUTH, managedSources, startGitStack, tokenCredentials, type GitStack } from './support.js';

let env: GitStack;
let stack: Stack;
let gitServer: GitServer;
let admin: string;
let developer: string;
let member: string;

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'msrc-data-' });
  ({ stack, gitServer, admin } = env);
  developer = await env.idp.sign({ sub: 'dev', roles: ['developer'] });
  member = await env.idp.sign({ sub: 'mem', roles: ['member'] });
}, 60_000);
afterAll(() => env?.close());

const credentials = tokenCredentials();

async function create(repo: GitRepo, extra: Record<string, unknown> = {}, token = admin) {
  return http(stack.url, 'POST', '/api/managed-sources', {
    token,
    body: {
      name: 'team repo',
      repo_url: repo.url,
      scan_types_enabled: ['agents', 'document_indexes'],
      credentials,
      ...extra,
    },
  });
}

const sync = (id: string, token = admin) =>
  http(stack.url, 'POST', `/api/managed-sources/${id}/sync`, { token, body: {} });
const { checkout } = managedSources(() => env, {});

describe('managed sources over a real Git server', () => {
  it('first sync checks out the release branch without excluded paths; then up_to_date, then updated', async () => {
    const repo = gitServer.repo('alpha');
    const first = repo.write({
      'agents/a1/agent.yaml': 'agent_id: a1\n',
      'docs/readme.md': '# hi\n',
      'big/blob.bin': 'x'.repeat(100),
      'big/keep.txt': 'kept',
      'notes.txt': 'n',
    });
    const created = await create(repo, {
      release_ref: 'main',
      checkout_exclude: ['# comment', '', 'big/*', '!big/keep.txt'],
    });
    expect(created.status).toBe(201);
    expect(created.body.success).toBe(true);
    expect(created.body.sync).toBeNull();
    expect(created.body.source.credentials).toEqual({
      kind: 'token',
      username: 'bot',
      configured: true,
      expires_at: null,
    });
    expect(created.text).not.toContain(AUTH.password);
    const id = created.body.source.source_id as string;
    const [stored] = await query<{ credentials_sealed: string }>(
      stack.db.url,
      'select credentials_sealed from managed_sources where id = $1',
      [id],
    );
    expect(stored!.credentials_sealed).not.toContain(AUTH.password);

    const r1 = await sync(id);
    expect(r1.status).toBe(200);
    // agents/a1/agent.yaml is not a full manifest: the sync succeeds with it as a degraded artifact.
    expect(r1.body.data).toMatchObject({
      outcome: 'updated_with_errors',
      commit_sha: first,
      ref_kind: 'branch',
      files_scanned: 4,
      partial_success: true,
      degraded_artifact_count: 1,
    });
    expect(r1.body.data.hydrate.agents.degraded_artifacts[0].artifact_id).toBe('agents/a1/agent.yaml');
    expect(r1.body.data.candidates).toEqual({ agents: 1, document_indexes: 1 });
    expect(existsSync(path.join(checkout(id), 'big/blob.bin'))).toBe(false);
    expect(readFileSync(path.join(checkout(id), 'big/keep.txt'), 'utf8')).toBe('kept');
    expect(existsSync(path.join(checkout(id), 'agents/a1/agent.yaml'))).toBe(true);

    const r2 = await sync(id);
    expect(r2.body.data).toMatchObject({ outcome: 'up_to_date', commit_sha: first });

    const second = repo.write({ 'docs/two.md': '# two\n' });
    const r3 = await sync(id);
    expect(r3.body.data).toMatchObject({
      outcome: 'updated_with_errors',
      commit_sha: second,
      previous_commit_sha: first,
    });
    expect(readFileSync(path.join(checkout(id), 'docs/two.md'), 'utf8')).toBe('# two\n');
    const got = await http(stack.url, 'GET', `/api/managed-sources/${id}`, { token: admin });
    expect(got.body.data).toMatchObject({ synced_commit_sha: second, sync_running: false });
    expect(got.body.data.last_sync.outcome).toBe('updated_with_errors');
  });

  it('a resync finding the synced commit is one local activity (no activity task), one bringing a 1-file change one activity after it', async () => {
    const repo = gitServer.repo('epsilon');
    repo.write({ 'src/a.txt': 'a1', 'src/b.txt': 'b', 'docs/guide.md': '# g\n' });
    const id = (await create(repo, { release_ref: 'main' })).body.source.source_id as string;
    expect((await sync(id)).body.data).toMatchObject({ outcome: 'updated', files_checked_out: 3, files_scanned: 3 });
    const activities = async (jobId: string) => {
      const handle = stack.api.deps.temporal.workflow.getHandle(`source-sync/${id}/${jobId}`);
      const { events } = await handle.fetchHistory();
      return {
        handle,
        names: events!.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean),
        // Local activities are recorded as markers (patch `sync-quick`: managedSyncQuick).
        locals: events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
        workflowTasks: events!.filter((e) => e.workflowTaskCompletedEventAttributes).length,
      };
    };

    const same = await sync(id);
    expect(same.body.data).toMatchObject({
      outcome: 'up_to_date',
      files_scanned: 3,
      candidates: { document_indexes: 1 },
    });
    const sameRun = await activities(same.body.data.job_id);
    expect(sameRun.names).toEqual([]);
    expect(sameRun.locals).toBe(1);
    expect(sameRun.workflowTasks).toBe(1);
    await recordHistory('source-sync-quick-up-to-date', sameRun.handle);

    const changedCommit = repo.write({ 'src/a.txt': 'a2' });
    const changed = await sync(id);
    expect(changed.body.data).toMatchObject({
      outcome: 'updated',
      commit_sha: changedCommit,
      files_checked_out: 3,
      files_scanned: 3,
      candidates: { document_indexes: 1 },
    });
    expect(readFileSync(path.join(checkout(id), 'src/a.txt'), 'utf8')).toBe('a2');
    const changedRun = await activities(changed.body.data.job_id);
    expect(changedRun.names).toEqual(['managedSyncPrepare']);
    expect(changedRun.locals).toBe(1);
    await recordHistory('source-sync-quick-changed', changedRun.handle);
    const [job] = await query<{ status: string; phase: string; files_scanned: number }>(
      stack.db.url,
      'select status, phase, files_scanned from managed_source_sync_jobs where job_id = $1',
      [changed.body.data.job_id],
    );
    expect(job).toEqual({ status: 'complete', phase: 'done', files_scanned: 3 });
  });

  it('a sync cut off (a local activity past its timeout, a cancelled one) ends its ref listing and goes no further', async () => {
    // A remote that takes the ref listing's request and never answers it; each request's socket is watched.
    const asked: Array<Promise<void>> = [];
    const remote = createServer((req) => {
      asked.push(new Promise<void>((resolve) => req.socket.once('close', () => resolve())));
    });
    await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = remote.address() as AddressInfo;
      const created = await create({ url: `http://127.0.0.1:${port}/silent.git` } as GitRepo);
      expect(created.status).toBe(201);
      const sourceId = created.body.source.source_id as string;
      const [row] = await query<{ tenant: string }>(stack.db.url, 'select tenant from managed_sources where id = $1', [
        sourceId,
      ]);
      const deps = { orm: stack.api.deps.orm, config: stack.api.deps.config };
      const input: SourceSyncInput = { tenant: row!.tenant, sourceId, jobId: randomUUID(), trigger: 'api' };
      const cases = [
        // What the worker does when a local activity's start-to-close timeout passes.
        { activity: managedSyncQuick, isLocal: true, reason: 'TIMED_OUT' as const },
        // A heartbeating activity cancelled (its workflow cancelled, or its heartbeat timed out).
        { activity: managedSyncPrepare, isLocal: false, reason: 'CANCELLED' as const },
      ];
      for (const [i, c] of cases.entries()) {
        const env = new MockActivityEnvironment({ isLocal: c.isLocal, activityType: c.activity.name });
        const outcome = env.run(c.activity, deps, input).then(
          () => 'answered',
          (err: unknown) => err,
        );
        await waitFor('the ref listing to reach the remote', async () => (asked.length > i ? true : undefined));
        env.cancel(c.reason);
        // The cancellation itself, not a Git failure (GIT_UNREACHABLE would be retried and end the sync so).
        expect(await outcome).toBeInstanceOf(CancelledFailure);
        // The request was ended (its socket closed) rather than left to the egress client's 5 minutes.
        await asked[i];
      }
      expect(asked).toHaveLength(cases.length);
    } finally {
      remote.closeAllConnections();
      await new Promise((resolve) => remote.close(resolve));
    }
  });

  it('refuses a force-moved release tag until acknowledged, applying nothing meanwhile', async () => {
    const repo = gitServer.repo('beta');
    const c1 = repo.write({ 'a.txt': 'one' });
    repo.tag('v1');
    const created = await create(repo, { release_ref: 'v1', sync_now: true });
    expect(created.status).toBe(201);
    expect(created.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c1, ref_kind: 'tag' });
    const id = created.body.source.source_id as string;

    const c2 = repo.write({ 'a.txt': 'two' });
    repo.tag('v1', { force: true });
    const refused = await sync(id);
    expect(refused.body.data).toMatchObject({
      outcome: 'failed',
      error_code: 'RELEASE_TAG_CHANGED_ON_REMOTE',
      moved_tag: { tag: 'v1', anchored_commit_sha: c1, remote_commit_sha: c2 },
    });
    expect(readFileSync(path.join(checkout(id), 'a.txt'), 'utf8')).toBe('one');
    const src = await http(stack.url, 'GET', `/api/managed-sources/${id}`, { token: admin });
    expect(src.body.data.synced_commit_sha).toBe(c1);
    expect(src.body.data.release_poll.moved_tag).toMatchObject({ tag: 'v1', remote_commit_sha: c2 });

    const acked = await http(stack.url, 'PATCH', `/api/managed-sources/${id}`, {
      token: admin,
      body: { acknowledge_moved_tag: true, sync_now: true },
    });
    expect(acked.status).toBe(200);
    expect(acked.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c2 });
    expect(acked.body.source.release_poll.moved_tag).toBeNull();
    expect(readFileSync(path.join(checkout(id), 'a.txt'), 'utf8')).toBe('two');
  });

  it('classifies wrong credentials, and a background job is readable until it ends', async () => {
    const repo = gitServer.repo('gamma');
    repo.write({ 'x.md': 'x' });
    const created = await create(repo, { credentials: { kind: 'basic', username: 'bot', password: 'wrong' } });
    const id = created.body.source.source_id as string;
    const res = await sync(id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ outcome: 'failed', error_code: 'GIT_AUTH_FAILED' });
    expect(res.body.data.error).not.toContain('wrong');

    const fixed = await http(stack.url, 'PATCH', `/api/managed-sources/${id}`, {
      token: admin,
      body: { credentials: { kind: 'basic', ...AUTH }, sync_now: true, sync_in_background: true },
    });
    expect(fixed.status).toBe(200);
    expect(fixed.body.sync).toBeNull();
    const jobId = fixed.body.sync_job.job_id as string;
    expect(fixed.body.sync_job.status).toBe('running');
    let job = await http(stack.url, 'GET', `/api/managed-sources/${id}/sync-status/${jobId}`, { token: admin });
    while (job.body.data.status === 'running') {
      await new Promise((r) => setTimeout(r, 100));
      job = await http(stack.url, 'GET', `/api/managed-sources/${id}/sync-status/${jobId}`, { token: admin });
    }
    expect(job.body.data.error).toBeNull();
    expect(job.body.data).toMatchObject({ status: 'complete', phase: 'done', files_scanned: 1 });
    expect(job.body.data.result.outcome).toBe('updated');
    const [row] = await query<{ status: string }>(
      stack.db.url,
      'select status from managed_source_sync_jobs where job_id = $1',
      [jobId],
    );
    expect(row!.status).toBe('complete');
    await recordHistory(
      'source-sync-background',
      stack.api.deps.temporal.workflow.getHandle(`source-sync/${id}/${jobId}`),
    );
  });

  it('refuses a second sync while one runs (409) and deletion while it runs', async () => {
    const repo = gitServer.repo('delta');
    repo.write({ 'x.md': 'x' });
    const id = (await create(repo)).body.source.source_id as string;
    // A running job row is what a sync in progress leaves; hold one to make the race deterministic.
    await query(
      stack.db.url,
      `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, requested_by, started_at, updated_at)
       select '00000000-0000-4000-8000-000000000001', id, tenant, 'running', 'fetching', 'test', now(), now() from managed_sources where id = $1`,
      [id],
    );
    for (const res of [
      await sync(id),
      await http(stack.url, 'POST', `/api/managed-sources/${id}/sync-async`, { token: admin }),
      await http(stack.url, 'PATCH', `/api/managed-sources/${id}`, { token: admin, body: { sync_now: true } }),
      await http(stack.url, 'DELETE', `/api/managed-sources/${id}`, { token: admin }),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body.payload.code).toBe('MANAGED_SOURCE_SYNC_IN_PROGRESS');
    }
    const jobs = await query<{ n: number }>(
      stack.db.url,
      'select count(*)::int as n from managed_source_sync_jobs where source_id = $1',
      [id],
    );
    expect(jobs[0]!.n).toBe(1);
    await query(stack.db.url, `update managed_source_sync_jobs set status = 'complete' where source_id = $1`, [id]);
    const del = await http(stack.url, 'DELETE', `/api/managed-sources/${id}`, { token: admin });
    expect(del.status).toBe(200);
    expect((await http(stack.url, 'GET', `/api/managed-sources/${id}`, { token: admin })).status).toBe(404);
  });

  it('refuses callers without the permissions, and bad input writes nothing', async () => {
    const repo = gitServer.repo('eps');
    const noRepos = await create(repo, {}, member);
    expect(noRepos.status).toBe(403);
    expect(noRepos.body.error_type).toBe('forbidden');
    // developer has manage_repos but neither manage_agents nor manage_users
    const agents = await create(repo, { scan_types_enabled: ['agents'] }, developer);
    expect(agents.status).toBe(403);
    const roles = await create(repo, { scan_types_enabled: ['roles'] }, developer);
    expect(roles.status).toBe(403);
    const ok = await create(repo, { scan_types_enabled: ['skills'] }, developer);
    expect(ok.status).toBe(201);
    const id = ok.body.source.source_id as string;
    for (const [method, p] of [
      ['GET', '/api/managed-sources'],
      ['GET', `/api/managed-sources/${id}`],
      ['POST', `/api/managed-sources/${id}/sync`],
      ['POST', `/api/managed-sources/${id}/sync-async`],
      ['GET', `/api/managed-sources/${id}/sync-status/00000000-0000-4000-8000-000000000009`],
      ['DELETE', `/api/managed-sources/${id}`],
    ] as const) {
      const res = await http(stack.url, method, p, { token: member, body: method === 'POST' ? {} : undefined });
      expect(res.status, `${method} ${p}`).toBe(403);
    }
    const patchRoles = await http(stack.url, 'PATCH', `/api/managed-sources/${id}`, {
      token: developer,
      body: { scan_types_enabled: ['skills', 'roles'] },
    });
    expect(patchRoles.status).toBe(403);
    expect((await http(stack.url, 'GET', '/api/managed-sources', {})).status).toBe(401);
    const before = await query<{ n: number }>(stack.db.url, 'select count(*)::int as n from managed_sources');
    const badRule = await create(repo, { checkout_exclude: ['a\nb'] });
    expect(badRule.status).toBe(400);
    const undeclared = await create(repo, { surprise: 1 });
    expect(undeclared.status).toBe(422);
    const after = await query<{ n: number }>(stack.db.url, 'select count(*)::int as n from managed_sources');
    expect(after[0]!.n).toBe(before[0]!.n);
    const unknownJob = await http(
      stack.url,
      'GET',
      `/api/managed-sources/${id}/sync-status/00000000-0000-4000-8000-000000000009`,
      { token: admin },
    );
    expect(unknownJob.status).toBe(404);
  });
});
