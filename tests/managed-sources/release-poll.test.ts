import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManagedSourceActivities } from '../../activities/managed-sources.js';
import { isNewerVersion, parseVersion } from '../../shared/managed-sources/release-poll.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { query } from '../helpers/db.js';
import type { GitServer } from '../helpers/git-server.js';
import type { Stack } from '../helpers/stack.js';
import { managedSources, startGitStack, tokenCredentials, type GitStack } from './support.js';

/**
 * Issue 12, release tracking: `release_poll.new_release` from the remote's version tags, `error` when the
 * poll cannot run, `skipped_at`, tracking off for branches, and `upgrade_refusal` for tag upgrades that
 * did not land — against a real Git server on loopback.
 */
let env: GitStack;
let stack: Stack;
let gitServer: GitServer;
const { create, patch, source, waitJob } = managedSources(() => env, {
  name: 'poll repo',
  scan_types_enabled: ['document_indexes'],
  credentials: tokenCredentials(),
});

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'msrc-poll-' });
  ({ stack, gitServer } = env);
}, 60_000);
afterAll(() => env?.close());

const poll = () =>
  createManagedSourceActivities({ orm: stack.api.deps.orm, config: stack.config }).managedReleasePoll({
    tenant: stack.config.auth.deploymentTenant,
  });

const LONG = `long/${'x'.repeat(300)}.txt`;

describe('release tracking (release_poll)', () => {
  it('version tags compare numerically; non-version tags are never releases', () => {
    expect(parseVersion('v1.2.3')).toEqual([1, 2, 3]);
    expect(parseVersion('1.10')).toEqual([1, 10]);
    expect(parseVersion('latest')).toBeNull();
    expect(parseVersion('v2.0.0-rc1')).toBeNull();
    expect(isNewerVersion('v1.10.0', 'v1.9.9')).toBe(true);
    expect(isNewerVersion('1.2', 'v1.2.0')).toBe(false);
    expect(isNewerVersion('latest', 'v1.0.0')).toBe(false);
  });

  it('a newer version tag is new_release with its commit; older and non-version tags are ignored; errors keep it', async () => {
    const repo = gitServer.repo('tags');
    repo.write({ 'docs/a.md': '# a\n' });
    repo.tag('v1.0.0');
    const id = await create(repo, { release_ref: 'v1.0.0', sync_now: true });
    expect((await source(id)).release_poll).toMatchObject({ moved_tag: null, checked_at: expect.any(String) });

    // Nothing newer yet: new_release is null after a poll.
    await poll();
    expect((await source(id)).release_poll).toMatchObject({ new_release: null, error: null });

    repo.write({ 'docs/b.md': '# b\n' });
    repo.tag('v0.9.0');
    const c12 = repo.write({ 'docs/c.md': '# c\n' });
    repo.tag('v1.2.0');
    repo.write({ 'docs/d.md': '# d\n' });
    repo.tag('v1.1.0');
    repo.tag('latest');
    repo.tag('v9.0.0-rc1');
    expect(await poll()).toMatchObject({ polled: 1, failed: 0 });
    const polled = (await source(id)).release_poll;
    expect(polled.new_release).toEqual({ tag: 'v1.2.0', commit_sha: c12 });
    expect(polled.checked_at).toEqual(expect.any(String));
    // The source itself did not move.
    expect((await source(id)).release_ref).toBe('v1.0.0');

    // An unreachable remote: error with a code, the previous new_release kept.
    await query(stack.db.url, `update managed_sources set repo_url = 'http://127.0.0.1:9/nothing.git' where id = $1`, [
      id,
    ]);
    expect(await poll()).toMatchObject({ failed: 1 });
    const failed = (await source(id)).release_poll;
    expect(failed.error).toMatchObject({ code: 'GIT_UNREACHABLE', message: expect.any(String) });
    expect(failed.new_release).toEqual({ tag: 'v1.2.0', commit_sha: c12 });
    expect(failed.checked_at).toBe(polled.checked_at);

    // Credentials the server refuses: error GIT_AUTH_FAILED.
    await query(stack.db.url, `update managed_sources set repo_url = $2 where id = $1`, [id, repo.url]);
    const badCreds = await patch(id, { credentials: { kind: 'token', token: 'wrong', username: 'bot' } });
    expect(badCreds.status).toBe(200);
    await poll();
    expect((await source(id)).release_poll.error).toMatchObject({ code: 'GIT_AUTH_FAILED' });
    expect((await source(id)).release_poll.new_release).toEqual({ tag: 'v1.2.0', commit_sha: c12 });

    // Pending deletion: not polled, skipped_at written.
    await query(
      stack.db.url,
      `update managed_sources set deletion_state = '{"state": "pending_deletion"}'::jsonb where id = $1`,
      [id],
    );
    expect(await poll()).toMatchObject({ skipped: 1 });
    expect((await source(id)).release_poll.skipped_at).toEqual(expect.any(String));
  });

  it('the auto-sync check polls every tag-tracking source (auto_sync off too)', async () => {
    const repo = gitServer.repo('ticked');
    repo.write({ 'docs/a.md': '# a\n' });
    repo.tag('1.0');
    const id = await create(repo, { release_ref: '1.0', sync_now: true });
    const c = repo.write({ 'docs/b.md': '# b\n' });
    repo.tag('1.0.1');
    const summary = await stack.api.deps.temporal.workflow.execute(workflowRef('managedSourceAutoSyncWorkflow'), {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `auto-sync-poll-${id}`,
      args: [{ tenant: stack.config.auth.deploymentTenant }],
    });
    expect(summary).toEqual({ checked: 0, synced: 0, skipped: 0, not_eligible: 0 });
    expect((await source(id)).release_poll.new_release).toEqual({ tag: '1.0.1', commit_sha: c });
  });

  it('a branch release_ref keeps release_poll null (tracking off)', async () => {
    const repo = gitServer.repo('branchy');
    repo.write({ 'docs/a.md': '# a\n' });
    repo.tag('v1.0.0');
    const id = await create(repo, { release_ref: 'main', sync_now: true });
    expect((await source(id)).release_poll).toBeNull();
    repo.tag('v2.0.0');
    await poll();
    expect((await source(id)).release_poll).toBeNull();
  });

  it('an upgrade to a newer tag whose job ends SKILL_RELEASE_* records upgrade_refusal; a good sync clears it and new_release', async () => {
    const repo = gitServer.repo('upgrade');
    repo.write({ 'docs/a.md': '# a\n' });
    repo.tag('v1.0.0');
    const id = await create(repo, { release_ref: 'v1.0.0', sync_now: true });
    const c2 = repo.writeIndexOnly(LONG, 'too long a name for any filesystem');
    repo.tag('v2.0.0');
    await poll();
    expect((await source(id)).release_poll.new_release).toEqual({ tag: 'v2.0.0', commit_sha: c2 });

    // The upgrade cannot be checked out: the background job ends SKILL_RELEASE_STILL_PENDING.
    const bg = await patch(id, { release_ref: 'v2.0.0', sync_now: true, sync_in_background: true });
    expect(bg.status).toBe(200);
    expect(bg.body.sync_job).toMatchObject({ status: 'running', expected_release_commit: c2 });
    const job = await waitJob(id, bg.body.sync_job.job_id);
    expect(job.error.code).toBe('SKILL_RELEASE_STILL_PENDING');
    const refused = (await source(id)).release_poll;
    expect(refused.upgrade_refusal).toEqual({
      tag: 'v2.0.0',
      error_code: 'SKILL_RELEASE_STILL_PENDING',
      message: job.error.message,
      at: expect.any(String),
    });
    expect(refused.new_release).toEqual({ tag: 'v2.0.0', commit_sha: c2 });

    // A later poll keeps the refusal; a good sync of the tag clears it and the new_release it landed.
    await poll();
    expect((await source(id)).release_poll.upgrade_refusal).toMatchObject({ tag: 'v2.0.0' });
    const ok = await patch(id, { checkout_exclude: ['long/'], sync_now: true });
    expect(ok.body.sync).toMatchObject({ outcome: 'updated', commit_sha: c2 });
    const cleared = (await source(id)).release_poll;
    expect(cleared.upgrade_refusal).toBeNull();
    expect(cleared.new_release).toBeNull();
    expect((await source(id)).synced_commit_sha).toBe(c2);
  });
});
