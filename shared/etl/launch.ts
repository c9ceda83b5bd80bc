import { spawn } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';

/** Bytes of output kept per run: the first `HEAD` and the last `TAIL` (a failing job's error is at its end). */
export const ETL_OUTPUT_HEAD_BYTES = 768 * 1024;
export const ETL_OUTPUT_TAIL_BYTES = 256 * 1024;
/** Seconds between SIGTERM to the job's process group and SIGKILL. */
const KILL_GRACE_MS = 5_000;

/** The account jobs run as when the server runs as root (container deployments). */
export const ETL_SANDBOX_USER = 'platform-etl';

export type LaunchStatus = 'succeeded' | 'failed' | 'timed_out' | 'interrupted';

/** Keeps the head and the tail of a job's combined output under a fixed size, counting every byte. */
export class OutputCapture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  bytesSeen = 0;

  push(chunk: Buffer): void {
    this.bytesSeen += chunk.length;
    if (this.headBytes < ETL_OUTPUT_HEAD_BYTES) {
      const take = chunk.subarray(0, ETL_OUTPUT_HEAD_BYTES - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (!chunk.length) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tailBytes - this.tail[0]!.length >= ETL_OUTPUT_TAIL_BYTES) this.tailBytes -= this.tail.shift()!.length;
  }

  get truncated(): boolean {
    return this.bytesSeen > ETL_OUTPUT_HEAD_BYTES + ETL_OUTPUT_TAIL_BYTES;
  }

  /** The kept output as text; when bytes were dropped a marker line says how many. */
  text(): string {
    const head = new StringDecoder('utf8').end(Buffer.concat(this.head));
    let tail = Buffer.concat(this.tail);
    if (!this.truncated) return head + new StringDecoder('utf8').end(tail);
    tail = tail.subarray(tail.length - ETL_OUTPUT_TAIL_BYTES);
    const omitted = this.bytesSeen - ETL_OUTPUT_HEAD_BYTES - ETL_OUTPUT_TAIL_BYTES;
    return `${head}\n[… ${omitted} bytes of output omitted …]\n${tail.toString('utf8')}`;
  }
}

export interface SandboxIdentity {
  user: string;
  uid: number;
  gid: number;
  home: string;
}

/** Thrown when the server runs as root and the sandbox account does not exist. */
export class SandboxUserMissingError extends Error {
  override name = 'SandboxUserMissingError';
}

/**
 * The identity a job runs as: null (the server's own user) unless the server runs as root, where
 * jobs run as `ETL_SANDBOX_USER` (created by the deployment image; refused when missing, never run as root).
 */
export async function sandboxIdentity(): Promise<SandboxIdentity | null> {
  if (process.getuid?.() !== 0) return null;
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid, , home] = line.split(':');
    if (user === ETL_SANDBOX_USER && uid && gid)
      return { user, uid: Number(uid), gid: Number(gid), home: home || '/nonexistent' };
  }
  throw new SandboxUserMissingError(
    `The server runs as root and the sandbox user ${ETL_SANDBOX_USER} does not exist; create it (useradd --system ${ETL_SANDBOX_USER}) so jobs never run as root.`,
  );
}

/** Locale, TLS trust store, proxy and Java: the only server variables a job sees (with PATH and HOME). */
const INHERITED =
  /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|NODE_EXTRA_CA_CERTS|JAVA_HOME|(HTTP|HTTPS|NO|ALL|FTP)_PROXY|(http|https|no|all|ftp)_proxy)$/;

/** A job's environment: connection settings come from its context parameters, never from the server's environment. */
export function jobEnvironment(sandbox: SandboxIdentity | null, serverEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(serverEnv)) if (v !== undefined && INHERITED.test(k)) env[k] = v;
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  const home = sandbox ? sandbox.home : serverEnv.HOME;
  if (home) env.HOME = home;
  return env;
}

/** Talend launcher arguments: `--context=<name>` and one `--context_param key=value` per parameter. */
export function launcherArgs(context: string | undefined, params: Record<string, string>): string[] {
  const args = context ? [`--context=${context}`] : [];
  for (const [k, v] of Object.entries(params)) args.push('--context_param', `${k}=${v}`);
  return args;
}

export interface LaunchOptions {
  launcherPath: string;
  cwd: string;
  args: string[];
  timeoutMs: number;
  sandbox: SandboxIdentity | null;
  output: OutputCapture;
  /** Stops the job (its whole process group) early; the result is then `interrupted`. */
  signal?: AbortSignal;
  /** Told the process group's id once the job started (recorded so a later worker can end a stranded job). */
  onSpawn?: (pid: number) => void;
}

export interface LaunchResult {
  status: LaunchStatus;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
}

/**
 * Runs a launcher script as a child process without a shell (argv passed as is), in a process group
 * of its own so the timeout kills the job and everything it started (SIGTERM, then SIGKILL).
 */
export async function launch(opts: LaunchOptions): Promise<LaunchResult> {
  const mode = (await stat(opts.launcherPath)).mode;
  const executable = opts.sandbox ? (mode & 0o001) !== 0 : (mode & 0o111) !== 0;
  // An unzipped build may have lost its exec bit: the script is then handed to sh, still without a command string.
  const [file, argv] = executable ? [opts.launcherPath, opts.args] : ['/bin/sh', [opts.launcherPath, ...opts.args]];
  return await new Promise<LaunchResult>((resolve) => {
    let child;
    try {
      child = spawn(file, argv, {
        cwd: opts.cwd,
        env: jobEnvironment(opts.sandbox),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(opts.sandbox ? { uid: opts.sandbox.uid, gid: opts.sandbox.gid } : {}),
      });
    } catch (err) {
      resolve({
        status: 'failed',
        exit_code: null,
        signal: null,
        error: `The job could not start: ${(err as Error).message}`,
      });
      return;
    }
    if (child.pid) opts.onSpawn?.(child.pid);
    let ending: LaunchStatus | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const killGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    const stop = (why: LaunchStatus) => {
      if (ending) return;
      ending = why;
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => stop('timed_out'), opts.timeoutMs);
    const onAbort = () => stop('interrupted');
    opts.signal?.addEventListener('abort', onAbort);
    child.stdout.on('data', (c: Buffer) => opts.output.push(c));
    child.stderr.on('data', (c: Buffer) => opts.output.push(c));
    let settled = false;
    const settle = (result: LaunchResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    child.on('error', (err) => {
      // A launcher that cannot be executed (missing, not readable by the sandbox user) never gets a pid.
      if (!child.pid)
        settle({ status: 'failed', exit_code: null, signal: null, error: `The job could not start: ${err.message}` });
    });
    child.on('close', (code, sig) => {
      // Anything the job left running in its group goes with it.
      killGroup('SIGKILL');
      settle({ status: ending ?? (code === 0 ? 'succeeded' : 'failed'), exit_code: code, signal: sig, error: null });
    });
  });
}
