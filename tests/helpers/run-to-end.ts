import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { toolsDir } from '../../scripts/lib/paths.js';

/**
 * Runs a command to its end (apt-get and the like, non-interactive), optionally in `cwd`; answers its exit
 * code and the tail of its output.
 */
export function runToEnd(
  command: string,
  args: string[],
  cwd?: string,
): Promise<{ code: number | null; tail: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      ...(cwd ? { cwd } : {}),
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, tail }));
  });
}

/**
 * `apt-get` with its arguments, one at a time across the suite's processes (the test helpers that install
 * or download Debian packages run in parallel files, and a second `apt-get update` meanwhile fails on apt's
 * lock instead of waiting): each run holds an exclusive `flock` on `.tools/apt.lock` for its duration, and
 * apt itself waits up to 10 minutes for a lock held by anything else.
 */
export function aptGet(args: string[], cwd?: string): Promise<{ code: number | null; tail: string }> {
  mkdirSync(toolsDir, { recursive: true });
  const lock = path.join(toolsDir, 'apt.lock');
  return runToEnd('flock', ['-w', '1200', lock, 'apt-get', '-o', 'DPkg::Lock::Timeout=600', ...args], cwd);
}
