import { spawn } from 'node:child_process';

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
