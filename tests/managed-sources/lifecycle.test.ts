import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type RunningApi } from '../../api/server.js';
import { initOrm } from '../../shared/db/orm.js';
import { autoSyncSchedule } from '../../shared/managed-sources/auto-sync-schedule.js';
import { ensureIntervalSchedule, intervalScheduleOptions } from '../../shared/temporal/interval-schedule.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { AUTO_SYNC_INTERVAL_SECONDS } from '../../workflows/managed-source-lifecycle-definitions.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import type { GitRepo, GitServer } from '../helpers/git-server.js';
import { http, type Stack } from '../helpers/stack.js';
import { startWorker } from '../helpers/temporal.js';
import { basicCredentials, startGitStack, type GitStack } from './support.js';

let env: GitStack;
let stack: Stack;
let workerOrm: MikroORM;
let gitServer: GitServer;
let admin: string;
let url: string;
const credentials = basicCredentials();

beforeAll(async () => {
  // The worker gets its own database pool, so stopping the API (restart test) leaves it running.
  env = await startGitStack({ dataDirPrefix: 'msrc-life-', worker: false });
  ({ stack, gitServer, admin } = env);
  workerOrm = await initOrm({ clientUrl: stack.db.url, poolMax: 4 });
  stack.worker = await startWorker({ orm: workerOrm, config: stack.config, log: stack.log });
  url = stack.url;
}, 60_000);
afterAll(async () => {
  await env?.close(); // stops whichever worker runs now
  await workerOrm?.close();
});

const agentYaml = (id: string, name: string) =>
  `schema_version: 1\nagent_id: ${id}\nname: ${name}\ninstructions: You are ${name}.\ndefault_tool_groups: [agent_files]\n`;

async function create(repo: GitRepo, extra: Record<string, unknown> = {}) {
  const res = await http(url, 'POST', '/api/managed-sources', {
    token: admin,
    body: { name: 'life', repo_url: repo.url, scan_types_enabled: ['agents', 'roles'], credentials, ...extra },
  });
  expect(res.status).toBe(201);
  return res.body.source.source_id as string;
}
const getSource = (id: string) => http(url, 'GET', `/api/managed-sources/${id}`, { token: admin });
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('managed-source lifecycles', () => {
  it('deletion: pending while the cleanup fails (syncs refused 500), removed once the cleanup succeeds', async () => {
    const repo = gitServer.repo('doomed');
    repo.write({
      'agents/helper/agent.yaml': agentYaml('helper', 'Doomed Helper'),
      'roles/viewer/role.yaml': 'permissions: [view_git]\n',
    });
    const id = await create(repo, { auto_promote_on_sync: true, sync_now: true });
    const imported = await query<{ n: number }>(
      stack.db.url,
      'select count(*)::int as n from agents where managed_source_id = $1',
      [id],
    );
    expect(imported[0]!.n).toBe(1);

    // The cleanup fails for real: the database refuses deleting the source's agents until the trigger goes.
    await query(
      stack.db.url,
      `create or replace function test_refuse_cleanup() returns trigger language plpgsql as $$
       begin raise exception 'cleanup blocked by the test'; end $$`,
    );
    await query(
      stack.db.url,
      'create trigger test_block_cleanup before delete on agents for each row execute function test_refuse_cleanup()',
    );

    const del = await http(url, 'DELETE', `/api/managed-sources/${id}`, { token: admin });
    expect(del.status).toBe(202);
    expect(del.body.data).toEqual({ source_id: id, deleted: false, status: 'pending_deletion' });
    const pending = await until(
      () => getSource(id),
      (r) => Number(r.body.data.deletion_state?.attempts ?? 0) >= 1,
    );
    expect(pending.body.data.deletion_state).toMatchObject({
      state: 'pending_deletion',
      last_error: expect.any(String),
    });

    for (const res of [
      await http(url, 'POST', `/api/managed-sources/${id}/sync`, { token: admin, body: {} }),
      await http(url, 'POST', `/api/managed-sources/${id}/sync-async`, { token: admin }),
    ]) {
      expect(res.status).toBe(500);
      expect(res.body.error_type).toBe('internal');
      expect(res.body.payload.code).toBe('SOURCE_DELETE_CLEANUP_PENDING');
    }
    const jobs = await query<{ n: number }>(
      stack.db.url,
      'select count(*)::int as n from managed_source_sync_jobs where source_id = $1',
      [id],
    );
    expect(jobs[0]!.n).toBe(1);

    await query(stack.db.url, 'drop trigger test_block_cleanup on agents');
    await until(
      () => getSource(id),
      (r) => r.status === 404,
    );
    const left = await query<{ agents: number; roles: number; jobs: number }>(
      stack.db.url,
      `select (select count(*)::int from agents where managed_source_id = $1) as agents,
              (select count(*)::int from custom_roles where managed_source_id = $1) as roles,
              (select count(*)::int from managed_source_sync_jobs where source_id = $1) as jobs`,
      [id],
    );
    expect(left[0]).toEqual({ agents: 0, roles: 0, jobs: 0 });
    const history = await stack.api.deps.temporal.workflow.getHandle(`source-delete/${id}`).result();
    expect(history).toEqual({ source_id: id, deleted: true, removed_agents: 1, removed_roles: 1 });
    await recordHistory(
      'source-delete-cleanup-retried',
      stack.api.deps.temporal.workflow.getHandle(`source-delete/${id}`),
    );
  });

  it('auto-sync: the schedule is declared every 300 s; its workflow syncs eligible sources and records auto_sync_state', async () => {
    expect(AUTO_SYNC_INTERVAL_SECONDS).toBe(300);
    const options = intervalScheduleOptions(stack.config, autoSyncSchedule('x'));
    expect(options.spec.intervals).toEqual([{ every: '300 seconds' }]);
    const scheduleId = `test-auto-sync-${randomUUID()}`;
    const client = stack.api.deps.temporal;
    expect(await ensureIntervalSchedule(client, stack.config, autoSyncSchedule(scheduleId))).toBe('created');
    expect(await ensureIntervalSchedule(client, stack.config, autoSyncSchedule(scheduleId))).toBe('updated');
    const described = await client.schedule.getHandle(scheduleId).describe();
    expect(described.spec.intervals?.[0]?.every).toBe(300_000);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'managedSourceAutoSyncWorkflow' });
    await client.schedule.getHandle(scheduleId).delete();

    const repoA = gitServer.repo('auto-a');
    const commitA = repoA.write({ 'agents/scout/agent.yaml': agentYaml('scout', 'Auto Scout') });
    const a = await create(repoA, { auto_sync: true });
    const repoB = gitServer.repo('auto-b');
    repoB.write({ 'x.md': 'x' });
    const b = await create(repoB, { auto_sync: true });
    await query(
      stack.db.url,
      `update managed_sources set release_poll = '{"moved_tag": {"tag": "v1", "anchored_commit_sha": "a", "remote_commit_sha": "b"}}' where id = $1`,
      [b],
    );
    const c = await create(gitServer.repo('auto-c'));
    const firstTick = `auto-sync-test-${randomUUID()}`;
    const tick = (workflowId = `auto-sync-test-${randomUUID()}`) =>
      client.workflow.execute(workflowRef('managedSourceAutoSyncWorkflow'), {
        taskQueue: stack.config.temporal.taskQueue,
        workflowId,
        args: [{ tenant: stack.config.auth.deploymentTenant }],
      });

    expect(await tick(firstTick)).toEqual({ checked: 2, synced: 1, skipped: 0, not_eligible: 1 });
    await recordHistory('managed-source-auto-sync', client.workflow.getHandle(firstTick));
    const stateA = (await getSource(a)).body.data.auto_sync_state;
    expect(stateA).toMatchObject({
      running: false,
      eligible: true,
      ineligible_reason: null,
      last_outcome: 'updated_awaiting_promotion',
      commit_sha: commitA,
      waiting: { agent_changes: 1, role_changes: 0, blueprint_versions: 0, document_indexes: 0, flow_changes: 0 },
      failures: { count: 0, by_type: {} },
      degraded: 0,
      error_code: null,
    });
    expect(stateA.checked_at).toEqual(expect.any(String));
    expect((await getSource(b)).body.data.auto_sync_state).toMatchObject({
      eligible: false,
      ineligible_reason: 'moved_tag_unacknowledged',
      last_outcome: 'not_eligible',
    });
    expect((await getSource(c)).body.data.auto_sync_state).toBeNull();

    // auto_promote_on_sync: the next check applies what the sync brought.
    await http(url, 'PATCH', `/api/managed-sources/${a}`, { token: admin, body: { auto_promote_on_sync: true } });
    await tick();
    expect((await getSource(a)).body.data.auto_sync_state).toMatchObject({
      last_outcome: 'updated',
      waiting: { agent_changes: 0 },
    });
    const agents = await query<{ name: string; is_editable: boolean }>(
      stack.db.url,
      'select name, is_editable from agents where managed_source_id = $1',
      [a],
    );
    expect(agents).toEqual([{ name: 'Auto Scout', is_editable: false }]);

    // A sync already running is skipped, never doubled.
    await query(
      stack.db.url,
      `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, requested_by, started_at, updated_at)
       select $2, id, tenant, 'running', 'fetching', 'test', now(), now() from managed_sources where id = $1`,
      [a, randomUUID()],
    );
    expect(await tick()).toMatchObject({ checked: 2, synced: 0, skipped: 1 });
    expect((await getSource(a)).body.data.auto_sync_state.skipped_at).toEqual(expect.any(String));
    await query(stack.db.url, `update managed_source_sync_jobs set status = 'complete' where source_id = $1`, [a]);
  });

  it('keeps 200 terminal sync jobs per source: the oldest terminal ones are pruned, never a running one', async () => {
    const repo = gitServer.repo('bounded-jobs');
    const commit = repo.write({ 'agents/b/agent.yaml': agentYaml('b', 'Bounded Agent') });
    const id = await create(repo);
    const otherRepo = gitServer.repo('bounded-other');
    otherRepo.write({ 'agents/o/agent.yaml': agentYaml('o', 'Other Agent') });
    const other = await create(otherRepo);
    // Creating a source records no sync job of its own: every job row below is one this test made.
    expect(
      await query(stack.db.url, 'select job_id from managed_source_sync_jobs where source_id in ($1, $2)', [id, other]),
    ).toEqual([]);
    // 205 ended jobs of the source (and 3 of another source), the oldest first: job-000 ended longest ago.
    const old = (sourceId: string, prefix: string, n: number) =>
      query(
        stack.db.url,
        `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, requested_by, started_at, updated_at, finished_at)
         select $2 || lpad(i::text, 3, '0'), $1, 'default', case when i % 7 = 0 then 'error' else 'complete' end, 'done', 'root',
                now() - interval '1 day' + i * interval '1 second', now() - interval '1 day' + i * interval '1 second',
                now() - interval '1 day' + i * interval '1 second'
           from generate_series(0, $3::int - 1) as i`,
        [sourceId, prefix, n],
      );
    await old(id, 'job-', 205);
    await old(other, 'other-', 3);
    const jobs = async (sourceId: string) =>
      query<{ job_id: string; status: string }>(
        stack.db.url,
        'select job_id, status from managed_source_sync_jobs where source_id = $1 order by job_id',
        [sourceId],
      );
    const release = gitServer.hold();
    let jobId = '';
    try {
      const started = await http(url, 'POST', `/api/managed-sources/${id}/sync-async`, { token: admin });
      expect(started.status).toBe(202);
      jobId = started.body.data.job_id as string;
      // Starting a job prunes to 200 terminal ones; the running job stays beside them.
      const during = await jobs(id);
      expect(during.filter((j) => j.status === 'running').map((j) => j.job_id)).toEqual([jobId]);
      const ended = during.filter((j) => j.status !== 'running').map((j) => j.job_id);
      expect(ended).toHaveLength(200);
      expect(ended).not.toContain('job-004');
      expect(ended).toContain('job-005');
    } finally {
      release();
    }
    const done = await until(
      () => http(url, 'GET', `/api/managed-sources/${id}/sync-status/${jobId}`, { token: admin }),
      (r) => r.body.data.status !== 'running',
    );
    expect(done.body.data).toMatchObject({ status: 'complete', phase: 'done' });
    expect(done.body.data.result).toMatchObject({ commit_sha: commit });
    // Ending it keeps the newest 200 terminal jobs, itself included: the next oldest went.
    const after = (await jobs(id)).map((j) => j.job_id);
    expect(after).toHaveLength(200);
    expect(after).toContain(jobId);
    expect(after).not.toContain('job-005');
    expect(after).toContain('job-006');
    expect(after).toContain('job-204');
    // Another source's jobs are not touched.
    expect((await jobs(other)).map((j) => j.job_id)).toEqual(['other-000', 'other-001', 'other-002']);
  });

  it('an API restart during a background sync: the job stays readable and finishes', async () => {
    const repo = gitServer.repo('restart');
    const commit = repo.write({ 'agents/r/agent.yaml': agentYaml('r', 'Restart Agent'), 'docs/a.md': '# a' });
    const id = await create(repo);
    const release = gitServer.hold();
    let api: RunningApi | undefined;
    try {
      const started = await http(url, 'POST', `/api/managed-sources/${id}/sync-async`, { token: admin });
      expect(started.status).toBe(202);
      const jobId = started.body.data.job_id as string;
      await stack.api.close();
      const [row] = await query<{ status: string }>(
        stack.db.url,
        'select status from managed_source_sync_jobs where job_id = $1',
        [jobId],
      );
      expect(row!.status).toBe('running');

      api = await startApi(stack.config, stack.log);
      url = api.url;
      const during = await http(url, 'GET', `/api/managed-sources/${id}/sync-status/${jobId}`, { token: admin });
      expect(during.status).toBe(200);
      expect(during.body.data).toMatchObject({ job_id: jobId, status: 'running' });
      release();
      const done = await until(
        () => http(url, 'GET', `/api/managed-sources/${id}/sync-status/${jobId}`, { token: admin }),
        (r) => r.body.data.status !== 'running',
      );
      expect(done.body.data).toMatchObject({ status: 'complete', phase: 'done', error: null });
      expect(done.body.data.result).toMatchObject({ outcome: 'updated_awaiting_promotion', commit_sha: commit });
      expect((await getSource(id)).body.data.synced_commit_sha).toBe(commit);
    } finally {
      release();
      await api?.close();
    }
  });
});
