/**
 * The benchmarks' CPU window (`bench/lib/cpu-window.ts`): what the machine's CPUs did while a measure ran, read
 * from /proc. This process's work and another process's are told apart, each named, and the machine's steal and
 * idle shares are given.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuProfile, cpuWindow } from '../../bench/lib/cpu-window.js';

/** User and system ticks of a process so far (`/proc/<pid>/stat`). */
function ticksOf(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Spends `ticks` of this process's CPU (10 ms each), however long the machine takes to give them. */
function burn(ticks: number): void {
  const until = ticksOf(process.pid) + ticks;
  let x = 0;
  while (ticksOf(process.pid) < until) for (let i = 0; i < 100_000; i++) x += Math.sqrt(i);
  expect(x).toBeGreaterThan(0);
}

describe.runIf(process.platform === 'linux')('cpuWindow', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });

  it("names this process's threads and collections, another process by name, what ended meanwhile, and the machine's steal and idle", async () => {
    const window = cpuWindow(os.cpus().length)!;
    expect(window).not.toBeNull();
    // A shell spinning while this process lives (never left behind, even by a test that timed out).
    const spin = () => {
      const child = spawn('sh', ['-c', 'while kill -0 $PPID 2>/dev/null; do :; done'], { stdio: 'ignore' });
      children.push(child);
      return child;
    };
    // A process that ends within the window, after 15 ticks: gone from /proc when the window is read.
    const ended = spin();
    try {
      await expect.poll(() => ticksOf(ended.pid!), { timeout: 30_000 }).toBeGreaterThanOrEqual(15);
    } finally {
      ended.kill('SIGKILL');
    }
    await new Promise((resolve) =>
      ended.exitCode !== null || ended.signalCode !== null ? resolve(null) : ended.once('exit', resolve),
    );
    // Another process busy until it has had 20 ticks, still running when the window is read.
    const spinner = spin();
    // A thread of this process other than the main one, busy until it has had 10 ticks, then idle (alive: an
    // ended thread's ticks leave its task folder) until the window is read.
    const worker = new Worker(
      `const { readFileSync } = require('node:fs');
       const ticks = () => { const s = readFileSync('/proc/thread-self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return Number(f[11]) + Number(f[12]); };
       const until = ticks() + 10; let x = 0;
       while (ticks() < until) for (let i = 0; i < 100000; i++) x += Math.sqrt(i);
       const { parentPort } = require('node:worker_threads');
       parentPort.once('message', () => {}); // alive until terminated
       parentPort.postMessage(x);`,
      { eval: true },
    );
    const burnt = new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    try {
      await expect.poll(() => ticksOf(spinner.pid!), { timeout: 30_000 }).toBeGreaterThanOrEqual(20);
      await burnt;
      burn(20);
      // Garbage enough for the young generation to be collected (it holds 16 MB at most by default).
      let kept: number[][] = [];
      for (let i = 0; i < 200_000; i++) {
        kept.push(new Array<number>(64).fill(i));
        if (kept.length > 1000) kept = [];
      }
      expect(kept.length).toBeLessThanOrEqual(1001);
      const reading = await window();
      expect(reading.own).toBeGreaterThanOrEqual(20);
      expect(reading.main).toBeGreaterThanOrEqual(20); // the burn ran on the main thread
      expect(reading.otherThreads).toBeGreaterThanOrEqual(10); // the worker thread's
      expect(new Map(reading.others).get('sh') ?? 0).toBeGreaterThanOrEqual(20);
      // The ended shell's ticks (ticks are rounded per process and per CPU: most of them).
      expect(reading.unaccounted).toBeGreaterThanOrEqual(10);
      expect(reading.machine).toBeGreaterThanOrEqual(reading.own + 20);
      expect(reading.line).toMatch(
        /^\d+\.\d\d s: this process \d+% of a core \(its main thread \d+%, Temporal's \d+%, the others \d+%\), PostgreSQL \d+% \(its busiest process \d+%\), others \d+% \(.*\bsh \d+%/,
      );
      expect(reading.gc.minor).toBeGreaterThanOrEqual(1);
      expect(reading.gc.minorMs).toBeGreaterThan(0);
      expect(reading.line).toMatch(
        new RegExp(
          `, ended meanwhile or the kernel's \\d+%; steal \\d+%, idle \\d+% of the ${os.cpus().length} cores; ` +
            `this process's collector paused it ${reading.gc.minor} times for the young generation \\(\\d+\\.\\d ms in all\\) ` +
            `and ${reading.gc.major} for the whole heap \\(\\d+\\.\\d ms\\)$`,
        ),
      );
    } finally {
      spinner.kill('SIGKILL');
      await worker.terminate();
    }
  });

  it('profiles the work given: its functions are in the profile', async () => {
    function spinForTheProfile(): number {
      let x = 0;
      for (let i = 0; i < 2_000_000; i++) x += Math.sqrt(i);
      return x;
    }
    const profile = (await cpuProfile(async () => {
      for (let i = 0; i < 20; i++) spinForTheProfile();
    })) as { nodes: Array<{ callFrame: { functionName: string } }>; samples: number[] };
    expect(profile.samples.length).toBeGreaterThan(0);
    expect(profile.nodes.map((n) => n.callFrame.functionName)).toContain('spinForTheProfile');
  });
});
