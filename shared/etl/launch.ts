import { readFile, stat } from 'node:fs/promises';
import { OutputCapture as GroupOutputCapture, runInProcessGroup, type GroupRunStatus } from '../process/group-run.js';

/** Bytes of output kept per run: the first `HEAD` and the last `TAIL` (a failing job's error is at its end). */
export const ETL_OUTPUT_HEAD_BYTES = 768 * 1024;
export const ETL_OUTPUT_TAIL_BYTES = 256 * 1024;
/** The account jobs run as when the server runs as root (container deployments). */
export const ETL_SANDBOX_USER = 'platform-etl';

export type LaunchStatus = GroupRunStatus;

/** Keeps the head and the tail of a job's combined output (ETL_OUTPUT_HEAD_BYTES + ETL_OUTPUT_TAIL_BYTES). */
export class OutputCapture extends GroupOutputCapture {
  constructor() {
    super(ETL_OUTPUT_HEAD_BYTES, ETL_OUTPUT_TAIL_BYTES);
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

export type { GroupRunResult as LaunchResult } from '../process/group-run.js';
import type { GroupRunResult as LaunchResult } from '../process/group-run.js';

/**
 * Runs a launcher script as a child process without a shell (argv passed as is), in a process group
 * of its own so the timeout kills the job and everything it started (SIGTERM, then SIGKILL).
 */
export async function launch(opts: LaunchOptions): Promise<LaunchResult> {
  const mode = (await stat(opts.launcherPath)).mode;
  const executable = opts.sandbox ? (mode & 0o001) !== 0 : (mode & 0o111) !== 0;
  // An unzipped build may have lost its exec bit: the script is then handed to sh, still without a command string.
  const [file, argv] = executable ? [opts.launcherPath, opts.args] : ['/bin/sh', [opts.launcherPath, ...opts.args]];
  return await runInProcessGroup({
    file,
    argv,
    cwd: opts.cwd,
    env: jobEnvironment(opts.sandbox),
    timeoutMs: opts.timeoutMs,
    output: opts.output,
    ...(opts.sandbox ? { uid: opts.sandbox.uid, gid: opts.sandbox.gid } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.onSpawn ? { onSpawn: opts.onSpawn } : {}),
    what: 'The job',
  });
}
