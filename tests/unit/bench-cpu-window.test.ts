/**
 * The benchmarks' CPU window (`bench/lib/cpu-window.ts`): what the machine's CPUs did while a measure ran, read
 * from /proc. This process's threads, another process (by name) and a process that ended within the window are told
 * apart, the collections of this process counted, and the machine's steal and idle shares given.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuProfile, cpuWindow, statOf } from '../../bench/lib/cpu-window.js';

const ticksIn = (statFile: string) => statOf(statFile).ticks;
const ticksOf = (pid: number) => ticksIn(`/proc/${pid}/stat`);

/** Spends `ticks` of the main thread's CPU (10 ms each), however long the machine takes to give them. */
function burn(ticks: number): number {
  const until = ticksIn('/proc/thread-self/stat') + ticks;
  let x = 0;
  while (ticksIn('/proc/thread-self/stat') < until) for (let i = 0; i < 100_000; i++) x += Math.sqrt(i);
  return x;
}

describe.runIf(process.platform === 'linux')('cpuWindow', () => {
  const children: ChildProcess[] = [];
  const workers: Worker[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await Promise.all(workers.splice(0).map((w) => w.terminate()));
  });

  /** A shell spinning while this process lives (never left behind, even by a test that timed out). */
  const spin = () => {
    const child = spawn('sh', ['-c', 'while kill -0 $PPID 2>/dev/null; do :; done'], { stdio: 'ignore' });
    children.push(child);
    return child;
  };

  it("names this process's threads and collections, another process by name, what ended meanwhile, and the machine's steal and idle", async () => {
    const window = cpuWindow(os.cpus().length);
    if (!window) throw new Error('cpuWindow answered null on Linux');
    // A process that ends within the window, after 40 ticks: gone from /proc when the window is read.
    const ended = spin();
    await expect.poll(() => ticksOf(ended.pid!), { timeout: 40_000 }).toBeGreaterThanOrEqual(40);
    const exited = new Promise((resolve) => ended.once('exit', resolve));
    ended.kill('SIGKILL');
    await exited;
    // Another process, stopped after 20 ticks: still in /proc when the window is read, spending nothing more.
    const other = spin();
    await expect.poll(() => ticksOf(other.pid!), { timeout: 40_000 }).toBeGreaterThanOrEqual(20);
    other.kill('SIGSTOP');
    // A thread of this process other than the main one, busy until it has had 10 ticks, then idle (alive: an
    // ended thread's ticks leave its task folder) until the window is read.
    const worker = new Worker(
      `const { readFileSync } = require('node:fs');
       const { parentPort } = require('node:worker_threads');
       const ticks = () => { const s = readFileSync('/proc/thread-self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return Number(f[11]) + Number(f[12]); };
       const until = ticks() + 10; let x = 0;
       while (ticks() < until) for (let i = 0; i < 100000; i++) x += Math.sqrt(i);
       parentPort.once('message', () => {}); // alive until terminated
       parentPort.postMessage(x);`,
      { eval: true },
    );
    workers.push(worker);
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the worker ended (${code}) before it had burnt its ticks`)));
    });
    expect(burn(20)).toBeGreaterThan(0);
    // Garbage enough for the young generation to be collected (it holds 16 MB at most by default).
    let kept: number[][] = [];
    for (let i = 0; i < 200_000; i++) {
      kept.push(new Array<number>(64).fill(i));
      if (kept.length > 1000) kept = [];
    }
    const reading = await window();
    expect(reading.main).toBeGreaterThanOrEqual(20); // the burn, on the main thread
    expect(reading.otherThreads).toBeGreaterThanOrEqual(10); // the worker thread's
    expect(reading.own).toBeGreaterThanOrEqual(reading.main);
    expect(new Map(reading.others).get('sh') ?? 0).toBeGreaterThanOrEqual(20);
    // The ended shell's 40 ticks, less the noise of sampled and rounded ticks.
    expect(reading.unaccounted).toBeGreaterThanOrEqual(15);
    expect(reading.gc.minor).toBeGreaterThanOrEqual(1);
    expect(reading.gc.minorMs).toBeGreaterThan(0);
    expect(reading.line).toMatch(
      /^\d+\.\d\d s: this process \d+% of a core \(its main thread \d+%, Temporal's \d+%, the others \d+%\), PostgreSQL \d+% \(its busiest process \d+%\), others \d+% \(/,
    );
    expect(reading.line).toMatch(
      new RegExp(
        `, ended meanwhile or the kernel's \\d+%; steal \\d+%, idle \\d+% of the ${os.cpus().length} cores; ` +
          `this process's collector paused it ${reading.gc.minor} times for the young generation \\(\\d+\\.\\d ms in all\\) ` +
          `and ${reading.gc.major} for the whole heap \\(\\d+\\.\\d ms\\), with ${reading.gc.incremental} incremental marking steps \\(\\d+\\.\\d ms\\)$`,
      ),
    );
  }, 120_000);

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
