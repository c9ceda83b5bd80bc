import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';

/**
 * Running a program as a child process without a shell, in a process group of its own, with its
 * output captured under a cap and the whole group killed at a timeout. Shared by the ETL launcher
 * (shared/etl/launch.ts) and the code-agent local runner (shared/code-agent/local-runner.ts).
 */

/** Seconds between SIGTERM to the process group and SIGKILL. */
const KILL_GRACE_MS = 5_000;

export type GroupRunStatus = 'succeeded' | 'failed' | 'timed_out' | 'interrupted';

/** Keeps the head and the tail of a process's combined output under a fixed size, counting every byte. */
export class OutputCapture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  bytesSeen = 0;

  constructor(
    readonly headLimit = 768 * 1024,
    readonly tailLimit = 256 * 1024,
  ) {}

  push(chunk: Buffer): void {
    this.bytesSeen += chunk.length;
    if (this.headBytes < this.headLimit) {
      const take = chunk.subarray(0, this.headLimit - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (!chunk.length) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tailBytes - this.tail[0]!.length >= this.tailLimit) this.tailBytes -= this.tail.shift()!.length;
  }

  get truncated(): boolean {
    return this.bytesSeen > this.headLimit + this.tailLimit;
  }

  /** The kept output as text; when bytes were dropped a marker line says how many. */
  text(): string {
    const head = new StringDecoder('utf8').end(Buffer.concat(this.head));
    let tail = Buffer.concat(this.tail);
    if (!this.truncated) return head + new StringDecoder('utf8').end(tail);
    tail = tail.subarray(tail.length - this.tailLimit);
    const omitted = this.bytesSeen - this.headLimit - this.tailLimit;
    return `${head}\n[… ${omitted} bytes of output omitted …]\n${tail.toString('utf8')}`;
  }
}

export interface GroupRunOptions {
  file: string;
  argv: string[];
  cwd: string;
  /** The child's whole environment (nothing of the server's is inherited unless put here). */
  env: Record<string, string>;
  timeoutMs: number;
  output: OutputCapture;
  /** Written to the child's stdin, which is then closed; stdin is /dev/null when absent. */
  stdin?: string;
  uid?: number;
  gid?: number;
  /** Stops the process group early; the result is then `interrupted`. */
  signal?: AbortSignal;
  /** Told the process group's id once the child started. */
  onSpawn?: (pid: number) => void;
  /** Says what could not be started ("The job could not start: …"). */
  what?: string;
}

export interface GroupRunResult {
  status: GroupRunStatus;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
}

/** Ends a process group (negative pid); a group already gone is not an error. */
export function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

/**
 * Runs `file` with `argv` as is (no shell), detached into its own process group, so the timeout
 * or the abort signal kills it and everything it started (SIGTERM, then SIGKILL after a grace).
 */
export async function runInProcessGroup(opts: GroupRunOptions): Promise<GroupRunResult> {
  const what = opts.what ?? 'The process';
  return await new Promise<GroupRunResult>((resolve) => {
    let child;
    try {
      child = spawn(opts.file, opts.argv, {
        cwd: opts.cwd,
        env: opts.env,
        detached: true,
        shell: false,
        stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        ...(opts.uid !== undefined && opts.gid !== undefined ? { uid: opts.uid, gid: opts.gid } : {}),
      });
    } catch (err) {
      resolve({
        status: 'failed',
        exit_code: null,
        signal: null,
        error: `${what} could not start: ${(err as Error).message}`,
      });
      return;
    }
    if (child.pid) opts.onSpawn?.(child.pid);
    if (opts.stdin !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined); // a child that never reads its stdin
      child.stdin.end(opts.stdin);
    }
    let ending: GroupRunStatus | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const kill = (sig: NodeJS.Signals) => {
      if (child.pid) killGroup(child.pid, sig);
    };
    const stop = (why: GroupRunStatus) => {
      if (ending) return;
      ending = why;
      kill('SIGTERM');
      killTimer = setTimeout(() => kill('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => stop('timed_out'), opts.timeoutMs);
    const onAbort = () => stop('interrupted');
    opts.signal?.addEventListener('abort', onAbort);
    child.stdout!.on('data', (c: Buffer) => opts.output.push(c));
    child.stderr!.on('data', (c: Buffer) => opts.output.push(c));
    let settled = false;
    const settle = (result: GroupRunResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    child.on('error', (err) => {
      // A program that cannot be executed (missing, not readable) never gets a pid.
      if (!child.pid)
        settle({ status: 'failed', exit_code: null, signal: null, error: `${what} could not start: ${err.message}` });
    });
    child.on('close', (code, sig) => {
      // Anything the child left running in its group goes with it.
      kill('SIGKILL');
      settle({ status: ending ?? (code === 0 ? 'succeeded' : 'failed'), exit_code: code, signal: sig, error: null });
    });
  });
}
