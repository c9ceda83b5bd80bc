/**
 * Git hosts are administrator-saved endpoints (shared/http/trust.ts): on the default deployment
 * (neither PLATFORM_EGRESS_ALLOW_PRIVATE nor CRM_ALLOW_INSECURE_LOOPBACK) a loopback, private or
 * metadata Git host is refused when saved, naming the flag that would allow it; with the flag the
 * same loopback repository syncs; a host the policy stops allowing later is refused at sync too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitRepo } from '../helpers/git-server.js';
import { http } from '../helpers/stack.js';
import { startGitStack, tokenCredentials, type GitStack } from './support.js';

/** The deployment defaults, over the shared stacks' allowance for their loopback fakes. */
const DEFAULT_EGRESS = { PLATFORM_EGRESS_ALLOW_PRIVATE: 'false', CRM_ALLOW_INSECURE_LOOPBACK: 'false' };

const body = (repoUrl: string, extra: Record<string, unknown> = {}) => ({
  name: 'team repo',
  repo_url: repoUrl,
  scan_types_enabled: ['skills'],
  credentials: tokenCredentials(),
  ...extra,
});

describe('Git hosts on the default deployment', () => {
  let env: GitStack;
  let repo: GitRepo;
  const call = (method: string, path: string, payload?: unknown) =>
    http(env.stack.url, method, path, { token: env.admin, ...(payload === undefined ? {} : { body: payload }) });
  const sources = async () => (await call('GET', '/api/managed-sources')).body.data.sources as unknown[];

  beforeAll(async () => {
    env = await startGitStack({ dataDirPrefix: 'ms-egress-', env: DEFAULT_EGRESS });
    repo = env.gitServer.repo('loopback');
    repo.write({ 'skills/s/SKILL.md': '# s\n' });
  }, 60_000);
  afterAll(() => env?.close());

  it('refuses a loopback Git host at save with GIT_EGRESS_REFUSED naming PLATFORM_EGRESS_ALLOW_PRIVATE; nothing saved', async () => {
    const port = new URL(repo.url).port;
    for (const url of [repo.url, repo.url.replace('127.0.0.1', 'localhost'), `http://10.0.0.7:${port}/team/r.git`]) {
      const res = await call('POST', '/api/managed-sources', body(url, { sync_now: true }));
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({
        error_type: 'bad_request',
        request_id: expect.any(String),
        payload: {
          code: 'GIT_EGRESS_REFUSED',
          host: new URL(url).host,
          allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
          fields: [{ field: 'body.repo_url' }],
        },
      });
      expect(res.body.error).toMatch(/is (loopback|private); allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set/);
      expect(res.body.error).not.toMatch(/CRM_ALLOW_INSECURE_LOOPBACK/);
    }
    expect(await sources()).toEqual([]);
  });

  it('refuses a cloud-metadata Git host with no flag that would allow it', async () => {
    const res = await call('POST', '/api/managed-sources', body('http://169.254.169.254/team/r.git'));
    expect(res.status).toBe(400);
    expect(res.body.payload).toMatchObject({ code: 'GIT_EGRESS_REFUSED', allowed_by: null });
    expect(res.body.error).toMatch(/never allowed/);
    expect(await sources()).toEqual([]);
  });

  it('refuses a PATCH moving a source to a loopback host and keeps the saved URL', async () => {
    // A name is not resolved at save (its DNS answer may change): it is checked at each sync.
    const created = await call('POST', '/api/managed-sources', body('https://git.example.com/team/repo.git'));
    expect(created.status, created.text).toBe(201);
    const id = created.body.source.source_id as string;
    const res = await call('PATCH', `/api/managed-sources/${id}`, { repo_url: repo.url });
    expect(res.status).toBe(400);
    expect(res.body.payload).toMatchObject({ code: 'GIT_EGRESS_REFUSED', host: new URL(repo.url).host });
    expect((await call('GET', `/api/managed-sources/${id}`)).body.data.repo_url).toBe(
      'https://git.example.com/team/repo.git',
    );
    expect((await call('DELETE', `/api/managed-sources/${id}`)).status).toBeLessThan(300);
  });
});

describe('Git hosts with PLATFORM_EGRESS_ALLOW_PRIVATE', () => {
  let env: GitStack;
  beforeAll(async () => {
    env = await startGitStack({
      dataDirPrefix: 'ms-egress-open-',
      env: { ...DEFAULT_EGRESS, PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' },
    });
  }, 60_000);
  afterAll(() => env?.close());

  it('saves and syncs a loopback Git host; once the policy refuses it, the sync fails GIT_EGRESS_REFUSED', async () => {
    const repo = env.gitServer.repo('allowed');
    repo.write({ 'skills/s/SKILL.md': '# s\n' });
    const created = await http(env.stack.url, 'POST', '/api/managed-sources', {
      token: env.admin,
      body: body(repo.url, { sync_now: true }),
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.sync).toMatchObject({ outcome: 'updated', commit_sha: repo.head() });
    const id = created.body.source.source_id as string;

    // The deployment restarted without the flag (API and worker share this configuration object):
    // the saved host is checked again at use.
    env.stack.config.egress.allowPrivate = false;
    try {
      const res = await http(env.stack.url, 'POST', `/api/managed-sources/${id}/sync`, { token: env.admin, body: {} });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ outcome: 'failed', error_code: 'GIT_EGRESS_REFUSED' });
      expect(res.body.data.error).toMatch(
        /^Outbound requests to 127\.0\.0\.1:\d+ are refused: address 127\.0\.0\.1 is loopback; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set\.$/,
      );
    } finally {
      env.stack.config.egress.allowPrivate = true;
    }
  });
});
