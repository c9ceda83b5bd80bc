/**
 * The API in a process of its own (`node --import tsx api/server.ts`, as `npm run api` runs it), so a
 * test can run several replicas side by side on one database and one Temporal, and kill one for real.
 * It listens on a port the system picks (`PORT=0`: no port chosen here that another process could take before
 * it binds); `ready` resolves once it logs `api listening` with its URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopChild } from './worker-process.js';

const projectRoot = fileURLToPath(new URL('../../', import.meta.url));
const serverPath = fileURLToPath(new URL('../../api/server.ts', import.meta.url));

export interface ApiProcess {
  child: ChildProcess;
  /** Its base URL, known once `ready` resolved (read before, it throws). */
  readonly url: string;
  /** Resolves once the API answers; rejects if the process ends first or `readyTimeoutMs` passes. */
  ready: Promise<void>;
  /** What the process wrote (both streams, the last 50,000 characters), for failure messages. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL. */
  kill(): Promise<void>;
}

export async function spawnApiProcess(env: Record<string, string>, readyTimeoutMs = 90_000): Promise<ApiProcess> {
  let url: string | undefined;
  const child = spawn(process.execPath, ['--import', 'tsx', serverPath], {
    cwd: projectRoot,
    env: {
      ...process.env,
      LOG_LEVEL: 'info',
      PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
      CRM_ALLOW_INSECURE_LOOPBACK: 'true',
      ...env,
      PORT: '0',
      HOST: '127.0.0.1',
    },
    // An IPC channel only so that the API stops when its parent (the test run) is gone.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-50_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  // Ready: the server logs `api listening` once it listens (LOG_LEVEL info at least).
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`API process ${child.pid} not ready after ${readyTimeoutMs} ms\n${out}`)),
      readyTimeoutMs,
    );
    const onData = () => {
      const line = out.split('\n').find((l) => l.includes('"msg":"api listening"') && l.endsWith('}'));
      if (!line) return;
      url = (JSON.parse(line) as { url: string }).url;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve();
    };
    child.stdout!.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`API process ${child.pid} ended before it was ready\n${out}`));
    });
  });
  ready.catch(() => undefined);
  return {
    child,
    get url() {
      if (!url) throw new Error(`API process ${child.pid} is not ready: its URL is not known yet`);
      return url;
    },
    ready,
    output: () => out,
    stop: (graceMs = 10_000) => stopChild(child, exited, graceMs),
    async kill() {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}
