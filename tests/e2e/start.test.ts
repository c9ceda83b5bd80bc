/**
 * `npm start` as a newcomer runs it: the Temporal dev server with its UI, embedded PostgreSQL,
 * migrations, worker and API come up, and the banner (console, MCP endpoint) appears only once the
 * worker polls; a worker, API, PostgreSQL or Temporal dev server that dies
 * (SIGKILL) is restarted and the system keeps answering; a signal to the start process stops every
 * process it started (no orphans).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, stat as fileStat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { portOutsideEphemeralRange } from '../helpers/ports.js';
import { http } from '../helpers/stack.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Every live descendant of `pid` (walks /proc). */
async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // exited while we looked
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parents) {
      if (parent !== p) continue;
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/** Running (a zombie has exited: it only waits to be reaped by whoever inherited it). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

let child: ChildProcess | undefined;
let dataDir: string | undefined;
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** The one live descendant of `pid` whose command line (arguments joined by spaces) contains `script`. */
async function childRunning(pid: number, script: string): Promise<number | undefined> {
  const found: number[] = [];
  for (const p of await descendants(pid)) {
    try {
      if (alive(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(script)) found.push(p);
    } catch {
      // exited while we looked
    }
  }
  return found.length === 1 ? found[0] : undefined;
}

/** Polls `check` (bounded by `tries` × 250 ms), answering its first truthy value. */
async function until<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  tries = 240,
): Promise<T | undefined> {
  for (let i = 0; i < tries; i++) {
    const value = await check();
    if (value) return value;
    await sleep(250);
  }
  return undefined;
}

describe('npm start', () => {
  it(
    'brings the whole system up, restarts a killed worker, API, PostgreSQL or Temporal, and a signal stops everything it started',
    { timeout: 400_000 },
    async () => {
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'platform-start-'));
      await chmod(dataDir, 0o755);
      const [port, temporalPort, uiPort, pgPort] = [
        await portOutsideEphemeralRange(),
        await portOutsideEphemeralRange(),
        await portOutsideEphemeralRange(),
        await portOutsideEphemeralRange(),
      ];
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PLATFORM_DATA_DIR: dataDir,
        PORT: String(port),
        TEMPORAL_DEV_PORT: String(temporalPort),
        TEMPORAL_UI_PORT: String(uiPort),
        EMBEDDED_PG_PORT: String(pgPort),
        TEMPORAL_CLI_PATH: inject('temporalCliPath'),
        AUTH_PROVIDER: 'none',
        LOG_LEVEL: 'warn',
      };
      for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE']) delete env[name];
      let output = '';
      child = spawnStart(env, (d) => (output += d));

      for (let i = 0; i < 240 && !output.includes('Ctrl-C stops everything'); i++) {
        if (child.exitCode !== null) break;
        await sleep(500);
      }
      expect(output).toContain('Ctrl-C stops everything');
      expect(output).toContain(`API            http://127.0.0.1:${port}`);
      expect(output).toContain(`/openapi.json`);
      expect(output).toContain(`Review console http://127.0.0.1:${port}/console`);
      expect(output).toContain(`MCP endpoint   http://127.0.0.1:${port}/mcp/`);
      expect(output).toContain('Worker         polling task queue platform');
      expect(output).toContain(`Temporal UI    http://127.0.0.1:${uiPort}`);
      expect(output).toContain('authentication is OFF');

      // What the banner lists works once it is printed: the console and the MCP endpoint answer, and a
      // workflow-backed request completes at the first try (the worker already polls; no 202).
      const base = `http://127.0.0.1:${port}`;
      expect((await http(base, 'GET', '/readyz')).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${uiPort}/`)).status).toBe(200);
      expect((await fetch(`${base}/console`, { redirect: 'manual' })).status).toBeLessThan(400);
      const mcp = await http(base, 'POST', '/mcp/', {
        headers: { accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      });
      expect(mcp.status, mcp.text).toBe(200);
      expect(mcp.text).toContain('"platform"');
      const echo = await http(base, 'POST', '/api/jobs/echo', {
        body: { message: 'from npm start', job_id: 'start-e2e' },
      });
      expect(echo.status, echo.text).toBe(200);
      expect(echo.body.data.message).toBe('from npm start');

      // The worker dies on the spot: it is restarted, says so, and the next echo job completes on it.
      const worker = await childRunning(child.pid!, 'worker/index.ts');
      expect(worker).toBeDefined();
      const killedAt = Date.now();
      process.kill(worker!, 'SIGKILL');
      expect(await until(() => output.includes('[start] worker restarted'))).toBe(true);
      expect(output).toContain('[start] worker exited (SIGKILL); restarting in 0.5 s (restart 1)');
      const restartedWorker = await childRunning(child.pid!, 'worker/index.ts');
      expect(restartedWorker).toBeDefined();
      expect(restartedWorker).not.toBe(worker);
      const afterRestart = await until(async () => {
        const res = await http(base, 'POST', '/api/jobs/echo', {
          body: { message: 'after a worker crash', job_id: 'start-e2e-after-kill' },
        });
        return res.status === 202 ? undefined : res; // 202 after 20 s: still running, ask again (same job id)
      }, 6);
      expect(afterRestart?.status, afterRestart?.text).toBe(200);
      expect(afterRestart!.body.data?.message, afterRestart!.text).toBe('after a worker crash');
      // The restarted worker ran the bundle its predecessor wrote at this start (one file, written
      // before the kill) instead of bundling again.
      const bundles = (await readdir(path.join(dataDir, 'run'))).filter((f) => f.startsWith('workflow-bundle-'));
      expect(bundles).toEqual([`workflow-bundle-${child.pid}.js`]);
      expect((await fileStat(path.join(dataDir, 'run', bundles[0]!))).mtimeMs).toBeLessThan(killedAt);

      // The API dies: it is restarted and answers /readyz again.
      const api = await childRunning(child.pid!, 'api/server.ts');
      expect(api).toBeDefined();
      process.kill(api!, 'SIGKILL');
      expect(await until(() => output.includes('[start] API restarted'))).toBe(true);
      expect(output).toContain('[start] API exited (SIGKILL); restarting in 0.5 s (restart 1)');
      const ready = await until(async () => {
        const res = await http(base, 'GET', '/readyz').catch(() => undefined); // connection refused until it listens
        return res?.status === 200 ? res : undefined;
      });
      expect(ready?.status).toBe(200);

      // PostgreSQL and then the Temporal dev server die: each is started again on the same port and
      // data, and an echo job (a workflow writing a row) completes after each.
      const echoAfter = async (jobId: string) =>
        until(async () => {
          const res = await http(base, 'POST', '/api/jobs/echo', { body: { message: jobId, job_id: jobId } }).catch(
            () => undefined,
          );
          return res && res.status !== 202 && res.status !== 503 ? res : undefined; // 503 while a dependency is still down
        }, 20);
      for (const [name, marker] of [
        ['PostgreSQL', ' -D '],
        ['Temporal dev server', 'start-dev'],
      ] as const) {
        const pid = await childRunning(child.pid!, marker);
        expect(pid, name).toBeDefined();
        process.kill(pid!, 'SIGKILL');
        expect(await until(() => output.includes(`[start] ${name} restarted`)), output).toBe(true);
        expect(output).toContain(`[start] ${name} exited (SIGKILL); restarting in 0.5 s (restart 1)`);
        const jobId = `after-${name.split(' ')[0]!.toLowerCase()}-kill`;
        const res = await echoAfter(jobId);
        expect(res?.status, res?.text).toBe(200);
        expect(res!.body.data?.message, res!.text).toBe(jobId);
      }
      expect(child.exitCode).toBeNull(); // the start process kept running throughout

      const started = await descendants(child.pid!);
      // Temporal CLI, PostgreSQL (with its helpers), the worker and the API.
      expect(started.length).toBeGreaterThanOrEqual(4);

      const beforeStop = output.length;
      child.kill('SIGINT');
      for (let i = 0; i < 120 && child.exitCode === null && child.signalCode === null; i++) await sleep(250);
      // A clean stop exits 0 (and not through a library's exit hook deciding for us).
      expect({ code: child.exitCode, signal: child.signalCode }).toEqual({ code: 0, signal: null });
      for (let i = 0; i < 40 && started.some(alive); i++) await sleep(250);
      const survivors = started
        .filter(alive)
        .map((pid) => `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`);
      expect(survivors).toEqual([]);
      expect(output).toContain('[start] stopped');
      // Stopping is not crashing: nothing was restarted on the way down.
      expect(output.slice(beforeStop)).not.toMatch(/restart/);
    },
  );

  it('exits non-zero when the start fails, and says why', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const busyPort = (busy.address() as net.AddressInfo).port;
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        TEMPORAL_DEV_PORT: String(busyPort),
        TEMPORAL_CLI_PATH: inject('temporalCliPath'),
        PORT: String(await portOutsideEphemeralRange()),
      };
      for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS']) delete env[name];
      const failing = await startToExit(env);
      expect(failing.code).toBe(1);
      expect(failing.output).toContain(`port ${busyPort} is in use`);
      // The API's port taken: refused before anything starts.
      const apiBusy = await startToExit({
        ...env,
        TEMPORAL_DEV_PORT: String(await portOutsideEphemeralRange()),
        PORT: String(busyPort),
      });
      expect(apiBusy.code).toBe(1);
      expect(apiBusy.output).toContain(`port ${busyPort} is in use; stop what listens there, or set PORT`);
      expect(apiBusy.output).not.toContain('starting Temporal dev server');
    } finally {
      busy.close();
    }
  });
});

/** Starts `npm start`'s script with `env`, handing everything it prints to `onOutput`. */
function spawnStart(env: NodeJS.ProcessEnv, onOutput: (chunk: string) => void): ChildProcess {
  const run = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/start.ts')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  run.stdout!.on('data', (d) => onOutput(String(d)));
  run.stderr!.on('data', (d) => onOutput(String(d)));
  return run;
}

/** Runs `npm start`'s script until it exits: its exit code and everything it printed. */
async function startToExit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  let output = '';
  const run = spawnStart(env, (d) => (output += d));
  const [code] = (await once(run, 'exit')) as [number | null];
  return { code, output };
}
