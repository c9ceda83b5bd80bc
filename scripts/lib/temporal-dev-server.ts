import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { portOpen } from './net.js';
import { dynamicConfigFlags, searchAttributeFlags } from './temporal-config.js';

export interface DevServerOptions {
  cliPath: string;
  ip?: string;
  port: number;
  /** Web UI port; `null` runs headless. */
  uiPort: number | null;
  /** SQLite file to persist to; in memory when unset. */
  dbFilename?: string;
  namespaces?: string[];
  /** Server output goes here (it is chatty); discarded when unset. */
  logFile?: string;
  readyTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  /** Resolves, once the server process has ended, with how (`SIGKILL`, `code 1`). */
  exited: Promise<string>;
  /** Whether the server process is still running. */
  readonly running: boolean;
  /** The server's last output (up to `OUTPUT_TAIL` characters) when it goes to no log file; else ''. */
  recentOutput(): string;
  stop(): Promise<void>;
}

/** Characters of the server's output kept in memory when it is not written to a log file. */
const OUTPUT_TAIL = 8_192;

/** Waits until a Temporal frontend answers GetSystemInfo. */
export async function waitForTemporal(
  address: string,
  timeoutMs: number,
  isDead: () => boolean = () => false,
): Promise<void> {
  const [host, port] = [
    address.slice(0, address.lastIndexOf(':')),
    Number(address.slice(address.lastIndexOf(':') + 1)),
  ];
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (isDead()) throw new Error('the Temporal dev server exited during start-up');
    if (await portOpen(host, port)) {
      try {
        const connection = await Connection.connect({ address, connectTimeout: 2_000 });
        try {
          await connection.workflowService.getSystemInfo({});
          return;
        } finally {
          await connection.close();
        }
      } catch (err) {
        lastError = err;
      }
    }
    await sleep(250);
  }
  throw new Error(
    `Temporal at ${address} did not become ready within ${timeoutMs} ms: ${String(lastError ?? 'port closed')}`,
  );
}

/**
 * Starts `temporal server start-dev` with the project's search attributes and dynamic config,
 * and resolves once its frontend answers. Started from our own code because the SDK gives a
 * server it launches only 5 seconds, too little on a busy 2-core machine.
 */
export async function startTemporalDevServer(options: DevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(options.port), '--log-level', 'warn'];
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort), '--ui-ip', ip);
  if (options.dbFilename) {
    await mkdir(path.dirname(options.dbFilename), { recursive: true });
    args.push('--db-filename', options.dbFilename);
  }
  for (const ns of options.namespaces ?? []) args.push('--namespace', ns);
  args.push(...(await searchAttributeFlags()), ...(await dynamicConfigFlags()));

  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  if (options.logFile) {
    await mkdir(path.dirname(options.logFile), { recursive: true });
    const out = createWriteStream(options.logFile, { flags: 'a' });
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
  } else {
    // Kept, not written anywhere: the reason for an exit the caller did not ask for.
    const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }
  let exited = false;
  const exitedPromise = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => ((exited = true), resolve(signal ?? `code ${code}`))),
  );
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const address = `${ip}:${options.port}`;
  try {
    await waitForTemporal(address, options.readyTimeoutMs ?? 90_000, () => exited);
  } catch (err) {
    child.kill('SIGKILL');
    // Its output is read until its pipes close, which may come after its exit: a second at most.
    await Promise.race([closed, sleep(1_000)]);
    if (tail && err instanceof Error) err.message += `; its last output:\n${tail}`;
    throw err;
  }
  return {
    address,
    uiUrl: options.uiPort === null ? undefined : `http://${ip === '0.0.0.0' ? '127.0.0.1' : ip}:${options.uiPort}`,
    process: child,
    exited: exitedPromise,
    get running() {
      return !exited;
    },
    recentOutput: () => tail,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exitedPromise;
      clearTimeout(timer);
    },
  };
}
