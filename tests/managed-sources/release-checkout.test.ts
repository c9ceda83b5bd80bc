import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { GitServer } from '../helpers/git-server.js';
import type { Stack } from '../helpers/stack.js';
import { GIT_AUTH, managedSources, startGitStack, tokenCredentials, type GitStack } from './support.js';

/**
 * Issue 12, part 4: OAuth grants that lapse, sparse-checkout failures and background release jobs
 * that end unmet, against a real Git server on loopback.
 */
let env: GitStack;
let stack: Stack;
let gitServer: GitServer;
const AUTH = GIT_AUTH;
const { create, sync, patch, source, checkout, waitJob } = managedSources(() => env, {
  name: 'rel repo',
  scan_types_enabled: ['document_indexes'],
  credentials: tokenCredentials(),
});

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'msrc-rel-' });
  ({ stack, gitServer } = env);
}, 60_000);
afterAll(() => env?.close());

const LONG = `long/${'x'.repeat(300)}.txt`;

describe('managed sources: OAuth grants, sparse checkout, release jobs', () => {
  it('a lapsed or refused OAuth grant answers OAUTH_RENEWAL_REQUIRED; a live one syncs', async () => {
    const repo = gitServer.repo('oauth');
    const c1 = repo.write({ 'docs/a.md': '# a\n' });
    const lapsed = await create(repo, {
      credentials: {
        kind: 'oauth',
        access_token: AUTH.password,
        username: AUTH.username,
        expires_at: '2020-01-01T00:00:00Z',
      },
    });
    const view = await source(lapsed);
    expect(view.credentials).toEqual({
      kind: 'oauth',
      username: AUTH.username,
      configured: true,
      expires_at: '2020-01-01T00:00:00.000Z',
    });
    expect(JSON.stringify(view)).not.toContain(AUTH.password);
    const [row] = await query<{ credentials_sealed: string }>(
      stack.db.url,
      'select credentials_sealed from managed_sources where id = $1',
      [lapsed],
    );
    expect(row!.credentials_sealed).not.toContain(AUTH.password);
    const refused = await sync(lapsed);
    expect(refused.status).toBe(200);
    expect(refused.body.data).toMatchObject({ outcome: 'failed', error_code: 'OAUTH_RENEWAL_REQUIRED' });
    expect(existsSync(checkout(lapsed))).toBe(false);
    expect((await source(lapsed)).synced_commit_sha).toBeNull();

    // A revoked grant (the server refuses the token) is the same renewal.
    const revoked = await create(repo, {
      credentials: { kind: 'oauth', access_token: 'revoked', username: AUTH.username },
    });
    expect((await sync(revoked)).body.data).toMatchObject({ outcome: 'failed', error_code: 'OAUTH_RENEWAL_REQUIRED' });

    // Renewed: a grant that has not lapsed syncs.
    const renewed = await patch(lapsed, {
      credentials: {
        kind: 'oauth',
        access_token: AUTH.password,
        username: AUTH.username,
        expires_at: '2999-01-01T00:00:00+01:00',
      },
      sync_now: true,
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c1 });
    expect(renewed.body.source.credentials.expires_at).toBe('2998-12-31T23:00:00.000Z');
  });

  it('re-including a path below an excluded directory is SPARSE_CHECKOUT_UNSUPPORTED; dir/* then ! works', async () => {
    const repo = gitServer.repo('sparse');
    const c1 = repo.write({ 'big/a.bin': 'a', 'big/keep.txt': 'kept', 'docs/x.md': 'x' });
    const id = await create(repo, { checkout_exclude: ['big/', '!big/keep.txt'] });
    const res = await sync(id);
    expect(res.body.data).toMatchObject({ outcome: 'failed', error_code: 'SPARSE_CHECKOUT_UNSUPPORTED' });
    expect(res.body.data.error).toContain('!big/keep.txt');
    expect(existsSync(checkout(id))).toBe(false);
    expect((await source(id)).synced_commit_sha).toBeNull();

    const fixed = await patch(id, { checkout_exclude: ['big/*', '!big/keep.txt'], sync_now: true });
    expect(fixed.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c1 });
    expect(readFileSync(path.join(checkout(id), 'big', 'keep.txt'), 'utf8')).toBe('kept');
    expect(existsSync(path.join(checkout(id), 'big', 'a.bin'))).toBe(false);
  });

  it('a working tree that cannot be written: SPARSE_CHECKOUT_APPLY_FAILED, then MANAGED_CHECKOUT_DEGRADED keeping the old tree', async () => {
    const repo = gitServer.repo('degraded');
    repo.write({ 'docs/a.md': '# a\n' });
    const c1 = repo.writeIndexOnly(LONG, 'too long a name for any filesystem');
    const id = await create(repo, { checkout_exclude: ['*.bin'] });
    const first = await sync(id);
    expect(first.body.data).toMatchObject({ outcome: 'failed', error_code: 'SPARSE_CHECKOUT_APPLY_FAILED' });
    expect(first.body.data.error).toContain('ENAMETOOLONG');
    expect(existsSync(checkout(id))).toBe(false);
    expect(existsSync(`${checkout(id)}.tmp-${first.body.data.job_id}`)).toBe(false);

    // Excluding the offending folder makes the checkout possible.
    const ok = await patch(id, { checkout_exclude: ['*.bin', 'long/'], sync_now: true });
    expect(ok.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c1, paths_excluded: 1 });
    expect(readFileSync(path.join(checkout(id), 'docs', 'a.md'), 'utf8')).toBe('# a\n');

    // Dropping the rule again: the new tree cannot be written, the previous one stays and is served.
    const degraded = await patch(id, { checkout_exclude: ['*.bin'], sync_now: true });
    expect(degraded.body.sync).toMatchObject({ outcome: 'failed', error_code: 'MANAGED_CHECKOUT_DEGRADED' });
    expect(readFileSync(path.join(checkout(id), 'docs', 'a.md'), 'utf8')).toBe('# a\n');
    expect(degraded.body.source.synced_commit_sha).toBe(c1);

    // A background release job for a new commit that cannot be checked out ends SKILL_RELEASE_STILL_PENDING.
    const c2 = repo.write({ 'docs/b.md': '# b\n' });
    const bg = await patch(id, { sync_now: true, sync_in_background: true });
    expect(bg.status).toBe(200);
    expect(bg.body.sync_job).toMatchObject({ status: 'running', expected_release_commit: c2 });
    const job = await waitJob(id, bg.body.sync_job.job_id);
    expect(job.status).toBe('error');
    expect(job.error.code).toBe('SKILL_RELEASE_STILL_PENDING');
    expect(job.result).toMatchObject({ outcome: 'failed', error_code: 'MANAGED_CHECKOUT_DEGRADED' });
    expect((await source(id)).synced_commit_sha).toBe(c1);

    // Fixed rules: the job's expected commit reaches the source and the job completes.
    const met = await patch(id, { checkout_exclude: ['long/'], sync_now: true, sync_in_background: true });
    expect(met.body.sync_job.expected_release_commit).toBe(c2);
    const done = await waitJob(id, met.body.sync_job.job_id);
    expect(done).toMatchObject({ status: 'complete', error: null });
    expect(done.result).toMatchObject({ outcome: 'updated', commit_sha: c2 });
  });

  it('a release that moves while the background job runs ends SKILL_RELEASE_CHANGED_DURING_SYNC', async () => {
    const repo = gitServer.repo('moving');
    repo.write({ 'docs/a.md': '# a\n' });
    const id = await create(repo, { release_ref: 'main', sync_now: true });
    const c2 = repo.write({ 'docs/a.md': '# a2\n' });
    // The API's own look-up of the release passes; the sync's requests wait until the branch moved.
    let seen = 0;
    const release = gitServer.hold(() => ++seen > 1);
    const bg = await patch(id, { sync_now: true, sync_in_background: true });
    expect(bg.status).toBe(200);
    expect(bg.body.sync_job.expected_release_commit).toBe(c2);
    const c3 = repo.write({ 'docs/a.md': '# a3\n' });
    release();
    const job = await waitJob(id, bg.body.sync_job.job_id);
    expect(job.status).toBe('error');
    expect(job.error.code).toBe('SKILL_RELEASE_CHANGED_DURING_SYNC');
    expect(job.error.message).toContain(c3);
    expect(job.result).toMatchObject({ outcome: 'updated', commit_sha: c3 });
    // The job's result, its release check and the source survive (readable from the table).
    const [row] = await query<{ status: string; error: { code: string } }>(
      stack.db.url,
      'select status, error from managed_source_sync_jobs where job_id = $1',
      [bg.body.sync_job.job_id],
    );
    expect(row).toMatchObject({ status: 'error', error: { code: 'SKILL_RELEASE_CHANGED_DURING_SYNC' } });
  });

  it('no job starts while a sync runs (warning SKILL_RELEASE_SYNC_NOT_STARTED); a release change then is 409 and saves nothing', async () => {
    const repo = gitServer.repo('busy');
    repo.write({ 'docs/a.md': '# a\n' });
    const id = await create(repo, { release_ref: 'main' });
    await query(
      stack.db.url,
      `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, requested_by, started_at, updated_at)
       select '00000000-0000-4000-8000-0000000000aa', id, tenant, 'running', 'fetching', 'test', now(), now() from managed_sources where id = $1`,
      [id],
    );
    const res = await patch(id, { name: 'renamed', sync_now: true, sync_in_background: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ warning_code: 'SKILL_RELEASE_SYNC_NOT_STARTED', sync: null });
    expect(res.body.sync_job).toBeUndefined();
    expect(res.body.source.name).toBe('renamed');

    const moved = await patch(id, { release_ref: 'v9', sync_now: true, sync_in_background: true });
    expect(moved.status).toBe(409);
    expect(moved.body.payload.code).toBe('MANAGED_SOURCE_SYNC_IN_PROGRESS');
    expect((await source(id)).release_ref).toBe('main');
    const jobs = await query<{ n: number }>(
      stack.db.url,
      'select count(*)::int as n from managed_source_sync_jobs where source_id = $1',
      [id],
    );
    expect(jobs[0]!.n).toBe(1);

    // The remote cannot name the release: saved, no job, the same warning with the reason.
    await query(stack.db.url, 'delete from managed_source_sync_jobs where source_id = $1', [id]);
    const missing = await patch(id, { release_ref: 'no-such-ref', sync_now: true, sync_in_background: true });
    expect(missing.status).toBe(200);
    expect(missing.body.warning_code).toBe('SKILL_RELEASE_SYNC_NOT_STARTED');
    expect(missing.body.warning).toContain('RELEASE_REF_NOT_FOUND');
    expect(missing.body.sync_job).toBeUndefined();
  });
});
