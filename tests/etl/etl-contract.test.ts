/**
 * The ETL tools over POST /api/tool_call, one contract run twice: with built jobs in `etl.jobs_dir`
 * (the worker runs them) and through the remote runner (`etl.runner_url`, `etl-runner/server.ts`).
 * Both answer the same shapes; the jobs are the fixture's (tests/helpers/etl-fixtures.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtlRunner } from '../../etl-runner/server.js';
import { ETL_SANDBOX_USER } from '../../shared/etl/launch.js';
import { etlRunWorkflowId } from '../../workflows/etl-run-definitions.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { ensureSandboxUser, makeEtlFixture, type EtlFixture } from '../helpers/etl-fixtures.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

const RUNNER_TOKEN = 'runner-token-for-tests';
const INTERNAL = 'internal-token-for-tests';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'interrupted'];
/** What a job may see of the server's environment, plus what sh itself sets. */
const ALLOWED_ENV =
  /^(PATH|HOME|LANG|LANGUAGE|LC_[A-Z]+|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|NODE_EXTRA_CA_CERTS|JAVA_HOME|(HTTP|HTTPS|NO|ALL|FTP)_PROXY|(http|https|no|all|ftp)_proxy|PWD|OLDPWD|SHLVL|_)$/;

let fixture: EtlFixture;
beforeAll(() => {
  ensureSandboxUser();
  fixture = makeEtlFixture();
  // Server-side variables a job must not see (credentials), and ones it must (proxy, Java).
  process.env.ETL_TEST_SERVER_SECRET = 'server-only-secret';
  process.env.HTTPS_PROXY = 'http://proxy.fixture:3128';
  process.env.JAVA_HOME = '/opt/fixture-java';
});
afterAll(() => {
  delete process.env.ETL_TEST_SERVER_SECRET;
  delete process.env.HTTPS_PROXY;
  delete process.env.JAVA_HOME;
  fixture?.cleanup();
});

/** Whether a process is gone (or a zombie nobody reaped yet). */
function gone(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return true;
  return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

describe.each(['local', 'remote'] as const)('ETL tools (%s runner)', (mode) => {
  let stack: Stack;
  let runner: Awaited<ReturnType<typeof startEtlRunner>> | undefined;
  const tool = (name: string, args: Record<string, unknown> = {}, token?: string) =>
    http(stack.url, 'POST', '/api/tool_call', { token, body: { tool: name, arguments: args } });

  async function waitRun(runId: string) {
    for (let i = 0; i < 240; i++) {
      const res = await tool('get_etl_run', { run_id: runId });
      expect(res.status, res.text).toBe(200);
      if (TERMINAL.includes(res.body.data.result.status)) return res.body.data.result;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`run ${runId} did not finish`);
  }

  async function run(job: string, args: Record<string, unknown> = {}) {
    const res = await tool('run_etl_job', { job_name: job, ...args });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toMatchObject({ job_name: job, status: 'queued' });
    return await waitRun(res.body.data.result.run_id);
  }

  beforeAll(async () => {
    const env: Record<string, string> = { ETL_PROJECT_PATH: fixture.projectPath, PLATFORM_INTERNAL_TOKEN: INTERNAL };
    if (mode === 'remote') {
      runner = await startEtlRunner({ token: RUNNER_TOKEN, jobsDir: fixture.jobsDir, maxTimeoutSeconds: 900 });
      Object.assign(env, { ETL_RUNNER_URL: runner.url, ETL_RUNNER_TOKEN: RUNNER_TOKEN });
    } else {
      env.ETL_JOBS_DIR = fixture.jobsDir;
    }
    stack = await startStack({ env });
    const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
      body: { content: 'etl:\n  run_timeout_seconds: 3\n' },
    });
    expect(applied.status, applied.text).toBe(200);
  });
  afterAll(async () => {
    await stack?.close();
    await runner?.close();
  });

  it('lists the project jobs and the built jobs', async () => {
    const res = await tool('list_etl_jobs');
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toEqual({
      project_jobs: [
        {
          name: 'LoadCustomers',
          version: '0.1',
          folder: 'Customers',
          path: 'process/Customers/LoadCustomers_0.1.item',
        },
        {
          name: 'LoadCustomers',
          version: '0.2',
          folder: 'Customers',
          path: 'process/Customers/LoadCustomers_0.2.item',
        },
        { name: 'ExportReport', version: '0.1', folder: '', path: 'process/ExportReport_0.1.item' },
      ],
      built_jobs: [
        { name: 'Chatty', version: '0.1', launcher: 'Chatty/Chatty_run.sh' },
        { name: 'ExportReport', version: '0.1', launcher: 'ExportReport_0.1/ExportReport/ExportReport_run.sh' },
        { name: 'Hang', version: '0.1', launcher: 'Hang/Hang_run.sh' },
        { name: 'LoadCustomers', version: '0.1', launcher: 'LoadCustomers/LoadCustomers_run.sh' },
      ],
    });
  });

  it('describes a job from its .item file: components, where each reads or writes, connections, contexts', async () => {
    const res = await tool('describe_etl_job', { job_name: 'LoadCustomers' });
    expect(res.status, res.text).toBe(200);
    const d = res.body.data.result;
    expect(d).toMatchObject({
      name: 'LoadCustomers',
      version: '0.2',
      path: 'process/Customers/LoadCustomers_0.2.item',
      purpose: 'Purpose of LoadCustomers',
      reads: ['context.input_dir + "/customers.csv"'],
      writes: ['context.db_host/crm.customers'],
      writes_to_customer_systems: true,
    });
    expect(
      d.components.map((c: { name: string; component: string; role: string }) => [c.name, c.component, c.role]),
    ).toEqual([
      ['tFileInputDelimited_1', 'tFileInputDelimited', 'input'],
      ['tMap_1', 'tMap', 'transform'],
      ['tPostgresqlOutput_1', 'tPostgresqlOutput', 'output'],
      ['tLogRow_1', 'tLogRow', 'other'],
    ]);
    expect(d.components[0].context_refs).toEqual(['input_dir']);
    expect(d.components[2]).toMatchObject({
      settings: { HOST: 'context.db_host', DBNAME: 'crm', TABLE: 'customers' },
      context_refs: ['db_host'],
    });
    expect(d.connections).toEqual([
      { source: 'tFileInputDelimited_1', target: 'tMap_1', kind: 'FLOW', label: 'row1' },
      { source: 'tMap_1', target: 'tPostgresqlOutput_1', kind: 'FLOW', label: 'out1' },
      { source: 'tPostgresqlOutput_1', target: 'tLogRow_1', kind: 'REJECT', label: 'rejects' },
    ]);
    expect(d.contexts.map((c: { name: string }) => c.name)).toEqual(['Default', 'Production']);
    expect(d.contexts[0].parameters).toContainEqual({
      name: 'db_password',
      type: 'id_Password',
      value: '********',
      prompt: null,
    });
    expect(res.text).not.toContain('c2VjcmV0');

    const older = await tool('describe_etl_job', { job_name: 'LoadCustomers', version: '0.1' });
    expect(older.body.data.result.components).toHaveLength(2);
    const report = await tool('describe_etl_job', { job_name: 'ExportReport' });
    expect(report.body.data.result).toMatchObject({
      writes: ['context.out_dir + "/report.xlsx"'],
      writes_to_customer_systems: false,
    });
  });

  it('runs a job that succeeds, with context parameters as arguments and only the allowed environment', async () => {
    const before = Number((await query(stack.db.url, 'select count(*)::int as n from etl_runs'))[0]!.n);
    const done = await run('ExportReport', {
      context: 'Default',
      context_params: { out_dir: '/tmp/out dir', db_password: 'pa$$ word;rm -rf' },
    });
    expect(done).toMatchObject({
      status: 'succeeded',
      exit_code: 0,
      error: null,
      context: 'Default',
      context_params: ['out_dir', 'db_password'],
      timeout_seconds: 3,
    });
    const text: string = done.output.text;
    // argv passed as is, no shell: spaces and shell characters arrive intact.
    expect(text).toContain('arg:--context=Default\narg:--context_param\narg:out_dir=/tmp/out dir\n');
    expect(text).toContain('arg:db_password=pa$$ word;rm -rf');
    expect(text).toContain('ExportReport done');
    const envNames = [...text.matchAll(/^env:([^=]+)=/gm)].map((m) => m[1]!);
    expect(envNames).toContain('PATH');
    expect(envNames).toContain('JAVA_HOME');
    expect(envNames).toContain('HTTPS_PROXY');
    expect(envNames.filter((n) => !ALLOWED_ENV.test(n))).toEqual([]);
    expect(text).not.toContain('server-only-secret');
    expect(text).not.toContain('DATABASE_URL');
    if (process.getuid?.() === 0) expect(text).toContain(`user=${ETL_SANDBOX_USER}\n`);

    // Stored in PostgreSQL; the context values sealed, never in clear.
    const rows = await query<Record<string, unknown>>(stack.db.url, 'select * from etl_runs where run_id = $1', [
      done.run_id,
    ]);
    expect(rows[0]).toMatchObject({ status: 'succeeded', runner: mode, job_name: 'ExportReport' });
    expect(String(rows[0]!.context_sealed)).toMatch(/^v[12]\./);
    // (The job itself echoed its arguments, so only the output holds them.)
    const { output: _echoed, ...record } = rows[0]!;
    expect(record.context_keys).toEqual(['out_dir', 'db_password']);
    expect(JSON.stringify(record)).not.toContain('rm -rf');
    expect(Number((await query(stack.db.url, 'select count(*)::int as n from etl_runs'))[0]!.n)).toBe(before + 1);
  });

  it('runs a job that fails: status failed, exit code and its error output kept', async () => {
    const done = await run('LoadCustomers');
    expect(done).toMatchObject({ status: 'failed', exit_code: 3, error: 'The job exited with code 3.' });
    expect(done.output.text).toContain('ERROR: could not connect to the database');
    if (mode === 'local') {
      const handle = stack.api.deps.temporal.workflow.getHandle(etlRunWorkflowId(done.run_id));
      await handle.result();
      await recordHistory('etl-run-failed', handle);
    }
  });

  it('caps a job that writes a lot of output, keeping head and tail, and pages it', async () => {
    const done = await run('Chatty');
    expect(done.status).toBe('succeeded');
    expect(done.output.truncated).toBe(true);
    expect(done.output.bytes_seen).toBeGreaterThan(2_500_000);
    expect(done.output.total_chars).toBeLessThan(1_100_000);
    expect(done.output.text).toHaveLength(16_000);
    expect(done.output.next_offset).toBe(16_000);
    const page = await tool('get_etl_run', { run_id: done.run_id, offset: 760_000, limit: 64_000 });
    expect(page.body.data.result.output).toMatchObject({ offset: 760_000, next_offset: 824_000 });
    expect(page.body.data.result.output.text).toMatch(/bytes of output omitted/);
    const last = await tool('get_etl_run', {
      run_id: done.run_id,
      offset: done.output.total_chars - 200,
      limit: 64_000,
    });
    expect(last.body.data.result.output.next_offset).toBeNull();
    expect(last.body.data.result.output.text).toMatch(/line 39999 of a chatty job[^\n]*\nchatty end\n$/);
    const tooBig = await tool('get_etl_run', { run_id: done.run_id, limit: 64_001 });
    expect(tooBig.status).toBe(400);
  });

  it('kills a job that hangs past the timeout, its whole process group, and marks it timed out', async () => {
    const done = await run('Hang');
    expect(done).toMatchObject({ status: 'timed_out', exit_code: null });
    expect(done.error).toContain('etl.run_timeout_seconds (3 s)');
    const pid = Number(/grandchild=(\d+)/.exec(done.output.text)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(gone(pid)).toBe(true);
  });

  it('refuses unknown jobs, bad names, and unknown runs, writing nothing', async () => {
    const count = async () => Number((await query(stack.db.url, 'select count(*)::int as n from etl_runs'))[0]!.n);
    const before = await count();
    const unknown = await tool('run_etl_job', { job_name: 'NoSuchJob' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.payload.reason).toBe('etl_built_job_not_found');
    const bad = await tool('run_etl_job', { job_name: '../Hang' });
    expect(bad.status).toBe(400);
    expect(bad.body.payload.fields[0].field).toBe('body.arguments.job_name');
    const extra = await tool('run_etl_job', { job_name: 'Hang', shell: 'sh -c' });
    expect(extra.status).toBe(400);
    // A project job that was never built cannot be run.
    const describeOnly = await tool('describe_etl_job', { job_name: 'Chatty' });
    expect(describeOnly.status).toBe(404);
    expect(describeOnly.body.payload.reason).toBe('etl_job_not_found');
    const noRun = await tool('get_etl_run', { run_id: 'etl_000000000000000000000000' });
    expect(noRun.status).toBe(404);
    expect(await count()).toBe(before);
  });

  it('lets an agent run a job that writes no customer system, and sends one that does to Action Review', async () => {
    const minted = await http(stack.url, 'POST', '/api/internal/sandbox-tokens', {
      headers: { 'x-platform-internal-token': INTERNAL },
      body: { bot_id: 'adam', thread_id: `thread-etl-${mode}`, ttl_seconds: 300 },
    });
    expect(minted.status, minted.text).toBe(201);
    const gsk = minted.body.data.token as string;
    const writes = await tool('run_etl_job', { job_name: 'LoadCustomers' }, gsk);
    expect(writes.status).toBe(403);
    expect(writes.body.payload).toMatchObject({
      reason: 'action_review_required',
      job_name: 'LoadCustomers',
      writes: ['context.db_host/crm.customers'],
    });
    // Built but not in the project: it cannot be classified, so it is governed too.
    const unclassified = await tool('run_etl_job', { job_name: 'Hang' }, gsk);
    expect(unclassified.status).toBe(403);
    const ok = await tool('run_etl_job', { job_name: 'ExportReport' }, gsk);
    expect(ok.status, ok.text).toBe(200);
    expect((await waitRun(ok.body.data.result.run_id)).status).toBe('succeeded');
    const listed = await tool('list_etl_jobs', {}, gsk);
    expect(listed.status).toBe(200);
  });

  if (mode === 'remote') {
    it('the runner refuses a missing or wrong token (health stays open), and the tools say the runner refused', async () => {
      expect((await http(runner!.url, 'GET', '/healthz')).status).toBe(200);
      for (const [method, path] of [
        ['GET', '/jobs'],
        ['POST', '/run'],
        ['GET', '/run/run_0'],
      ] as const) {
        const none = await http(runner!.url, method, path, {
          body: method === 'POST' ? { job_name: 'Hang' } : undefined,
        });
        expect(none.status).toBe(401);
        const wrong = await http(runner!.url, method, path, { token: 'not-the-token' });
        expect(wrong.status).toBe(401);
      }
      const jobs = await http(runner!.url, 'GET', '/jobs', { token: RUNNER_TOKEN });
      expect(jobs.status).toBe(200);
      expect(jobs.body.jobs).toHaveLength(4);

      await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
        body: { content: 'etl:\n  runner_token: wrong-token\n' },
      });
      const refused = await tool('list_etl_jobs');
      expect(refused.status).toBe(503);
      expect(refused.body.payload.dependency).toBe('etl_runner');
      expect(refused.text).not.toContain('wrong-token');
      await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
        body: { content: `etl:\n  runner_token: ${RUNNER_TOKEN}\n` },
      });
      expect((await tool('list_etl_jobs')).status).toBe(200);
    });
  }
});
